"""Which (backbone, attention, refinement) triples build. The shared invariant tests run over
``compatible_combinations()``, which leaves out any triple whose builder raises a ConfigError, so a
builder that wrongly refused a valid triple would shrink those tests instead of failing them. The
rules below pin the accepted triples of today's parts; a part registered later is not constrained
here (the shared tests pick it up)."""

import itertools

import pytest

from awrsr.models import compatible_combinations

BACKBONES = {"sasrec", "bert4rec", "stosa"}
ATTENTIONS = {"dot", "calibrated", "positional", "average", "linear", "exponential", "wasserstein"}
REFINEMENTS = {"none", "simp", "value", "add", "stoc"}
DETERMINISTIC_REFINEMENTS = REFINEMENTS - {"stoc"}  # M_stoc needs stochastic (Wasserstein) attention

EXPECTED = (
    # SASRec: every deterministic attention, the fixed patterns included
    {("sasrec", a, r) for a in ATTENTIONS - {"wasserstein"} for r in DETERMINISTIC_REFINEMENTS}
    # BERT4Rec is bidirectional: the causal-only fixed patterns are refused
    | {("bert4rec", a, r) for a in ("dot", "calibrated", "positional") for r in DETERMINISTIC_REFINEMENTS}
    # STOSA: Wasserstein attention only, and every refinement, M_stoc included
    | {("stosa", "wasserstein", r) for r in REFINEMENTS}
)


def test_the_accepted_triples_of_todays_parts_are_exactly_the_expected_ones():
    known = {t for t in compatible_combinations() if t[0] in BACKBONES and t[1] in ATTENTIONS and t[2] in REFINEMENTS}
    assert not known - EXPECTED, f"accepted but expected to be refused: {sorted(known - EXPECTED)}"
    assert not EXPECTED - known, f"refused but expected to build: {sorted(EXPECTED - known)}"
    assert len(EXPECTED) == 41  # docs/neighbours.md counts them


def test_every_part_of_today_is_still_registered():
    from awrsr.models.registry import MODELS
    from awrsr.nn.attention import ATTENTIONS as attention_registry
    from awrsr.nn.refine import REFINEMENTS as refinement_registry

    registered = set(itertools.product(MODELS.names(), attention_registry.names(), refinement_registry.names()))
    assert set(itertools.product(BACKBONES, ATTENTIONS, REFINEMENTS)) <= registered


def test_a_models_label_names_its_parts():
    from awrsr.models import ModelConfig

    assert ModelConfig().label == "sasrec, dot attention, no refinement"
    assert ModelConfig(refine="value", refine_blocks=[1]).label == "sasrec, dot attention, refined by value in block(s) 1"
    assert (ModelConfig(name="bert4rec", refine="value", refine_value_form="literal").label
            == "bert4rec, dot attention, refined by value (literal)")  # the causal form's title was the same
    assert ModelConfig(refine="simp", refine_value_form="literal").label.endswith("refined by simp")  # inert there
    assert ModelConfig(name="stosa", attention="wasserstein", refine="stoc").label == "stosa, wasserstein attention, refined by stoc"
    assert ModelConfig(attention="calibrated", ac_lite=True).label.endswith("calibrated attention (lite), no refinement")


def test_a_builders_bug_is_raised_not_taken_for_an_incompatible_triple(monkeypatch):
    # only a ConfigError means "these parts do not go together"; anything else is a bug that the
    # shared tests must show, not a triple quietly dropped from them
    from awrsr.errors import ConfigError
    from awrsr.models.registry import MODELS

    def refuses(cfg, num_items):
        raise ConfigError("declared incompatible")

    def broken(cfg, num_items):
        raise TypeError("a bug in the builder")

    monkeypatch.setitem(MODELS._entries, "zz-refuses", refuses)
    assert not [t for t in compatible_combinations() if t[0] == "zz-refuses"]
    monkeypatch.setitem(MODELS._entries, "zz-broken", broken)
    with pytest.raises(TypeError, match="a bug in the builder"):
        compatible_combinations()

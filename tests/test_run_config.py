"""run_config's helpers: which fields of a stored run differ from a wanted config, which options
nothing reads, and when errors show their traceback."""

import pytest
import torch

from awrsr.models import ModelConfig
from awrsr.run_config import changed_fields, config_differences, debugging, inert_options
from awrsr.train import TrainConfig


def test_changed_fields_compare_each_field_with_the_stored_one():
    stored = {"model": {"max_len": 20, "hidden_size": 64, "refine_blocks": [0, 1]}, "train": {"lr": 0.01, "max_epochs": 5}}
    wanted = {"model": ModelConfig(max_len=30, refine="simp", refine_blocks=[0, 1]), "train": TrainConfig(lr=0.01, max_epochs=9)}
    # refine is not stored: the stored run had the default ("none"); refine_blocks are equal
    assert changed_fields(stored, wanted) == {
        "model.max_len": (20, 30), "model.refine": ("none", "simp"), "train.max_epochs": (5, 9)}
    assert changed_fields(stored, wanted, ignore={"train": {"max_epochs"}, "model": {"refine"}}) == {"model.max_len": (20, 30)}
    assert config_differences(stored, {"train": wanted["train"]}) == ["train.max_epochs (5 -> 9)"]


def test_a_field_the_stored_config_lacks_counts_as_its_default():
    """A run written before the field existed ran with its default: only another value differs."""
    stored = {"model": {"max_len": 50}}  # no mask_prob, no norm_eps
    assert changed_fields(stored, {"model": ModelConfig()}) == {}
    assert changed_fields(stored, {"model": ModelConfig(mask_prob=0.5)}) == {"model.mask_prob": (0.2, 0.5)}
    assert changed_fields({}, {"train": TrainConfig()}) == {}  # a whole section missing


def test_an_option_is_inert_exactly_where_its_reader_is_absent():
    # M_value's form is read by M_value alone, not by every refinement
    assert inert_options(ModelConfig(refine="simp", refine_value_form="literal"), TrainConfig()) == {
        "model.refine_value_form": "model.refine 'value'"}
    assert inert_options(ModelConfig(refine="simp", refine_stoc_distance="plain"), TrainConfig()) == {
        "model.refine_stoc_distance": "model.refine 'stoc'"}
    # every loss but the full softmax draws negatives
    for loss in ("bce", "sampled_softmax"):
        assert inert_options(ModelConfig(), TrainConfig(loss=loss, num_negatives=5)) == {}, loss
    assert inert_options(ModelConfig(), TrainConfig(num_negatives=5)) == {"train.num_negatives": "a train.loss other than 'ce'"}


def test_each_options_reader_is_the_part_that_reads_it():
    """STOSA trained with the full softmax never reads pvn_weight (the stosa loss does); only the
    calibrated attention reads adversarial_alpha, and only BERT4Rec the mask probability."""
    stosa = ModelConfig(name="stosa", attention="wasserstein")
    assert inert_options(stosa, TrainConfig(loss="ce", pvn_weight=0.5)) == {"train.pvn_weight": "train.loss 'stosa'"}
    assert inert_options(stosa, TrainConfig(loss="stosa", pvn_weight=0.5)) == {}
    assert inert_options(ModelConfig(), TrainConfig(adversarial_alpha=0.5)) == {
        "train.adversarial_alpha": "model.attention 'calibrated'"}
    assert inert_options(ModelConfig(attention="calibrated"), TrainConfig(adversarial_alpha=0.5)) == {}
    assert inert_options(ModelConfig(name="bert4rec", mask_prob=0.5), TrainConfig()) == {}
    assert inert_options(ModelConfig(mask_prob=0.5), TrainConfig()) == {"model.mask_prob": "model.name 'bert4rec'"}
    assert inert_options(ModelConfig(refine="simp", refine_init_std=0.0), TrainConfig()) == {}
    assert inert_options(ModelConfig(refine_init_std=0.0), TrainConfig()) == {
        "model.refine_init_std": "a refinement built on n x n matrices"}


def test_pattern_positions_and_fused_attention_are_inert_where_they_change_nothing():
    """Window positions change Linear's weights only (Average ignores positions, Exponential sees
    only their differences); the fused kernel is a path of plain dot-product attention alone."""
    for pattern in ("average", "exponential"):
        assert inert_options(ModelConfig(attention=pattern, pattern_positions="window"), TrainConfig()) == {
            "model.pattern_positions": "model.attention 'linear'"}, pattern
    assert inert_options(ModelConfig(attention="linear", pattern_positions="window"), TrainConfig()) == {}
    unfused = {"fused_attention": False}
    for attention in ("dot", "calibrated"):
        lite = {"ac_lite": True} if attention == "calibrated" else {}
        assert inert_options(ModelConfig(attention=attention, **lite, **unfused), TrainConfig()) == {}, attention
    for model in (ModelConfig(refine="simp", **unfused), ModelConfig(attention="calibrated", **unfused),
                  ModelConfig(attention="positional", **unfused),
                  ModelConfig(name="stosa", attention="wasserstein", **unfused)):
        assert set(inert_options(model, TrainConfig())) == {"model.fused_attention"}, model


@pytest.mark.parametrize("environment, expected", [
    ({}, False), ({"AWRSR_DEBUG": "0"}, False), ({"AWRSR_DEBUG": ""}, False), ({"JSONARGPARSE_DEBUG": "0"}, False),
    ({"AWRSR_DEBUG": "1"}, True), ({"JSONARGPARSE_DEBUG": "true"}, True),
])
def test_awrsr_debug_0_means_off(monkeypatch, environment, expected):
    for name in ("AWRSR_DEBUG", "JSONARGPARSE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert debugging() is expected


@pytest.mark.parametrize("declares", [True, False])
def test_a_new_attention_that_takes_a_fused_kernel_reads_fused_attention_by_declaring_it(monkeypatch, declares):
    """fused_attention's reader was named by string (dot, calibrated with ac_lite): a mechanism
    registered later that honours it was told it has no effect, and a grid over it refused."""
    from awrsr.nn.attention import ATTENTIONS
    from awrsr.nn.attention.dot import DotProductAttention

    class Kernelled(DotProductAttention):
        reads_fused_attention = declares

    monkeypatch.setitem(ATTENTIONS._entries, "kernelled", lambda cfg, block, refinement: Kernelled.from_config(cfg, refinement))
    inert = inert_options(ModelConfig(attention="kernelled", fused_attention=False), TrainConfig())
    assert ("model.fused_attention" in inert) is not declares
    before = torch.random.get_rng_state()
    inert_options(ModelConfig(attention="kernelled", fused_attention=False), TrainConfig())
    inert_options(ModelConfig(refine="simp", refine_init_std=0.5), TrainConfig())  # builds a refinement
    assert torch.equal(torch.random.get_rng_state(), before), "judging the options drew from the global generator"


# The options every model reads, whatever its parts (a field listed here must be; a new one must
# be placed: here, in run_config._READ_ONLY_BY, or refused by its config where nothing reads it).
READ_BY_EVERY_MODEL = {
    "model": {"name", "max_len", "hidden_size", "num_heads", "num_blocks", "inner_size", "dropout", "attn_dropout",
              "attention", "refine", "norm_eps", "position_embedding"},
    "train": {"loss", "batch_size", "group_by_length", "lr", "weight_decay", "max_epochs", "max_time", "patience",
              "monitor", "val_every", "seed", "accelerator", "precision", "progress_bar", "num_threads", "flush_denormal"},
}
# Set with parts that do not read them, these are configuration errors (ModelConfig refuses them).
REFUSED_WHERE_UNREAD = {"model.positional_rank": 4, "model.ac_lite": True}


def test_every_option_is_read_by_every_model_or_said_to_be_inert_where_it_is_not():
    """A part's option left out of run_config._READ_ONLY_BY (a contributor's easy slip) is read by
    no note and no check: `compare --key` over it trained the same model twice ("+0.00%")."""
    from dataclasses import fields, replace

    from awrsr.errors import ConfigError
    from awrsr.run_config import part_specific_options

    specific = part_specific_options()
    for section, config in (("model", ModelConfig), ("train", TrainConfig)):
        for field in fields(config):
            key = f"{section}.{field.name}"
            placed = [field.name in READ_BY_EVERY_MODEL[section], key in specific, key in REFUSED_WHERE_UNREAD]
            assert sum(placed) == 1, (
                f"{key} must be exactly one of: read by every model (READ_BY_EVERY_MODEL here), read by some parts "
                f"(run_config._READ_ONLY_BY, so that it is noted as inert elsewhere), or refused where unread; it is "
                f"{'none' if not any(placed) else 'several'}"
            )
    for key, value in REFUSED_WHERE_UNREAD.items():
        with pytest.raises(ConfigError, match=key):
            replace(ModelConfig(), **{key.split(".")[1]: value})


@pytest.mark.parametrize("config", [ModelConfig, TrainConfig], ids=lambda c: c.__name__)
def test_every_option_has_a_help_line(config):
    """`awrsr fit --help` describes an option by its line in the config's docstring (Args:)."""
    from dataclasses import fields

    described = {line.split(":")[0].strip() for line in config.__doc__.split("Args:")[1].splitlines() if ":" in line}
    missing = [field.name for field in fields(config) if field.name not in described]
    assert not missing, f"{config.__name__}'s docstring (Args:) has no line for {missing}: --help shows them undescribed"

"""Every shipped config parses and builds its model; every shipped variants file names known options."""

import random
from pathlib import Path

import pytest

from awrsr.errors import ConfigError
from awrsr.experiments.compare import COMPARE_TO, load_variants_file
from awrsr.experiments.runs import known_keys, option_args
from awrsr.models import build_model
from awrsr.run_config import load_fit_config

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
FIT_CONFIGS = sorted(p for p in CONFIGS.glob("*/*.yaml") if p.parent.name not in ("search", "compare"))


@pytest.mark.parametrize("path", FIT_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fit_config_parses_and_builds(path):
    import yaml

    cfg = load_fit_config(["--config", str(path)])
    written = yaml.safe_load(path.read_text())
    def check(obj, written_section: dict, where: str) -> None:  # what the file says is what runs
        for key, value in written_section.items():
            got = getattr(obj, key)
            if isinstance(value, dict):
                check(got, value, f"{where}.{key}")
            else:
                assert (list(got) if isinstance(got, tuple) else got) == value, f"{where}.{key}"

    for section in ("data", "model", "train", "evaluation"):
        check(cfg[section], written.get(section) or {}, section)
    model = build_model(cfg["model"], num_items=30)
    assert type(model).__name__.lower() == cfg["model"].name
    assert model.max_len == cfg["model"].max_len and len(model.blocks) == cfg["model"].num_blocks


@pytest.mark.parametrize("path", FIT_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fit_config_data_path_names_a_shipped_benchmark_file(path):
    """A config's ``../shared/data/...`` path (relative to the repository root, where the README
    runs every command) names a file of the benchmark folder, so a typo cannot hide until a run."""
    import yaml

    from conftest import SHARED_DATA

    data_path = (yaml.safe_load(path.read_text()).get("data") or {}).get("path")
    if data_path is None:
        return  # the built-in synthetic data
    prefix = "../shared/data/"
    assert data_path.startswith(prefix), data_path
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} not available")
    assert (SHARED_DATA / data_path[len(prefix):]).is_file(), data_path


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("compare/*.yaml")), ids=lambda p: p.name)
def test_variants_file_names_known_options_that_build(path):
    keys = known_keys() | {COMPARE_TO}
    for name, options in load_variants_file(path).items():
        assert set(options or {}) <= keys, name
        options = {k: v for k, v in (options or {}).items() if k != COMPARE_TO}
        cfg = load_fit_config(["--config", str(CONFIGS / "sasrec" / "beauty.yaml"), *option_args(options or {})])
        build_model(cfg["model"], num_items=30)


def test_the_neighbours_files_differ_only_in_bert4rec_mask_probability_of_their_dataset():
    """One variants file per dataset, equal but for the Cloze mask probability, which must be the
    one of that dataset's BERT4Rec config (a variant that left it out would get the default)."""
    import yaml

    files = {ds: load_variants_file(CONFIGS / "compare" / f"neighbours-{ds}.yaml") for ds in ("beauty", "ml-1m")}
    without = {ds: {name: {k: v for k, v in o.items() if k != "model.mask_prob"} for name, o in f.items()} for ds, f in files.items()}
    assert without["beauty"] == without["ml-1m"]
    for ds, variants in files.items():
        mask_prob = yaml.safe_load((CONFIGS / "bert4rec" / f"{ds}.yaml").read_text())["model"]["mask_prob"]
        for name, options in variants.items():
            if options.get("model.name") == "bert4rec":
                assert options.get("model.mask_prob") == mask_prob, (ds, name)
            else:
                assert "model.mask_prob" not in options, (ds, name)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("search/*.yaml")), ids=lambda p: p.name)
def test_search_space_names_known_options_and_every_trial_builds(path):
    from awrsr.experiments.tune import grid, load_search_space

    space = load_search_space(path)
    assert set(space) <= known_keys()
    trials = grid(space)
    built = 0
    for params in random.Random(0).sample(trials, min(len(trials), 16)):  # the paper's grid has 2,304
        try:  # the paper's grid holds impossible trials (64 dimensions in 3 heads); tune skips them
            cfg = load_fit_config(["--config", str(CONFIGS / "sasrec" / "ml-1m.yaml"), *option_args(params)])
            build_model(cfg["model"], num_items=30)
            built += 1
        except ConfigError as err:
            assert "divisible by model.num_heads" in str(err), params
    assert built > 0

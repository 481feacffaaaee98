"""A YAML mapping may not repeat a key: YAML itself would keep the last one silently."""

import re

import pytest

from awrsr.data import DataConfig
from awrsr.errors import ConfigError
from awrsr.experiments.compare import load_variants_file
from awrsr.experiments.tune import load_search_space
from awrsr.models import ModelConfig
from awrsr.run_config import load_fit_config
from awrsr.strict_yaml import check_config_files, check_unique_keys, empty_sections_as_mappings, repeated_key
from conftest import run_cli


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: 1\nb: {c: 1, c: 2}\n", "line 2: 'c' is given twice in one mapping (first on line 2)"),
        ("- {a: 1}\n- a: 1\n  b: 2\n  a: 3\n", "line 4: 'a' is given twice"),  # inside a list
        ("true: a\nTrue: b\n", "'True' is given twice"),  # both load as the key True
        ("1: a\n'1': b\n", None),  # an int and a string: two keys
        ("a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n", None),  # YAML merges both
        ("a: &x [1, *x]\n", None),  # an alias of itself: walked once, no endless loop
        ("a: [1, 2\n", None),  # not YAML: left to the loader's own message
        ("", None),
    ],
)
def test_repeated_keys_are_found_as_yaml_loads_them(text, expected):
    found = repeated_key(text)
    assert found is None if expected is None else expected in found


def test_the_error_names_the_file_and_both_lines(tmp_path):
    with pytest.raises(ConfigError, match=r"x.yaml, line 3: 'lr' is given twice in one mapping \(first on line 2\)"):
        check_unique_keys("train:\n  lr: 0.1\n  lr: 0.2\n", "x.yaml")


def test_only_regular_files_are_read_before_the_parser(tmp_path):
    # a pipe (--config <(...)) can be read once only, so the parser must be the one to read it;
    # a directory or a missing file is the parser's error to report
    check_config_files(["fit", "--config", str(tmp_path), "--config", str(tmp_path / "missing.yaml")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("train: {lr: 1, lr: 2}\n")
    with pytest.raises(ConfigError, match="bad.yaml, line 1"):
        check_config_files(["fit", f"--config={bad}"])


def test_inline_configs_and_section_files_are_checked_too(tmp_path, capsys):
    code, _, err = run_cli(capsys, "fit", "--config", "train: {lr: 0.5, lr: 0.25}", "--print_config")
    assert code != 0 and "'lr' is given twice" in err, err
    section = tmp_path / "train.yaml"
    section.write_text("lr: 0.1\nbatch_size: 8\nlr: 0.3\n")
    code, _, err = run_cli(capsys, "fit", "--train", str(section), "--print_config")
    assert code != 0 and "line 3: 'lr' is given twice" in err, err
    section.write_text("lr: 0.1\nbatch_size: 8\n")  # and one without repeats still parses
    code, out, err = run_cli(capsys, "fit", "--train", str(section), "--print_config")
    assert code == 0 and "batch_size: 8" in out, err


@pytest.mark.parametrize(
    "text, expected",
    [
        ("model: 5\n", r"c.yaml, line 1: model must be a mapping of its settings \(e.g. model: \{key: value\}\), got '5'"),
        ("train: {lr: 0.1}\nmodel: [1, 2]\n", "c.yaml, line 2: model must be a mapping of its settings.*got a list"),
        ("data:\n  synthetic: 3\n", "c.yaml, line 2: data.synthetic must be a mapping of its settings, got '3'"),
        # an unknown section is refused even when empty (jsonargparse would drop it silently)
        ("modle: {}\n", "c.yaml, line 1: unknown section 'modle'; did you mean model?"),
        # another command's file, said as such: a search space, a comparison's variants
        ("train.lr: [0.1, 0.01]\n", r"c.yaml, line 1: unknown section 'train.lr'; it looks like a search space .*"
                                    r"awrsr tune BASE_CONFIG SPACE; a fit config has"),
        # (not "did you mean train?"), and a setting written flat is shown nested
        ("model.dropout: 0.2\n", r"c.yaml, line 1: unknown section 'model.dropout'; a fit config nests its settings "
                                r"\(model: \{dropout: ...\}\); a fit config has"),
        ("wide: {model.hidden_size: 128}\n", r"c.yaml, line 1: unknown section 'wide'; it looks like a variants file .*"
                                                       r"awrsr compare BASE_CONFIG --variants_file FILE; a fit config has"),
        # and an unknown key in a section, or in data.synthetic (the parser would name no file)
        ("train:\n  lr: 0.1\n  batch_sise: 8\n", r"c.yaml, line 3: unknown key 'train.batch_sise'; did you mean train.batch_size\?"),
        ("data: {synthetic: {num_user: 3}}\n", r"c.yaml, line 1: unknown key 'data.synthetic.num_user'; did you mean data.synthetic.num_users\?"),
        ("evaluation:\n  zzz: 1\n", "c.yaml, line 2: unknown key 'evaluation.zzz'; awrsr fit --help lists the settings"),
        ("", "c.yaml: the config is empty"),
        ("# every line commented out\n", "c.yaml: the config is empty"),
        ("- model\n- train\n", r"c.yaml: expected a mapping of sections \(data, model, .*\), got a list"),
    ],
)
def test_a_fit_config_of_the_wrong_shape_names_the_file_and_line(tmp_path, capsys, text, expected):
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        load_fit_config(["--config", str(config)])
    code, _, err = run_cli(capsys, "fit", "--config", str(config))  # the same message, no traceback
    assert code == 2 and re.search(expected, err), err


def test_a_data_file_given_as_the_config_is_named_in_a_line_not_echoed(tmp_path, capsys):
    data = tmp_path / "events.csv"
    data.write_text("user,item,ts\n" + "".join(f"u{i},m{i},{i}\n" for i in range(5000)))  # 82 kB
    code, _, err = run_cli(capsys, "fit", "--config", str(data))
    assert code == 2 and "events.csv: expected a mapping of sections" in err, err
    assert "u4,m4,4 u5,m5,... (81,682 characters)" in err and "a data file is named in the config's data.path (fit: --data.path FILE; tune and compare: --set [data.path=FILE])" in err, err
    assert len(err) < 600, err


def test_a_section_with_every_key_commented_out_means_its_defaults(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    # jsonargparse failed with a TypeError on a null section, and read a file of null sections
    # ("data:" alone) as a string
    config.write_text("model:\n#  max_len: 20\ntrain:\n  lr: 0.01\nevaluation:\n")
    resolved = load_fit_config(["--config", str(config)])
    assert resolved["model"] == ModelConfig() and resolved["train"].lr == 0.01
    config.write_text("data:\n  synthetic:\n")
    assert load_fit_config(["--config", str(config)])["data"] == DataConfig()
    config.write_text("data:\n")
    code, out, _ = run_cli(capsys, "stats", "--config", str(config))
    assert code == 0 and "1,000 users" in out
    # other commands' configs are left as they are
    assert empty_sections_as_mappings({"model": None, "k": 5}) == {"model": None, "k": 5}


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"# mod\xe8le\nmodel: {max_len: 8}\n", r"c.yaml:1: not valid UTF-8 text \(invalid continuation byte, byte 0xe8\); save the file as UTF-8"),
        (b"train:\n  lr: 0.1\n# \xff\n", "c.yaml:3: not valid UTF-8"),
        ("model: {}\n".encode("utf-16"), "c.yaml: is UTF-16 text; save it as UTF-8"),
    ],
)
def test_a_config_in_another_encoding_names_the_file_and_line(tmp_path, capsys, raw, expected):
    config = tmp_path / "c.yaml"
    config.write_bytes(raw)
    code, _, err = run_cli(capsys, "fit", "--config", str(config))
    assert code == 2 and re.search(expected, err), err
    code, _, err = run_cli(capsys, "stats", "--config", str(config))
    assert code == 2 and re.search(expected, err), err
    with pytest.raises(ConfigError, match=expected):  # a search space, a variants file: the same reader
        load_search_space(config)
    with pytest.raises(ConfigError, match=expected):
        load_variants_file(config)


def test_a_search_space_and_a_variants_file_swapped_are_named_as_what_they_are(tmp_path):
    space, variants = tmp_path / "space.yaml", tmp_path / "variants.yaml"
    space.write_text("train.lr: [0.001, 0.0005]\nmodel.dropout: [0.2]\n")
    variants.write_text("none:\nwide: {model.hidden_size: 128}\n")  # the base with no options of its own
    with pytest.raises(ConfigError, match=r"space.yaml: a search space .* it goes to awrsr tune BASE_CONFIG SPACE"):
        load_variants_file(space)
    with pytest.raises(ConfigError, match=r"variants.yaml: a variants file .* awrsr compare BASE_CONFIG --variants_file FILE"):
        load_search_space(variants)
    assert load_search_space(space) == {"train.lr": [0.001, 0.0005], "model.dropout": [0.2]}  # each in its own place
    assert load_variants_file(variants) == {"none": None, "wide": {"model.hidden_size": 128}}


def test_a_utf8_byte_order_mark_is_no_part_of_the_config(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_bytes(b"\xef\xbb\xbftrain: {lr: 0.01}\n")
    assert load_fit_config(["--config", str(config)])["train"].lr == 0.01


def test_a_trailing_config_without_its_file_is_the_parsers_one_line_error(capsys):
    check_config_files(["fit", "--config"])  # nothing to read: the parser says what is missing
    code, _, err = run_cli(capsys, "fit", "--config")
    assert code == 2 and err.startswith("awrsr: error: argument --config: expected one argument"), err


def test_an_unclosed_bracket_is_named_where_it_opened_not_at_the_end_of_the_file():
    with pytest.raises(ConfigError, match=r"^x.yaml, line 2, column 8: not valid YAML: expected ',' or '\]', but got '<stream end>'$"):
        check_unique_keys("model: {max_len: 8}\ntrain: [1, 2\n\n\n", "x.yaml")


def test_a_section_may_name_a_file_that_holds_its_settings(tmp_path):
    (tmp_path / "model.yaml").write_text("max_len: 7\nhidden_size: 16\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"model: {tmp_path / 'model.yaml'}\ntrain: {{lr: 0.01}}\n")
    resolved = load_fit_config(["--config", str(config)])
    assert (resolved["model"].max_len, resolved["model"].hidden_size, resolved["train"].lr) == (7, 16, 0.01)


def test_only_a_fit_config_is_held_to_the_fit_sections(tmp_path):
    other = tmp_path / "tune.yaml"  # another command's own config: its keys are its parser's to judge
    other.write_text("trials: 3\nspace: space.yaml\n")
    check_config_files(["tune", "--config", str(other)])
    with pytest.raises(ConfigError, match="tune.yaml, line 1: unknown section 'trials'"):
        check_config_files(["fit", "--config", str(other)], fit=True)

"""A YAML mapping may not repeat a key: YAML itself would keep the last one silently."""

import pytest

from awrsr.errors import ConfigError
from awrsr.strict_yaml import check_config_files, check_unique_keys, repeated_key
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

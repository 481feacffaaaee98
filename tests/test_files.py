"""File helpers: atomic writes, CSV text, the lines named in an encoding error, output paths."""

import pytest

from awrsr.errors import ConfigError
from awrsr.files import csv_text, output_directory, read_text, write_atomic, write_text_atomic


def test_a_write_that_fails_midway_leaves_the_old_file_whole_and_no_temporary(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text("old\n")

    def half_then_crash(temporary):
        temporary.write_text("ha")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, half_then_crash)
    assert path.read_text() == "old\n"  # a reader never sees half a file
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # nor a temporary beside it
    write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_the_writer_is_given_a_temporary_beside_the_file_not_the_file(tmp_path):
    path = tmp_path / "table.csv"
    seen = []
    write_atomic(path, lambda temporary: (seen.append(temporary), temporary.write_text("x")))
    assert seen[0] != path and seen[0].parent == path.parent and path.read_text() == "x"


def test_csv_text_ends_lines_with_newline_and_quotes_commas():
    assert csv_text([["name", "value"], [1, "a,b"], ["x", 2.5]]) == 'name,value\n1,"a,b"\nx,2.5\n'


@pytest.mark.parametrize("raw, line", [
    (b"a: 1\r\nb: 2\r\n# \xff\r\n", 3),  # CRLF is one line break, not two
    (b"a: 1\rb: \xff\r", 2),  # a lone CR (old Mac) ends a line too
    (b"\xff", 1),
])
def test_a_byte_that_is_not_utf8_is_named_by_its_line(tmp_path, raw, line):
    path = tmp_path / "c.yaml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=rf"c.yaml:{line}: not valid UTF-8 text"):
        read_text(path)


def test_an_output_dir_under_a_file_names_that_file(tmp_path):
    blocker = tmp_path / "events.csv"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match=rf"^output_dir {blocker / 'run' / 'a'} lies inside the file {blocker}; needs it$"):
        output_directory(blocker / "run" / "a", needs="needs it")
    with pytest.raises(ConfigError, match=rf"^output_dir {blocker} is a file; needs it$"):
        output_directory(blocker, needs="needs it")
    assert output_directory(tmp_path / "new" / "run") == tmp_path / "new" / "run"


def test_a_path_given_as_bytes_is_a_path_and_one_of_another_type_is_named(tmp_path):
    """fit(output_dir=b"runs/x") failed with a TypeError from inside pathlib."""
    import os

    from awrsr.files import user_path

    assert user_path(os.fsencode(tmp_path / "run")) == tmp_path / "run"
    assert output_directory(os.fsencode(tmp_path / "run")) == tmp_path / "run"
    for wrong in (5, ["runs"]):
        with pytest.raises(ConfigError, match=f"^a path is text or a pathlib.Path, got {type(wrong).__name__} "):
            user_path(wrong)

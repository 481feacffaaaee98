"""Files: writing results so that a concurrent reader sees the old file or the new one, never half;
and reading the paths users give (`~` expanded once)."""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from pathlib import Path
from typing import Any, Callable, Sequence

from awrsr.errors import AwrsrError, ConfigError


def relative_to_cwd(path: str | Path) -> str | None:
    """``relative to the current directory CWD`` for a relative ``path``, None for an absolute
    one: a missing file's message says where a relative path was looked for (the current
    directory, not the config file's)."""
    return None if user_path(path).is_absolute() else f"relative to the current directory {Path.cwd()}"


def user_path(path: str | Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded, as a shell would. Every path a user
    gives goes through here once, so that awrsr and the libraries it hands paths to (Lightning
    expands ``~`` itself) write to one place; a ``~`` that cannot be expanded is a ConfigError,
    and so is a value that is no path (bytes are decoded as the file system encodes names)."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    try:
        return Path(path).expanduser()
    except RuntimeError as err:  # "Could not determine home directory"
        raise ConfigError(f"{path}: cannot expand '~' ({err})") from None
    except TypeError:  # Path(5) fails deep inside pathlib
        raise ConfigError(f"a path is text or a pathlib.Path, got {type(path).__name__} {path!r:.60}") from None


def read_text(path: str | Path, error: type[AwrsrError] = ConfigError) -> str:
    """The UTF-8 text of ``path`` without a leading byte-order mark. Text in another encoding is an
    ``error`` naming the file and the line of the first byte that is not UTF-8 (a config saved as
    Latin-1 or UTF-16 by an editor would otherwise fail with a traceback that names neither)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise error(f"{path}: is UTF-16 text; save it as UTF-8")
    raw = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        # CRLF, CR and LF each end one line
        line = sum(1 for _ in _LINE_BREAK.finditer(raw, 0, err.start)) + 1
        raise error(
            f"{path}:{line}: not valid UTF-8 text ({err.reason}, byte 0x{raw[err.start]:02x}); save the file as UTF-8"
        ) from None


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def starts_with(path: str | Path, prefix: bytes) -> bool:
    """Whether the file at ``path`` begins with ``prefix`` (False if it cannot be read)."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(len(prefix)) == prefix
    except OSError:
        return False


def output_directory(path: str | Path, option: str = "output_dir", needs: str = "a directory") -> Path:
    """``path`` as a directory to write into (``user_path``); a ConfigError naming ``option`` if
    it, or the nearest existing path above it, is a file (mkdir would fail later with "Not a
    directory" or "File exists", naming neither). An empty path (null in YAML, "" on the command
    line) is refused too: it would write into the current directory."""
    if path is None or not str(path).strip():
        raise ConfigError(f"{option} is empty; name the directory to write into (the current one is '.')")
    path = user_path(path)
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                where = "is a file" if existing == path else f"lies inside the file {existing}"
                raise ConfigError(f"{option} {path} {where}; {needs}")
            break
    return path


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path`` (atomic on
    POSIX and Windows): other processes polling for results, and a crash mid-write, can never
    leave a truncated file."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """``write_text_atomic`` for bytes."""
    write_atomic(path, lambda temporary: temporary.write_bytes(data))


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> None:
    """``write(temporary)`` writes the file beside ``path``, which is then renamed over ``path``;
    for writers that take a path (polars' ``write_parquet``, say), so no copy is held in memory.
    The file gets the usual permissions (the umask's), so that other accounts can read an artifact
    as they can read any other file the user writes."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def csv_text(rows: Sequence[Sequence[Any]]) -> str:
    """Rows as CSV text (header first), for ``write_text_atomic``."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()

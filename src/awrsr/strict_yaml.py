"""YAML that may not repeat a key in one mapping.

YAML parsers keep the last of two equal keys silently, so a second ``lr:`` further down a config
would override the one a reader sees. Config files, search spaces and variants files are checked
here before they are read, with the file and both lines named; jsonargparse's YAML loader is
wrapped too, so that inline configs (``--config 'train: {...}'``, ``--train FILE``) are checked.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import yaml

from awrsr.errors import ConfigError
from awrsr.files import user_path

_MERGE_TAG = "tag:yaml.org,2002:merge"  # `<<: *defaults` may repeat: YAML merges each of them


class RepeatedKeyError(yaml.YAMLError):
    """A mapping repeats a key (raised inside jsonargparse's loader, which reports YAML errors)."""


def repeated_key(text: str) -> str | None:
    """``"line 7: 'lr' is given twice in one mapping (first on line 5)"`` for the first repeated
    key of ``text``, else None (also when ``text`` is not YAML: its loader says so in its own words)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)  # nodes, with their line numbers
    except yaml.YAMLError:
        return None
    constructor = yaml.constructor.SafeConstructor()
    stack, seen = ([root] if root is not None else []), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias repeats a node already walked (and may refer to itself)
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key, value in node.value:
                stack.append(value)
                if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
                    continue
                try:  # compared as loaded: `1` and `'1'` are two keys, `true` and `True` one
                    loaded = constructor.construct_object(key)
                    hash(loaded)
                except (yaml.YAMLError, TypeError):
                    continue
                line = key.start_mark.line + 1
                if loaded in first_line:
                    return f"line {line}: {key.value!r} is given twice in one mapping (first on line {first_line[loaded]})"
                first_line[loaded] = line
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def check_unique_keys(text: str, source: str) -> None:
    """A ConfigError naming ``source`` and both lines if ``text`` repeats a key in one mapping,
    or naming ``source`` and the place if ``text`` is not YAML at all (the loader's own message
    calls the file "<unicode string>")."""
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        if err.context_mark and mark and mark.index >= len(text.rstrip()):  # e.g. a "[" never closed: where it opened
            mark = err.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{source}{where}: not valid YAML: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML: {err}") from None
    problem = repeated_key(text)
    if problem:
        raise ConfigError(f"{source}, {problem}; YAML would silently keep the last")


def check_config_files(args: Sequence[str]) -> None:
    """``check_unique_keys`` for each ``--config FILE`` (or ``--config=FILE``) among ``args`` that
    is a regular file. Anything else (a pipe such as ``<(...)``, which can be read only once, or
    inline YAML) is left to the wrapped loader, whose message names the line but not the file."""
    for i, arg in enumerate(args):
        path = args[i + 1] if arg == "--config" and i + 1 < len(args) else arg[9:] if arg.startswith("--config=") else None
        if path is None:
            continue
        try:
            file = user_path(path)
            text = file.read_text() if file.is_file() else None
        except (OSError, UnicodeDecodeError, ConfigError):
            continue  # the parser names what it cannot read
        if text is not None:
            check_unique_keys(text, str(path))


def install_strict_yaml_loader() -> None:
    """Wrap jsonargparse's YAML loader (once per process) so that every config it reads, inline
    or from a file, is refused if it repeats a key."""
    from jsonargparse import get_loader, set_loader

    load: Callable[[str], Any] = get_loader("yaml")
    if getattr(load, "awrsr_strict", False):
        return

    def strict_load(text):  # one parameter: jsonargparse passes extra ones to loaders that name them
        problem = repeated_key(text) if isinstance(text, str) else None
        if problem:
            raise RepeatedKeyError(f"{problem}; YAML would silently keep the last")
        return load(text)

    strict_load.awrsr_strict = True
    set_loader("yaml", strict_load, (yaml.YAMLError,))


__all__ = ["RepeatedKeyError", "check_config_files", "check_unique_keys", "install_strict_yaml_loader", "repeated_key"]

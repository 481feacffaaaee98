"""YAML that may not repeat a key in one mapping.

YAML parsers keep the last of two equal keys silently, so a second ``lr:`` further down a config
would override the one a reader sees. Config files, search spaces and variants files are checked
here before they are read, with the file and both lines named; jsonargparse's YAML loader is
wrapped too, so that inline configs (``--config 'train: {...}'``, ``--train FILE``) are checked.
A fit config's shape (a mapping of known sections, each a mapping) is checked here too, so that a
mistake there names the file and line rather than failing inside jsonargparse.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from awrsr.errors import ConfigError
from awrsr.files import read_text, user_path

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


def config_files(args: Sequence[str], base: Path | None = None) -> list[tuple[str, str]]:
    """``(path as given, text)`` of each ``--config FILE`` (or ``--config=FILE``) among ``args``
    that is a regular file (a relative path taken from ``base`` if given, else from the current
    directory); text that is not UTF-8 is a ConfigError naming the file. Anything else (a pipe
    such as ``<(...)``, which can be read only once, or inline YAML) is left to the wrapped
    loader, whose message names the line but not the file."""
    found = []
    for i, arg in enumerate(args):
        path = args[i + 1] if arg == "--config" and i + 1 < len(args) else arg[9:] if arg.startswith("--config=") else None
        if path is None:
            continue
        try:
            file = user_path(path) if base is None else base / user_path(path)
            if file.is_file():
                found.append((path, read_text(file)))
        except OSError:
            continue  # the parser names what it cannot read
    return found


def where_set(args: Sequence[str], key: str, value: str, base: Path | None = None) -> str | None:
    """``"FILE, line N"`` of the last ``--config`` file among ``args`` (relative paths taken from
    ``base``) that sets the dotted ``key`` (``train.lr``) to ``value`` (as YAML wrote it); None
    if none does. jsonargparse checks each config file as it reads it, and names a value of the
    wrong type by its key alone, as if it had been typed."""
    found = None
    for path, text in config_files(args, base):
        line = _key_line(text, key.split("."), value)
        found = f"{path}, line {line}" if line is not None else found
    return found


def _key_line(text: str, path: list[str], value: str) -> int | None:
    """The 1-based line of the key at ``path`` in the YAML ``text`` if it holds the scalar
    ``value`` as written (None otherwise)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for name in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        entry = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)
        if entry is None:
            return None
        line, node = entry[0].start_mark.line + 1, entry[1]
    return line if isinstance(node, yaml.ScalarNode) and value in (node.value, _as_read(node)) else None


def _as_read(node: yaml.ScalarNode) -> str | None:
    """A plain scalar as YAML reads it, printed: an unquoted ``no`` is ``False`` to the parser (a
    quoted one stays text)."""
    if node.style is not None:
        return None
    try:
        return str(yaml.safe_load(node.value))
    except yaml.YAMLError:
        return None


def check_config_files(args: Sequence[str], fit: bool = False) -> None:
    """``check_unique_keys`` for each config file among ``args`` (see ``config_files``), and
    with ``fit`` (the config of ``awrsr fit``, or of a run that tune or compare trains),
    ``check_fit_config_shape``."""
    for path, text in config_files(args):
        check_unique_keys(text, str(path))
        if fit:
            check_fit_config_shape(text, str(path))


# The sections of a fit config that hold a dataclass's settings, and its other keys. A section
# whose keys are all commented out loads as null; it means the section's defaults, as an empty
# mapping does (jsonargparse would fail on it with a TypeError naming neither file nor section).
FIT_SECTIONS = ("data", "model", "train", "evaluation")
FIT_KEYS = (*FIT_SECTIONS, "output_dir", "resume", "overwrite")


def empty_sections_as_mappings(loaded: Any) -> Any:
    """``loaded`` (a parsed config) with its null fit sections, and a null ``data.synthetic``, as
    empty mappings, when it is a fit config (only fit keys); anything else unchanged."""
    if not isinstance(loaded, dict) or not loaded or not set(loaded) <= set(FIT_KEYS):
        return loaded
    data = loaded.get("data")
    null_synthetic = isinstance(data, dict) and "synthetic" in data and data["synthetic"] is None
    if not null_synthetic and not any(loaded.get(key, {}) is None for key in FIT_SECTIONS):
        return loaded  # the same object: nothing to fill
    filled = {key: {} if key in FIT_SECTIONS and value is None else value for key, value in loaded.items()}
    if null_synthetic:
        filled["data"] = {**data, "synthetic": {}}
    return filled


def check_fit_config_shape(text: str, source: str) -> None:
    """A ConfigError naming ``source`` (and the line) unless ``text`` is a mapping of fit keys
    whose sections are mappings (or null, or a file name, which jsonargparse reads as the section)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)  # valid YAML: check_unique_keys ran first
    known = ", ".join(FIT_KEYS)
    if root is None:
        raise ConfigError(f"{source}: the config is empty; a fit config maps some of {known} to their settings")
    if not isinstance(root, yaml.MappingNode):
        # a data file given where its config goes reads as one string over many lines
        data_file = isinstance(root, yaml.ScalarNode) and root.end_mark.line > root.start_mark.line
        hint = ("; a data file is named in the config's data.path (fit: --data.path FILE; tune and compare: "
                "--set [data.path=FILE])") if data_file else ""
        raise ConfigError(f"{source}: expected a mapping of sections ({known}), got {_kind(root)}{hint}")
    for key, value in root.value:
        line, name = key.start_mark.line + 1, key.value
        if name not in FIT_KEYS:
            close = difflib.get_close_matches(str(name), FIT_KEYS, n=1)
            hint = _misplaced_hint(str(name), text) or (f"did you mean {close[0]}? " if close else "")
            raise ConfigError(f"{source}, line {line}: unknown section {name!r}; {hint}a fit config has {known}")
        if name in FIT_SECTIONS and not _null(value) and not (isinstance(value, yaml.ScalarNode) and value.tag.endswith(":str")):
            if not isinstance(value, yaml.MappingNode):
                raise ConfigError(
                    f"{source}, line {line}: {name} must be a mapping of its settings (e.g. {name}: {{key: value}}), "
                    f"got {_kind(value)}"
                )
            for sub_key, sub_value in value.value:
                _check_known_key(name, sub_key, source)
                if sub_key.value == "synthetic" and not _null(sub_value) and not isinstance(sub_value, yaml.MappingNode):
                    raise ConfigError(
                        f"{source}, line {sub_key.start_mark.line + 1}: data.synthetic must be a mapping of its "
                        f"settings, got {_kind(sub_value)}"
                    )
                if sub_key.value == "synthetic" and isinstance(sub_value, yaml.MappingNode):
                    for synthetic_key, _ in sub_value.value:
                        _check_known_key("data.synthetic", synthetic_key, source)


def _section_keys(section: str) -> list[str]:
    """The settings a fit config's ``section`` (``data``, ..., ``data.synthetic``) takes."""
    from dataclasses import fields

    from awrsr.data.config import DataConfig, SyntheticConfig
    from awrsr.eval.config import EvalConfig
    from awrsr.models.config import ModelConfig
    from awrsr.train.config import TrainConfig

    kinds = {"data": DataConfig, "model": ModelConfig, "train": TrainConfig, "evaluation": EvalConfig,
             "data.synthetic": SyntheticConfig}
    return [f.name for f in fields(kinds[section])]


def _check_known_key(section: str, key: yaml.Node, source: str) -> None:
    """A ConfigError naming ``source`` and the line for a key ``section`` does not take (the
    parser would name the key but neither file nor line)."""
    known = _section_keys(section)
    if key.value in known:
        return
    close = difflib.get_close_matches(str(key.value), known, n=1)
    hint = f"did you mean {section}.{close[0]}?" if close else "awrsr fit --help lists the settings"
    raise ConfigError(f"{source}, line {key.start_mark.line + 1}: unknown key '{section}.{key.value}'; {hint}")


# The three kinds of YAML file the commands take, by their shapes (``file_kind``), and where each goes.
FIT_CONFIG = "a fit config"
SEARCH_SPACE = "a search space (dotted keys, lists of values)"
VARIANTS_FILE = "a variants file (variant names, each with its options)"
WHERE_IT_GOES = {
    FIT_CONFIG: "give the base config first: awrsr tune BASE_CONFIG SPACE, awrsr compare BASE_CONFIG --variants_file FILE",
    SEARCH_SPACE: "it goes to awrsr tune BASE_CONFIG SPACE",
    VARIANTS_FILE: "it goes to awrsr compare BASE_CONFIG --variants_file FILE",
}


def file_kind(loaded: Any) -> str | None:
    """Which of the commands' files ``loaded`` (a parsed YAML file) is by its shape: FIT_CONFIG
    (fit's sections only), SEARCH_SPACE (dotted keys, lists of values) or VARIANTS_FILE (names,
    each with dotted options, or none for a base); None for none of them."""
    if not isinstance(loaded, dict) or not loaded:
        return None
    keys, values = [str(key) for key in loaded], list(loaded.values())
    if set(keys) <= set(FIT_KEYS):
        return FIT_CONFIG
    if all("." in key and isinstance(value, list) for key, value in zip(keys, values)):
        return SEARCH_SPACE
    if any(isinstance(value, dict) and value for value in values) and all(
        value is None or (isinstance(value, dict) and all("." in str(option) for option in value)) for value in values
    ):
        return VARIANTS_FILE
    return None


def refuse_other_kind(loaded: Any, path: object, expected: str) -> None:
    """A ConfigError naming what ``path`` is and where it goes, when its contents ``loaded`` are
    another kind of file than ``expected`` (two files swapped on a command line)."""
    kind = file_kind(loaded)
    if kind is not None and kind != expected:
        raise ConfigError(f"{path}: {kind}, not {expected}; {WHERE_IT_GOES[kind]}")


def _misplaced_hint(name: str, text: str) -> str:
    """Where an unknown section's setting belongs: the whole file (``text``) is another command's
    (a search space, a variants file), or the setting is a fit setting written flat
    (``train.lr: 0.1``); "" otherwise."""
    kind = file_kind(yaml.safe_load(text))
    if kind in (SEARCH_SPACE, VARIANTS_FILE):
        return f"it looks like {kind}: {WHERE_IT_GOES[kind]}; "
    section, _, key = name.partition(".")
    if key and section in FIT_SECTIONS:
        return f"a fit config nests its settings ({section}: {{{key}: ...}}); "
    return ""


def _null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def _kind(node: yaml.Node, limit: int = 60) -> str:
    """What ``node`` is, for a message: a scalar quoted, cut to about ``limit`` characters (a whole
    file read as one string would otherwise fill the screen)."""
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    text = repr(node.value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(node.value)):,} characters)"


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
        if isinstance(text, str) and ":" in text:
            # A fit config with null sections, read here: jsonargparse's loader would keep one
            # whose sections are all null ("data:") as the string itself.
            try:
                raw = yaml.safe_load(text)
            except yaml.YAMLError:
                raw = None
            filled = empty_sections_as_mappings(raw)
            if filled is not raw:
                return filled
        return load(text)

    strict_load.awrsr_strict = True
    set_loader("yaml", strict_load, (yaml.YAMLError,))


__all__ = [
    "FIT_KEYS", "FIT_SECTIONS", "RepeatedKeyError", "check_config_files", "check_fit_config_shape", "check_unique_keys",
    "config_files", "empty_sections_as_mappings", "install_strict_yaml_loader", "repeated_key",
]

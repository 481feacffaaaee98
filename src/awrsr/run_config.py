"""Parse a run's YAML config plus overrides exactly as ``awrsr fit`` does, for scripts.

>>> cfg = load_fit_config(["--train.max_epochs", "2"])
>>> cfg["train"].max_epochs
2
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from argparse import ArgumentError
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

from jsonargparse import ArgumentParser

from awrsr.errors import ConfigError
from awrsr.strict_yaml import FIT_KEYS, check_config_files, install_strict_yaml_loader, where_set

# How jsonargparse and argparse name an option they do not know.
_UNKNOWN_OPTION = re.compile(r"(?:Group '([^']+)' )?does not accept option '([^']+)'|unrecognized arguments: --?(\S+)")


def did_you_mean(message: str, parser: ArgumentParser) -> str:
    """`` (did you mean --model.refine?)`` when ``message`` rejects an option close to one of
    ``parser``'s, else ``""``."""
    match = _UNKNOWN_OPTION.search(message)
    if not match:
        return ""
    group, option, argument = match.groups()
    name = f"{group}.{option}" if group else option or argument
    known = [option.lstrip("-") for action in parser._actions for option in action.option_strings if option.startswith("--")]
    close = difflib.get_close_matches(name.lstrip("-"), known, n=1, cutoff=0.75)
    return f" (did you mean --{close[0]}?)" if close else ""


_MISSING = re.compile(r"the following arguments are required: (.+)")


def name_missing_arguments(message: str, parser: ArgumentParser) -> tuple[str, ArgumentParser]:
    """jsonargparse's "the following arguments are required: tune.space" as the user types it
    ("missing SPACE: the command is awrsr tune BASE_CONFIG SPACE [options]"), and the
    subcommand's parser, whose --help lists them. Other messages come back unchanged, with
    ``parser``."""
    match = _MISSING.search(message)
    subcommands = getattr(getattr(parser, "_subcommands_action", None), "_name_parser_map", {})
    if not match:
        return message, parser
    names = [name.strip() for name in match.group(1).split(",")]
    command = names[0].split(".", 1)[0]
    sub = subcommands.get(command)
    if sub is None or not all(name.startswith(f"{command}.") for name in names):
        return message, parser
    actions = {action.dest: action for action in sub._actions}
    shown = []
    for name in (name.removeprefix(f"{command}.") for name in names):
        action = actions.get(name)
        shown.append(action.option_strings[0] if action is not None and action.option_strings else name.upper())
    positionals = [action.dest.upper() for action in sub._actions if not action.option_strings]
    return f"missing {' and '.join(shown)}: the command is awrsr {command} {' '.join(positionals)} [options]", sub


_PARSER_KEY = re.compile(r'Parser key "([^"]+)":')
_GIVEN = re.compile(r"(?:Given|Got) value: (.*)")
_EXPECTED = re.compile(r"Subtypes: \[(.*)\]|Expected an? (typing\.Literal\[.*\]|<class '\w+'>|[\w.\[\], ]+?)\. Got value")
# List options whose values may instead come from a file, given to another option: the file's path
# given to the list option itself gets a pointer to the right one.
_FILE_OPTIONS = {"variants": "--variants_file"}
_TYPE_WORDS = {"list": "a list", "int": "an integer", "float": "a number", "str": "a string", "bool": "true or false",
               "NoneType": "null", "dict": "a mapping"}


def one_line_type_error(message: str) -> str:
    """jsonargparse's several-line account of a value of the wrong type ("Parser key ...:
    Does not validate against any of the Union subtypes / Subtypes: [...] / Given value: ...") as
    one line naming the option, the kinds it takes and the value given; any other message with
    its lines joined."""
    key, given = _PARSER_KEY.search(message), _GIVEN.findall(message)
    expected = _EXPECTED.search(message)
    if not (key and given and expected):
        return " ".join(line.strip() for line in message.splitlines() if line.strip())
    found = expected.group(1) or expected.group(2)
    if found.startswith("typing.Literal["):
        words = [f"one of {found.removeprefix('typing.Literal[').removesuffix(']')}"]
    else:
        names = re.findall(r"<class '(\w+)'>|\b(?:typing\.)?(List|list)\[", found)
        words = list(dict.fromkeys(_TYPE_WORDS.get(a or b.lower(), a or b) for a, b in names)) or [found]
    hints = ["a list is written [a,b]"] if "a list" in words else []
    file_option = _FILE_OPTIONS.get(key.group(1).rsplit(".", 1)[-1])
    if file_option and given[-1].strip().lower().endswith((".yaml", ".yml")):
        hints.append(f"a YAML file of them goes to {file_option}")
    if "a string" in words and "true or false" not in words and given[-1].strip() in ("True", "False"):
        hints.append("YAML reads an unquoted no, yes, off or on as false or true: quote the value")
    hint = f" ({'; '.join(hints)})" if hints else ""
    return f"--{key.group(1)} expects {' or '.join(words)}{hint}, got {given[-1].strip()!r}"


_EXPECTS = re.compile(r"--([\w.]+) expects .*, got '(.*)'$")


def located_in_config(message: str, args: Sequence[str], base: Path | None = None) -> str:
    """``one_line_type_error``'s "--train.lr expects ..., got 'fast'" as "FILE, line N: train.lr
    expects ..." where a ``--config`` file among ``args`` (relative paths taken from ``base``)
    sets train.lr to that value."""
    match = _EXPECTS.match(message)
    where = where_set(args, match.group(1), match.group(2), base) if match else None
    return f"{where}: {message[2:]}" if where else message


def debugging() -> bool:
    """Whether errors should show their traceback (``AWRSR_DEBUG=1``, or jsonargparse's own
    ``JSONARGPARSE_DEBUG``) rather than awrsr's one line."""
    return any(os.environ.get(name, "") not in ("", "0") for name in ("AWRSR_DEBUG", "JSONARGPARSE_DEBUG"))


class SuggestingParser(ArgumentParser):
    """jsonargparse's parser, whose errors about an unknown option name the closest known one."""

    def parse_args(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        # for error(): where a value came from (jsonargparse reads a config file from its own directory)
        self._given_args, self._given_cwd = list(sys.argv[1:] if args is None else args), Path.cwd()
        return super().parse_args(args, *rest, **kwargs)

    def error(self, message: str, ex: Exception | None = None):
        parser = getattr(ex, "subcommand_parser", None) or self
        if "(did you mean" not in message:  # a subcommand's error passes through its parent too
            message += did_you_mean(message, parser)
        if not self.exit_on_error or debugging():  # debugging: jsonargparse prints its usage (and with JSONARGPARSE_DEBUG raises)
            return super().error(message, ex)
        # One line, like every other awrsr error: jsonargparse would print the whole usage
        # (dozens of lines for fit) above it, which buries the message.
        message = located_in_config(one_line_type_error(message), getattr(self, "_given_args", ()), getattr(self, "_given_cwd", None))
        message, parser = name_missing_arguments(message, parser)
        prog = " ".join(["awrsr", *parser.prog.replace(" [options]", "").split()[1:]])  # not "__main__.py"
        sys.stderr.write(f"awrsr: error: {message}\n(for the accepted options: {prog} --help)\n")
        sys.exit(2)


def load_fit_config(args: Sequence[str]) -> dict[str, Any]:
    """The keyword arguments of ``awrsr.workflows.fit`` (data, model, train, evaluation,
    output_dir, resume, overwrite) from command-line style ``args`` such as ``["--config", "x.yaml", "--train.seed", "1"]``."""
    parser, namespace = _parse_fit_args(args)
    init = parser.instantiate_classes(namespace)
    return {key: init[key] for key in FIT_KEYS}


def check_fit_args(args: Sequence[str], where: str) -> None:
    """A ConfigError (naming the closest known key) if ``args`` hold a key or value that ``awrsr
    fit`` would refuse, its message starting with ``where``; nothing is built, so options whose
    combination is impossible pass."""
    _parse_fit_args(args, where)


def _parse_fit_args(args: Sequence[str], where: str | None = None) -> tuple[ArgumentParser, Any]:
    from awrsr.cli import fit

    check_config_files(args, fit=True)
    install_strict_yaml_loader()
    parser = SuggestingParser(exit_on_error=False, allow_abbrev=False)  # a misspelt key is an error, not a prefix
    parser.add_argument("--config", action="config")
    parser.add_function_arguments(fit, as_positional=False)
    try:
        return parser, parser.parse_args(list(args))
    except ArgumentError as err:
        raise ConfigError(f"{where or ' '.join(args)}: {located_in_config(one_line_type_error(str(err)), args)}") from None


def changed_fields(
    stored: Mapping[str, Any], wanted: Mapping[str, Any], ignore: Mapping[str, set[str]] | None = None,
) -> dict[str, tuple[Any, Any]]:
    """``{"section.key": (stored, wanted)}`` for each field of the config dataclasses in ``wanted``
    (``{"model": ModelConfig(...), ...}``) that differs from the ``stored`` config.yaml mapping,
    except those in ``ignore``. A field the stored config lacks (added to awrsr since that run)
    counts as its default."""
    changed = {}
    for section, part in wanted.items():
        before = stored.get(section) or {}
        defaults = asdict(type(part)())
        for key, value in asdict(part).items():
            if key in (ignore or {}).get(section, ()):
                continue
            reference = before[key] if key in before else defaults.get(key)
            if _plain(reference) != _plain(value):
                changed[f"{section}.{key}"] = (reference, value)
    return changed


def config_differences(
    stored: Mapping[str, Any], wanted: Mapping[str, Any], ignore: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """``changed_fields`` as ``"section.key (stored -> wanted)"`` lines for messages."""
    return [f"{key} ({before!r} -> {after!r})" for key, (before, after) in changed_fields(stored, wanted, ignore).items()]


def _plain(value: Any) -> Any:
    """Compare YAML-loaded and in-memory values alike (tuples load back as lists)."""
    return yaml.safe_load(yaml.safe_dump(value))


def _built_aside(build: Callable[[], Any]) -> Any | None:
    """The part ``build()`` makes, with the global generator left as it was (building draws
    initial weights); None if it does not build (not judged inert then: building the model says
    what is wrong)."""
    import torch

    try:
        with torch.random.fork_rng(devices=[]):
            return build()
    except (ConfigError, ValueError, TypeError):
        return None


def reads_matrix_options(model: Any) -> bool:
    """Whether ``model``'s refinement is built on the shared n x n matrices (``MatrixRefinement``),
    the only parts that read refine_per_head, refine_scale and refine_init_std; asked of the part
    itself, so that a refinement registered later is judged by what it is."""
    if model.refine == "none":
        return False
    from awrsr.nn.refine import REFINEMENTS
    from awrsr.nn.refine.matrices import MatrixRefinement

    part = _built_aside(lambda: REFINEMENTS.get(model.refine)(model, 0))
    return part is None or isinstance(part, MatrixRefinement)


def reads_fused_attention(model: Any) -> bool:
    """Whether ``model``'s attention reads model.fused_attention: only with no refinement, and only
    a part that declares ``reads_fused_attention`` (plain dot-product attention, AC-TSR's lite
    variant); asked of the part itself, so that a mechanism registered later is judged by what it is."""
    if model.refine != "none":
        return False
    from awrsr.nn.attention import ATTENTIONS
    from awrsr.nn.refine import REFINEMENTS

    part = _built_aside(lambda: ATTENTIONS.get(model.attention)(model, 0, REFINEMENTS.get("none")(model, 0)))
    return part is None or bool(getattr(part, "reads_fused_attention", False))


# Options that only some parts read: (dotted key, when it is read). Set away from its default
# where nothing reads it, an option changes nothing, which a comparison of it would hide.
_READ_ONLY_BY: tuple[tuple[str, str, Any], ...] = (
    ("model.mask_prob", "model.name 'bert4rec'", lambda model, train: model.name == "bert4rec"),
    ("model.refine_value_form", "model.refine 'value'", lambda model, train: model.refine == "value"),
    ("model.refine_stoc_distance", "model.refine 'stoc'", lambda model, train: model.refine == "stoc"),
    ("model.refine_blocks", "a model.refine other than 'none'", lambda model, train: model.refine != "none"),
    ("model.refine_input", "a model.refine other than 'none'", lambda model, train: model.refine != "none"),
    *((f"model.{key}", "a refinement built on n x n matrices",
       lambda model, train: reads_matrix_options(model)) for key in ("refine_per_head", "refine_scale", "refine_init_std")),
    # average ignores positions and exponential only sees their differences: the same weights either way
    ("model.pattern_positions", "model.attention 'linear'", lambda model, train: model.attention == "linear"),
    # a speed switch of dot-product attention (AC-TSR's lite variant serves with it) when nothing refines it
    ("model.fused_attention", "an attention that can take a fused kernel (dot; calibrated with model.ac_lite) and "
     "model.refine 'none'", lambda model, train: reads_fused_attention(model)),
    ("train.pvn_weight", "train.loss 'stosa'", lambda model, train: train.loss == "stosa"),
    ("train.num_negatives", "a train.loss other than 'ce'", lambda model, train: train.loss != "ce"),
    ("train.adversarial_alpha", "model.attention 'calibrated'", lambda model, train: model.attention == "calibrated"),
)


def inert_options(model: Any, train: Any) -> dict[str, str]:
    """``{dotted key: what reads it}`` for the options of ``model`` (ModelConfig) and ``train``
    (TrainConfig) set away from their defaults that the chosen parts never read.

    >>> from awrsr.models import ModelConfig
    >>> from awrsr.train import TrainConfig
    >>> inert_options(ModelConfig(mask_prob=0.5), TrainConfig())
    {'model.mask_prob': "model.name 'bert4rec'"}
    """
    parts = {"model": model, "train": train}
    inert = {}
    for key, reader in unread_options(model, train).items():
        section, name = key.split(".")
        part = parts[section]
        if _plain(getattr(part, name)) != _plain(getattr(type(part)(), name)):
            inert[key] = reader
    return inert


def unread_options(model: Any, train: Any) -> dict[str, str]:
    """``{dotted key: what reads it}`` for the options that only some parts read and that the
    parts of ``model`` and ``train`` never read, whatever their values."""
    return {key: reader for key, reader, is_read in _READ_ONLY_BY if not is_read(model, train)}


def part_specific_options() -> set[str]:
    """The options that only some parts read (``unread_options`` may name them)."""
    return {key for key, _, _ in _READ_ONLY_BY}

"""Type checks for the configuration dataclasses, for configs built in Python.

jsonargparse checks every value's type on the command line and in YAML files; a dataclass built
in Python (``ModelConfig(refine_per_head="no")``) is checked by nobody, so a wrong type would be
misread silently (the string "no" is true) or fail deep inside torch (``max_len=20.0``).
``check_field_types`` checks each field against its annotation and names the field as a config
file spells it. numpy scalars (a grid built with numpy, a value from a data frame's row) become
the Python values they hold, and integers given for float fields become floats; nothing else is
converted.
"""

from __future__ import annotations

import math
import numbers
import types
import typing
from dataclasses import fields
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import numpy as np
from rich.console import Console

from awrsr.errors import ConfigError, FieldValueError


def _describe(hint: Any) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _describe(a) for a in args)
    if origin is list:
        return f"a list of {_describe(args[0]).removeprefix('an ').removeprefix('a ')}s" if args else "a list"
    return {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}.get(hint, getattr(hint, "__name__", str(hint)))


class _Mismatch(Exception):
    pass


def _converted(value: Any, hint: Any) -> Any:
    """``value`` as the annotation ``hint`` allows it (numpy integers as int, integers as float
    where a float is wanted), or ``_Mismatch``. Annotations this module does not know pass."""
    if isinstance(value, np.generic):  # np.float64, np.str_, np.bool_: the config is written as YAML
        value = value.item()
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is typing.Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _converted(value, arg)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is Literal:
        if isinstance(value, str) and value in args:
            return value
        raise _Mismatch
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        return [_converted(item, args[0]) for item in value] if args else list(value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if hint is int:
        if is_whole_number(value):
            return int(value)
        raise _Mismatch
    if hint is float:
        # NaN and infinity pass every "x < 0" check and then fail deep inside torch, or as a
        # "diverged" that blames the learning rate; no setting of awrsr means them.
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
            return float(value) if isinstance(value, numbers.Integral) else value
        raise _Mismatch
    if hint is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    return value  # a nested config or another type: its own checks apply


def check_field_types(config: Any, section: str) -> None:
    """A FieldValueError naming ``section.field`` if a field of the dataclass ``config`` holds a value
    its annotation does not allow; numpy scalars (and integers for floats) are converted in place."""
    hints = get_type_hints(type(config))
    for field in fields(config):
        value = getattr(config, field.name)
        hint = hints.get(field.name, Any)
        try:
            converted = _converted(value, hint)
        except _Mismatch:
            shown = value.item() if isinstance(value, np.generic) else value  # -inf, not np.float64(-inf)
            raise FieldValueError(f"{section}.{field.name}", f"must be {_describe(hint)}, got {shown!r}") from None
        if converted is not value:
            setattr(config, field.name, converted)


def is_whole_number(value: object) -> bool:
    """An integer, numpy's included, but not a boolean: True is not 1."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def checked_console(console: object, where: str) -> Console:
    """``console`` (None: a new rich Console on the terminal), or a ConfigError: ``console=False``
    would print all the same, and ``console=True`` fail on an attribute deep inside."""
    if console is None:
        return Console()
    if not isinstance(console, Console):
        raise ConfigError(f"{where}: console must be a rich Console (Console(quiet=True) prints nothing), "
                          f"got {type(console).__name__} {console!r:.40}")
    return console


def check_flag(value: object, name: str) -> None:
    """A ConfigError unless ``value`` is a boolean, numpy's included: the string "no" is true."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be true or false, got {value!r:.60}")

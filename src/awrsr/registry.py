"""A small explicit registry of named parts (attention mechanisms, refinements, losses, models)."""

from __future__ import annotations

import difflib
from typing import Callable, Generic, TypeVar

from awrsr.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps a config name to a class or builder.

    >>> reg = Registry[type]("widget")
    >>> @reg.register("plain")
    ... class Plain: ...
    >>> reg.get("plain") is Plain
    True
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}  # name -> the plugin that registered it ("dist version")

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            from awrsr.plugins import loading_plugin

            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            origin = loading_plugin()
            if origin is not None:
                self._origins[name] = origin
            return obj

        return add

    def get(self, name: str) -> T:
        try:
            return self._entries[name] if name in self._entries else self._with_plugins()[name]
        except KeyError:
            raise self.unknown(name) from None

    def unknown(self, name: object, where: str = "") -> UnknownNameError:
        """The error for a name no entry has: the known names, and the closest of them, or else
        that a part of another package needs that package installed (a plugin)."""
        known = self.names()
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "a part of another package needs that package installed (a plugin)"
        return UnknownNameError(f"{where}unknown {self.kind} {name!r}; known: {', '.join(known)}; {hint}")

    def names(self) -> list[str]:
        return sorted(self._with_plugins())

    def origin(self, name: str) -> str | None:
        """The plugin that registered ``name`` ("distribution version"), or None for awrsr's own part."""
        return self._origins.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._entries or name in self._with_plugins()

    def _with_plugins(self) -> dict[str, T]:
        """The entries, once the installed plugins have registered theirs: asked only for a name
        awrsr does not ship, or for every name (awrsr.plugins)."""
        from awrsr.plugins import load_plugins

        load_plugins()
        return self._entries

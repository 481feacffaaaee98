"""A small explicit registry of named parts (attention mechanisms, refinements, losses, models)."""

from __future__ import annotations

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

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return add

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._entries))}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

"""User-facing errors.

Everything a user can get wrong (a malformed file, an unknown item id, an impossible config value,
an incomplete artifact) raises an ``AwrsrError`` subclass whose message names the file, line or
field. The CLI prints the message and exits non-zero instead of showing a traceback.
"""

import re


class AwrsrError(Exception):
    """Base class of errors caused by user input rather than by a bug."""


class DataError(AwrsrError):
    """A data file or frame cannot be read or is unusable."""


class ConfigError(AwrsrError, ValueError):
    """A configuration value is unknown, impossible, or mixes incompatible parts."""


class FieldValueError(ConfigError):
    """A config field whose own value is impossible, whatever the other fields say
    (``model.dropout must be in [0, 1), got 1.5``). ``field`` names it as a config file does, so
    callers (tune's check of a search space) tell it from a combination of parts that do not fit."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem

    def __reduce__(self):  # rebuilt from both arguments, not from the message alone
        return type(self), (self.field, self.problem)


class UnknownNameError(ConfigError):
    """A name no registry knows (a model, attention, refinement or loss): wrong whatever the
    other options are, unlike a combination of parts that do not fit."""


class ArtifactError(AwrsrError):
    """A saved model directory is incomplete or does not fit the model it claims to hold."""


class UnknownItemError(AwrsrError, KeyError):
    """Item ids that are not in the model's vocabulary."""

    def __init__(self, unknown: list, hint: str = "", where: str = "") -> None:
        self.unknown = list(unknown)
        shown = ", ".join(repr(x) for x in self.unknown[:10])
        more = f" (and {len(self.unknown) - 10} more)" if len(self.unknown) > 10 else ""
        super().__init__(f"{where}unknown item id(s): {shown}{more}{hint}")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class TrainingDiverged(AwrsrError):
    """Training produced non-finite values (usually a learning rate too high for the model)."""


class PluginError(AwrsrError):
    """An installed plugin (entry-point group ``awrsr.parts``) that cannot be loaded."""


def out_of_memory_detail(err: BaseException) -> str | None:
    """What ran out, for an allocation that failed (numpy's MemoryError, torch's CPU allocator
    or CUDA's out-of-memory error); None for any other error."""
    if isinstance(err, MemoryError):
        return str(err) or "an allocation failed"
    text = str(err)
    if type(err).__name__ == "OutOfMemoryError" or "can't allocate memory" in text or "not enough memory" in text:
        size = re.search(r"tried to allocate (\d+) bytes", text)
        if size:  # torch's CPU allocator: the size, without its C++ source location
            return f"tried to allocate {int(size.group(1)) / 2**30:,.1f} GiB"
        cuda = re.search(r"Tried to allocate ([\d.]+ \w+)\. (GPU \d+) has a total capacity of ([\d.]+ \w+) of which ([\d.]+ \w+) is free", text)
        if cuda:  # CUDA's caching allocator: keep the sizes, drop its paragraph of allocator advice
            wanted, device, total, free = cuda.groups()
            return f"tried to allocate {wanted} on {device}, which has {free} free of {total}"
        return text.strip().splitlines()[0][:300] if text.strip() else "an allocation failed"
    return None

"""What ``fit`` changes in the process for its own sake, put back when it ends: a training run in
a notebook must not leave the caller's later torch and Lightning code behaving differently."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import torch

# Set by Lightning's seed_everything and deterministic mode; read by later trainers and cuBLAS.
ENVIRONMENT = ("PL_GLOBAL_SEED", "PL_SEED_WORKERS", "CUBLAS_WORKSPACE_CONFIG")
LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning")  # quieted by trainer.quiet_lightning


# Elements per thread of torch's CPU pool for the probe below: torch splits an elementwise op into
# chunks of at least 32,768 elements, at most one per thread, so that every thread gets one.
PROBE_PER_THREAD = 1 << 15
SUBNORMALS_FLUSHED, SUBNORMALS_KEPT, SUBNORMALS_MIXED = "flushed", "kept", "flushed on some threads only"


def _flushed_elements(threads: int) -> torch.Tensor:
    """The smallest subnormal added to itself in one chunk per thread (``threads`` of them; 1: the
    calling thread alone): True where it came out 0, as it does on a thread that flushes. Under
    OpenMP's static schedule (the pip wheels') chunk i is thread i's, the calling thread's first."""
    size = threads * PROBE_PER_THREAD if threads > 1 else 64  # 64: below a chunk, so the calling thread's
    smallest = torch.ones(size, dtype=torch.int32).view(torch.float32)  # 1.4e-45, written as bits
    return (smallest + smallest).view(torch.int32) == 0


def flushed_share(pool: bool = False) -> float:
    """The share of torch's CPU threads (``pool``: all ``torch.get_num_threads()`` of them; else
    the calling thread alone) that flush subnormal floats (below 1.2e-38) to zero, as
    ``torch.set_flush_denormal(True)`` makes the calling thread do: 1.0 all, 0.0 none. torch has
    no getter, and the mode is each thread's own (under GNU OpenMP, the pip wheels' runtime, a
    thread keeps the one it started with); it is read by adding the smallest subnormal to itself,
    which a flushing thread makes 0."""
    return _flushed_elements(torch.get_num_threads() if pool else 1).double().mean().item()


def subnormal_mode() -> str:
    """How torch's CPU threads treat subnormal floats now, for a run's record: flushed, kept, or
    flushed on some threads only (the mode was changed after torch had started its threads)."""
    share = flushed_share(pool=True)
    return SUBNORMALS_FLUSHED if share == 1 else SUBNORMALS_KEPT if share == 0 else SUBNORMALS_MIXED


def give_back_flushing(caller: bool, caller_threads: int) -> None:
    """Set the calling thread's flushing of subnormals back to ``caller``, before torch's thread
    count goes back to ``caller_threads``, unless the pool threads the caller will use started
    inside the block, in its other mode, which no thread can set back (GNU OpenMP): then the
    calling thread keeps that mode too, so that the process is in one mode (threads started
    later take the calling thread's)."""
    ran = flushed_share() == 1
    torch.set_flush_denormal(caller)
    used = torch.get_num_threads()
    if ran == caller or used == 1:  # one thread: the block started none
        return
    pool = _flushed_elements(used).view(used, -1).all(dim=1)[1:]  # each pool thread's mode, read in the caller's
    reused = pool[: caller_threads - 1] if caller_threads > 1 else pool
    if bool((reused == ran).all()):
        torch.set_flush_denormal(ran)


@contextmanager
def kept_process_state() -> Iterator[None]:
    """Restore, on exit, torch's thread count, deterministic-algorithm switches and NaN filling of
    new memory, the calling thread's flushing of subnormal floats (``give_back_flushing``: where
    torch started the threads the caller will use inside the block, the process keeps the
    block's flushing, since they cannot be set back), Lightning's environment variables and log
    levels, and the warning filters. The global random generators are seeded on purpose (as
    ``seed_everything`` does) and not restored."""
    threads = torch.get_num_threads()
    flushing = flushed_share() == 1
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    environment = {name: os.environ.get(name) for name in ENVIRONMENT}
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    with warnings.catch_warnings():  # the filters quiet_lightning adds go with it
        try:
            yield
        finally:
            give_back_flushing(flushing, threads)  # first: threads started after take its mode
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
            torch.utils.deterministic.fill_uninitialized_memory = fill
            for name, value in environment.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)

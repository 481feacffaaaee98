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


@contextmanager
def kept_process_state() -> Iterator[None]:
    """Restore, on exit, torch's thread count, deterministic-algorithm switches and NaN filling of
    new memory, Lightning's environment variables and log levels, and the warning filters. The
    global random generators are seeded on purpose (as ``seed_everything`` does) and not restored."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    environment = {name: os.environ.get(name) for name in ENVIRONMENT}
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    with warnings.catch_warnings():  # the filters quiet_lightning adds go with it
        try:
            yield
        finally:
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

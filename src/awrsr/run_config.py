"""Parse a run's YAML config plus overrides exactly as ``awrsr fit`` does, for scripts.

>>> cfg = load_fit_config(["--train.max_epochs", "2"])
>>> cfg["train"].max_epochs
2
"""

from __future__ import annotations

from argparse import ArgumentError
from typing import Any, Sequence

from jsonargparse import ArgumentParser

from awrsr.errors import ConfigError


def load_fit_config(args: Sequence[str]) -> dict[str, Any]:
    """The keyword arguments of ``awrsr.workflows.fit`` (data, model, train, evaluation,
    output_dir, resume) from command-line style ``args`` such as ``["--config", "x.yaml", "--train.seed", "1"]``."""
    from awrsr.cli import fit

    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--config", action="config")
    parser.add_function_arguments(fit, as_positional=False)
    try:
        namespace = parser.parse_args(list(args))
    except ArgumentError as err:
        raise ConfigError(f"{' '.join(args)}: {err}") from None
    init = parser.instantiate_classes(namespace)
    return {key: init[key] for key in ("data", "model", "train", "evaluation", "output_dir", "resume")}

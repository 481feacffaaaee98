"""Running one configured fit per (overrides, seed), resumably."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console

from awrsr.infer.artifact import METRICS_FILE
from awrsr.run_config import load_fit_config


def option_args(options: dict[str, Any]) -> list[str]:
    """``{"model.refine": "simp"}`` -> ``["--model.refine", "simp"]``."""
    args: list[str] = []
    for key, value in options.items():
        args += [f"--{key}", json.dumps(value) if isinstance(value, (list, dict, bool)) or value is None else str(value)]
    return args


def parse_sets(sets: Sequence[str] | None) -> dict[str, str]:
    """``["train.max_epochs=5"]`` -> ``{"train.max_epochs": "5"}``."""
    out = {}
    for item in sets or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            from awrsr.errors import ConfigError

            raise ConfigError(f"--set expects key=value (e.g. train.max_epochs=5), got {item!r}")
        out[key.strip()] = value.strip()
    return out


def run_or_reuse(config: str, options: dict[str, Any], run_dir: Path, console: Console) -> dict[str, Any]:
    """Metrics of the fit of ``config`` with ``options`` in ``run_dir``; a finished run (its
    metrics.json exists) is never trained again."""
    from awrsr.workflows import fit

    metrics_file = run_dir / METRICS_FILE
    if metrics_file.is_file():
        return json.loads(metrics_file.read_text())
    args = ["--config", config, *option_args(options), "--train.progress_bar", "false", "--output_dir", str(run_dir)]
    return fit(**load_fit_config(args), console=console).metrics

"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from awrsr.errors import ConfigError
from awrsr.models import MODELS, ModelConfig, build_model
from awrsr.nn.attention import ATTENTIONS
from awrsr.nn.refine import REFINEMENTS

# ../shared/data beside the repository root; tests that need it skip when it is absent.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_file(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


def registered_combinations() -> list[tuple[str, str, str]]:
    """Every (backbone, attention, refinement) triple the registries offer; a new part
    registered anywhere is picked up by every test parametrised with this."""
    return list(itertools.product(MODELS.names(), ATTENTIONS.names(), REFINEMENTS.names()))


def build_tiny(name: str, attention: str, refine: str, **overrides):
    """A small model of the given parts, or skip if the parts are declared incompatible."""
    values = dict(
        name=name, attention=attention, refine=refine, max_len=8, hidden_size=16, num_heads=2,
        num_blocks=2, dropout=0.1,
    )
    values.update(overrides)
    try:
        cfg = ModelConfig(**values)
        torch.manual_seed(0)
        return build_model(cfg, num_items=20)
    except ConfigError as err:
        pytest.skip(f"incompatible parts: {err}")


COMBINATIONS = pytest.mark.parametrize(
    "name,attention,refine", registered_combinations(), ids=lambda v: str(v)
)

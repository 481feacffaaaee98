"""Backbones that compose the parts in nn/; importing this package registers them."""

from awrsr.models import bert4rec, sasrec, stosa  # noqa: F401  (each registers its name)
from awrsr.models.base import served_parameters
from awrsr.models.config import ModelConfig
from awrsr.models.popularity import PopularityModel
from awrsr.models.registry import MODELS, build_model, check_parts_fit, compatible_combinations

__all__ = ["MODELS", "ModelConfig", "PopularityModel", "build_model", "check_parts_fit", "compatible_combinations", "served_parameters"]

"""Saved artifacts and recommendations for new histories."""

from awrsr.infer.artifact import LoadedArtifact, load_artifact, save_artifact
from awrsr.infer.recommender import Recommendation, Recommender

__all__ = ["LoadedArtifact", "Recommendation", "Recommender", "load_artifact", "save_artifact"]

"""Saved artifacts, recommendations for new histories, and batch scoring of whole logs."""

from awrsr.infer.artifact import LoadedArtifact, load_artifact, save_artifact
from awrsr.infer.batch import LogRecommendations, recommend_log, write_recommendations
from awrsr.infer.recommender import AttentionMaps, Recommendation, Recommender

__all__ = [
    "AttentionMaps",
    "LoadedArtifact",
    "LogRecommendations",
    "Recommendation",
    "Recommender",
    "load_artifact",
    "recommend_log",
    "save_artifact",
    "write_recommendations",
]

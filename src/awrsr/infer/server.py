"""An HTTP service for a saved model (``awrsr serve``): FastAPI for the routes, request checks and
the OpenAPI page (``/docs``), uvicorn to run it.

    POST /recommend        {"history": [1193, 661, 914], "k": 10}
                           -> {"items": [{"item": 2355, "score": 7.1}, ...]}
    POST /recommend/batch  {"histories": [[1193, 661], [914]], "k": 5} -> {"results": [{"items": [...]}, ...]}
    GET  /model            what is served: model settings, items, dataset fingerprint, test metrics
    GET  /health           {"status": "ok"}

Item ids are the user's own (numbers or strings, as in the data file). An unknown id, an empty
history or an impossible ``k`` is a 422 answer that says which; with ``"ignore_unknown": true``
unknown ids are skipped. The model scores one request at a time (a lock), so that concurrent
requests do not oversubscribe the CPU threads; send histories in one batch request for throughput.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Union

from awrsr.errors import AwrsrError, ConfigError
from awrsr.infer.artifact import load_artifact
from awrsr.infer.recommender import Recommender

MAX_K = 1000
MAX_BATCH = 4096

try:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, Field
except ImportError:  # the optional "serve" extra is not installed
    FastAPI = None  # type: ignore[assignment,misc]

ItemId = Union[int, str]

if FastAPI is not None:

    class Options(BaseModel):
        k: int = Field(10, ge=1, le=MAX_K, description="how many items to return")
        include_seen: bool = Field(False, description="allow items already in the history")
        ignore_unknown: bool = Field(False, description="skip ids the model does not know instead of failing")

    class RecommendRequest(Options):
        history: list[ItemId] = Field(..., min_length=1, description="the user's item ids, oldest first")

    class BatchRequest(Options):
        histories: list[list[ItemId]] = Field(..., min_length=1, max_length=MAX_BATCH)

    class Item(BaseModel):
        item: ItemId
        score: float

    class Recommendations(BaseModel):
        items: list[Item]

    class BatchRecommendations(BaseModel):
        results: list[Recommendations]


def create_app(artifact_dir: str | Path) -> "FastAPI":
    """The service for the artifact in ``artifact_dir`` (loaded now: a bad artifact fails here,
    before any request)."""
    if FastAPI is None:
        raise ConfigError("awrsr serve needs FastAPI and uvicorn: pip install 'awrsr[serve]'")
    artifact = load_artifact(artifact_dir)
    recommender = Recommender(artifact.model, artifact.vocab, artifact.model_config.max_len)
    scoring = threading.Lock()
    app = FastAPI(title="awrsr", description=f"next-item recommendations from {artifact.directory}")

    @app.exception_handler(AwrsrError)
    async def user_error(request: Request, err: AwrsrError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(err)})

    def top_k(histories: list[list[ItemId]], options: Options) -> list[Recommendations]:
        with scoring:
            found = recommender.recommend_many(
                histories, k=options.k, exclude_seen=not options.include_seen,
                unknown="ignore" if options.ignore_unknown else "error",
            )
        return [Recommendations(items=[Item(item=r.item, score=r.score) for r in recs]) for recs in found]

    @app.post("/recommend", response_model=Recommendations)
    def recommend(request: RecommendRequest) -> Recommendations:
        return top_k([request.history], request)[0]

    @app.post("/recommend/batch", response_model=BatchRecommendations)
    def recommend_batch(request: BatchRequest) -> BatchRecommendations:
        if any(not history for history in request.histories):
            raise ConfigError("every history needs at least one item id")
        return BatchRecommendations(results=top_k(request.histories, request))

    info: dict[str, Any] = {
        "directory": str(artifact.directory),
        "model": artifact.config.get("model", {}),
        "items": len(artifact.vocab),
        "max_len": artifact.model_config.max_len,
        "dataset": (artifact.metrics or {}).get("dataset"),
        "test": (artifact.metrics or {}).get("test"),
        "code_version": (artifact.metrics or {}).get("code_version"),
    }

    @app.get("/model")
    def model() -> dict[str, Any]:
        return info

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app

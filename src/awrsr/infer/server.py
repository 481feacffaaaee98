"""An HTTP service for a saved model (``awrsr serve``): FastAPI for the routes, request checks and
the OpenAPI page (``/docs``), uvicorn to run it.

    POST /recommend        {"history": [1193, 661, 914], "k": 10}
                           -> {"items": [{"item": 2355, "score": 7.1}, ...]}
    POST /recommend/batch  {"histories": [[1193, 661], [914]], "k": 5} -> {"results": [{"items": [...]}, ...]}
    GET  /model            what is served: model settings, items, dataset fingerprint, test metrics
    GET  /health           {"status": "ok"}

Item ids are the user's own (numbers or strings, as in the data file). An unknown id, an empty
history, an unknown field or an impossible ``k`` is a 422 answer that says which (and which history
of a batch); with ``"ignore_unknown": true`` unknown ids are skipped (and a history of a batch with
no known id gets no items; a single request with none is a 422). ``"exclude": [...]`` lists
items never to recommend. The model scores one request
at a time, in a worker thread, so that concurrent requests do not oversubscribe the CPU threads and
``/health`` answers while they wait; send histories in one batch request for throughput.
"""

from __future__ import annotations

import errno
import json
import math
import socket
from pathlib import Path, PurePath
from typing import Any, Union

from awrsr.data.tabular import FRAME_SOURCE
from awrsr.errors import AwrsrError, ConfigError
from awrsr.infer.artifact import RECORDED_DATA_FILE, load_artifact
from awrsr.infer.recommender import Recommender

MAX_K = 1000
MAX_BATCH = 4096
MAX_HISTORY = 10_000  # ids per history (the model reads only its last max_len)
MAX_ANSWERS = 200_000  # k x histories in one answer
MAX_EXCLUDE = 100_000  # ids in one request's exclusion list

try:
    import anyio
    from fastapi import FastAPI, Request
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
except ImportError:  # the optional "serve" extra is not installed
    FastAPI = None  # type: ignore[assignment,misc]

if FastAPI is not None:
    # Strict: JSON true is not item 1, and a string id stays a string.
    ItemId = Union[StrictInt, StrictStr]

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")  # a misspelt option is an error, not a default

        # Strict too: JSON true is not k = 1, nor "5" a number, nor "no" a boolean.
        k: StrictInt = Field(10, ge=1, le=MAX_K, description="how many items to return")
        include_seen: StrictBool = Field(False, description="allow items already in the history")
        ignore_unknown: StrictBool = Field(False, description="skip ids the model does not know instead of failing")
        exclude: list[ItemId] = Field(
            default_factory=list, max_length=MAX_EXCLUDE,
            description="item ids never to recommend (sold out, blocked); ids the model does not know are skipped",
        )

    class RecommendRequest(Options):
        history: list[ItemId] = Field(..., min_length=1, max_length=MAX_HISTORY, description="the user's item ids, oldest first")

    class BatchRequest(Options):
        histories: list[list[ItemId]] = Field(..., min_length=1, max_length=MAX_BATCH)

    class Item(BaseModel):
        item: ItemId
        score: float

    class Recommendations(BaseModel):
        items: list[Item]

    class BatchRecommendations(BaseModel):
        results: list[Recommendations]


def public_dataset_record(dataset: Any) -> Any:
    """The stored dataset record without where the training file lies on the server's disk: its
    file name is kept, its directories (and the absolute path recorded at training) are not."""
    if not isinstance(dataset, dict):
        return dataset
    public = {key: value for key, value in dataset.items() if key != RECORDED_DATA_FILE}
    stats = public.get("stats")
    source = stats.get("source") if isinstance(stats, dict) else None
    if isinstance(source, str) and source != FRAME_SOURCE and not source.startswith("synthetic("):
        public["stats"] = {**stats, "source": PurePath(source).name}
    return public


MAX_ECHO = 200  # characters of a refused input echoed in a 422 answer


def short_inputs(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic's errors with each offending ``input`` echoed whole only when short: a 10,001-id
    history refused for its length would come back in full; a long one is its JSON's start."""
    def shorten(value: Any) -> Any:
        text = json.dumps(value, default=str)
        return value if len(text) <= MAX_ECHO else f"{text[:MAX_ECHO]}... ({len(text):,} characters)"

    return [{**error, "input": shorten(error["input"])} if "input" in error else error for error in errors]


def json_safe(value: Any) -> Any:
    """``value`` with its non-finite floats as strings ("nan", "inf") and its lone surrogates
    escaped (``"\\ud800"``): Python's JSON parser reads NaN, Infinity, 1e400 and ``"\\ud800"`` in
    a request, and echoing them in a 422 answer would fail as a 500 (neither is JSON or UTF-8)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (an IPv6 address where the host holds a colon, as uvicorn
    decides), for uvicorn to serve on: a port in use or an address this machine lacks is a clear
    error now, before the model is loaded, rather than uvicorn's log line and exit status 3."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as err:
        sock.close()
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        hint = "; another process listens there: choose another --port" if getattr(err, "errno", None) == errno.EADDRINUSE else ""
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}{hint}") from None
    return sock


def create_app(artifact_dir: str | Path, device: str = "cpu") -> "FastAPI":
    """The service for the artifact in ``artifact_dir``, scoring on ``device`` (loaded now: a bad
    artifact or a device this machine lacks fails here, before any request)."""
    if FastAPI is None:
        raise ConfigError("awrsr serve needs FastAPI and uvicorn: pip install 'awrsr[serve]'")
    artifact = load_artifact(artifact_dir)
    recommender = Recommender.from_artifact(artifact, device=device)
    scoring = anyio.CapacityLimiter(1)  # one scoring at a time; waiting requests hold no thread
    app = FastAPI(title="awrsr", description=f"next-item recommendations from the model {artifact.directory.name}")

    @app.middleware("http")
    async def json_body_only(request: Request, call_next: Any) -> Any:
        # FastAPI drops query parameters it has no field for, and reads a body sent without a JSON
        # content type (curl -d's default) as one string: say what to send instead.
        if request.method == "POST":
            if request.url.query:
                return JSONResponse(status_code=422, content={"detail": json_safe(
                    f"options go in the JSON body, not the query string (got ?{request.url.query:.80})")})
            media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media_type != "application/json":
                return JSONResponse(status_code=415, content={"detail": json_safe(
                    f"send the body as JSON with the header content-type: application/json (got {media_type or 'none'!r}); "
                    "with curl: -H 'content-type: application/json'")})
        return await call_next(request)

    @app.exception_handler(AwrsrError)
    async def user_error(request: Request, err: AwrsrError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": json_safe(str(err))})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": json_safe(short_inputs(jsonable_encoder(err.errors())))})

    @app.exception_handler(FloatingPointError)
    async def broken_model(request: Request, err: FloatingPointError) -> JSONResponse:
        return JSONResponse(status_code=500, content={"detail": str(err)})

    def check_limits(histories: list[list[ItemId]], options: Options) -> None:
        if len(histories) * options.k > MAX_ANSWERS:
            raise ConfigError(f"k x histories may be at most {MAX_ANSWERS:,}, got {options.k} x {len(histories)}")
        too_long = [i for i, history in enumerate(histories) if len(history) > MAX_HISTORY]
        if too_long:
            raise ConfigError(f"histories[{too_long[0]}]: at most {MAX_HISTORY:,} item ids per history")

    def top_k(histories: list[list[ItemId]], options: Options, single: bool = False) -> list[Recommendations]:
        check_limits(histories, options)
        # The Recommender names the history an unknown id or an empty history is in, and refuses
        # non-finite scores (FloatingPointError: a 500 below). With ignore_unknown, a batch's
        # history with no known id gets no items rather than failing the batch for every other
        # user; a single such history is a 422, as there is nothing to recommend from.
        asked = dict(
            k=options.k, exclude_seen=not options.include_seen,
            unknown="ignore" if options.ignore_unknown else "error", exclude=options.exclude,
        )
        found = [recommender.recommend(histories[0], **asked)] if single else recommender.recommend_many(histories, **asked)
        return [Recommendations(items=[Item(item=r.item, score=r.score) for r in recs]) for recs in found]

    @app.post("/recommend", response_model=Recommendations)
    async def recommend(request: RecommendRequest) -> Recommendations:
        return (await anyio.to_thread.run_sync(top_k, [request.history], request, True, limiter=scoring))[0]

    @app.post("/recommend/batch", response_model=BatchRecommendations)
    async def recommend_batch(request: BatchRequest) -> BatchRecommendations:
        return BatchRecommendations(results=await anyio.to_thread.run_sync(top_k, request.histories, request, limiter=scoring))

    info: dict[str, Any] = {
        "name": artifact.directory.name,
        "model": artifact.config.get("model", {}),
        "items": len(artifact.vocab),
        "max_len": artifact.model_config.max_len,
        "device": str(recommender.device),
        # metrics.json's record (counts, source, statistics), else the fingerprint the weights carry
        "dataset": public_dataset_record((artifact.metrics or {}).get("dataset") or artifact.trained_on),
        "test": (artifact.metrics or {}).get("test"),
        "code_version": (artifact.metrics or {}).get("code_version"),
    }

    @app.get("/model")
    async def model() -> dict[str, Any]:
        return info

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app

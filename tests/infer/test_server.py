"""awrsr serve: the HTTP service answers what the Recommender answers, and bad requests get a 422
that says what is wrong."""

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")  # FastAPI's TestClient

from fastapi.testclient import TestClient  # noqa: E402

from awrsr.errors import ArtifactError  # noqa: E402
from awrsr.infer import Recommender  # noqa: E402
from awrsr.infer.server import create_app  # noqa: E402


@pytest.fixture(scope="module")
def client(trained_run):
    return TestClient(create_app(trained_run.run_dir))


def test_recommend_answers_what_the_recommender_answers(client, trained_run):
    expected = Recommender.load(trained_run.run_dir).recommend([1, 2, 3], k=5)
    answer = client.post("/recommend", json={"history": [1, 2, 3], "k": 5})
    assert answer.status_code == 200
    items = answer.json()["items"]
    assert [i["item"] for i in items] == [r.item for r in expected]
    assert [i["score"] for i in items] == pytest.approx([r.score for r in expected])
    assert not {1, 2, 3} & {i["item"] for i in items}  # seen items are not recommended by default
    seen_allowed = client.post("/recommend", json={"history": [1, 2, 3], "k": 50, "include_seen": True}).json()
    assert len(seen_allowed["items"]) == 50 and {1, 2, 3} & {i["item"] for i in seen_allowed["items"]}


def test_a_batch_answers_each_history_as_alone(client):
    histories = [[1, 2, 3], [4], [5, 6]]
    batch = client.post("/recommend/batch", json={"histories": histories, "k": 4})
    assert batch.status_code == 200
    alone = [client.post("/recommend", json={"history": h, "k": 4}).json() for h in histories]
    assert [[i["item"] for i in r["items"]] for r in batch.json()["results"]] == [[i["item"] for i in r["items"]] for r in alone]


@pytest.mark.parametrize(
    "body, expected",
    [
        ({"history": [1, 999999], "k": 3}, "unknown item id(s): 999999"),
        ({"history": [], "k": 3}, "history"),
        ({"history": [1], "k": 0}, "k"),
        ({"history": [999999], "k": 3, "ignore_unknown": True}, "no known items"),
    ],
)
def test_bad_requests_are_422_with_the_reason(client, body, expected):
    answer = client.post("/recommend", json=body)
    assert answer.status_code == 422
    assert expected in str(answer.json()["detail"])


def test_unknown_ids_can_be_skipped(client):
    answer = client.post("/recommend", json={"history": [1, 999999], "k": 3, "ignore_unknown": True})
    assert answer.status_code == 200 and len(answer.json()["items"]) == 3
    batch = client.post("/recommend/batch", json={"histories": [[1], []], "k": 3})
    assert batch.status_code == 422 and "at least one item" in batch.json()["detail"]


def test_model_and_health_describe_what_is_served(client, trained_run):
    model = client.get("/model").json()
    assert model["max_len"] == 20 and model["model"]["name"] == "sasrec"  # tests/conftest.py's tiny run
    assert model["items"] == 50 and model["test"] == trained_run.metrics["test"]
    assert model["dataset"]["sha256"] == trained_run.metrics["dataset"]["sha256"]
    assert client.get("/health").json() == {"status": "ok"}


def test_a_bad_artifact_fails_before_serving(tmp_path):
    with pytest.raises(ArtifactError, match="not found"):
        create_app(tmp_path / "nothing-here")

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
        ({"history": [999999], "k": 3, "ignore_unknown": True}, "no known item id"),
        ({"history": [1], "top_k": 3}, "top_k"),  # a misspelt option is not silently the default
        ({"history": [True], "k": 3}, "history"),  # JSON true is not item 1
        ({"history": [1], "k": True}, "k"),  # nor k = 1
        ({"history": [1], "k": "5"}, "k"),
        ({"history": [1], "k": 3, "ignore_unknown": "no"}, "ignore_unknown"),
        ({"history": [1], "k": 3, "include_seen": "maybe"}, "include_seen"),
    ],
)
def test_bad_requests_are_422_with_the_reason(client, body, expected):
    answer = client.post("/recommend", json=body)
    assert answer.status_code == 422
    assert expected in str(answer.json()["detail"])


@pytest.mark.parametrize("body", [b'{"history": [NaN]}', b'{"history": [1], "k": Infinity}', b'{"history": [1e400]}',
                                  b'{"history": [1], "exclude": [-Infinity]}'])
def test_non_finite_json_numbers_are_422_not_500(client, body):
    # Python's JSON parser reads them; echoing them back in the 422 answer failed as a 500
    answer = client.post("/recommend", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422
    assert {"inf", "-inf", "nan"} & {str(error.get("input")) for error in answer.json()["detail"]}


@pytest.mark.parametrize(
    "body",
    [
        r'{"history": [1], "k": "\ud800"}',
        r'{"history": [["\ud800"]], "k": 3}',
        r'{"history": [1], "\ud800": 1}',
        r'{"history": [1], "k": 3, "exclude": [{"\ud800": 1}]}',
        r'{"history": ["\ud800"], "k": 3}',
    ],
)
def test_a_lone_surrogate_is_422_not_500(client, body):
    # JSON may spell one ("\ud800"), Python's parser reads it, and UTF-8 cannot encode it: echoed
    # back in the 422 answer (an input or a key) it failed as a 500
    answer = client.post("/recommend", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert "\\ud800" in answer.text


def test_options_in_the_query_string_and_bodies_not_sent_as_json_are_refused_by_name(client):
    """FastAPI would drop ?k=3 silently (answering 10 items, 131 not excluded), and read a body
    sent without a JSON content type (curl -d's default) as one string."""
    answer = client.post("/recommend?k=3&exclude=131", json={"history": [1, 2, 3]})
    assert answer.status_code == 422 and "options go in the JSON body, not the query string (got ?k=3&exclude=131)" in answer.text
    body = '{"history": [1, 2, 3], "k": 3}'
    for headers in ({}, {"content-type": "application/x-www-form-urlencoded"}, {"content-type": "text/plain"}):
        answer = client.post("/recommend/batch" if headers else "/recommend", content=body, headers=headers)
        assert answer.status_code == 415, answer.text
        assert "send the body as JSON with the header content-type: application/json" in answer.json()["detail"]
    answer = client.post("/recommend", content=body, headers={"content-type": "Application/JSON; charset=utf-8"})
    assert answer.status_code == 200 and len(answer.json()["items"]) == 3
    assert client.get("/health?verbose=1").status_code == 200  # a GET reads no body


def test_excluded_items_are_left_out(client):
    full = client.post("/recommend", json={"history": [1, 2, 3], "k": 6}).json()["items"]
    blocked = [full[0]["item"], full[1]["item"]]
    answer = client.post("/recommend/batch", json={"histories": [[1, 2, 3]], "k": 4, "exclude": [*blocked, 999999]})
    assert answer.status_code == 200
    assert [i["item"] for i in answer.json()["results"][0]["items"]] == [i["item"] for i in full[2:6]]
    bad = client.post("/recommend", json={"history": [1], "exclude": 5})
    assert bad.status_code == 422 and "exclude" in str(bad.json()["detail"])


def test_unknown_ids_can_be_skipped(client):
    answer = client.post("/recommend", json={"history": [1, 999999], "k": 3, "ignore_unknown": True})
    assert answer.status_code == 200 and len(answer.json()["items"]) == 3
    batch = client.post("/recommend/batch", json={"histories": [[1], []], "k": 3})
    assert batch.status_code == 422 and "histories[1]: a history needs at least one item id" in batch.json()["detail"]
    # in a batch, the error names the history
    batch = client.post("/recommend/batch", json={"histories": [[1], [2, 999999]], "k": 3})
    assert batch.status_code == 422 and batch.json()["detail"] == "histories[1]: unknown item id(s): 999999"
    # ignoring unknown ids, a history with none known gets no items; the others are scored as alone
    batch = client.post("/recommend/batch", json={"histories": [[999999], [1, 999999], ["x"]], "k": 3, "ignore_unknown": True})
    assert batch.status_code == 200
    results = batch.json()["results"]
    assert results[0] == {"items": []} and results[2] == {"items": []}
    assert results[1] == client.post("/recommend", json={"history": [1], "k": 3}).json()
    batch = client.post("/recommend/batch", json={"histories": [[999999], []], "k": 3, "ignore_unknown": True})
    assert batch.status_code == 422 and batch.json()["detail"] == "histories[1]: a history needs at least one item id"


def test_string_ids_of_an_integer_vocabulary_are_found(client):
    as_numbers = client.post("/recommend", json={"history": [1, 2], "k": 3}).json()
    assert client.post("/recommend", json={"history": ["1", "2"], "k": 3}).json() == as_numbers


def test_limits_on_one_answer(client):
    answer = client.post("/recommend/batch", json={"histories": [[1]] * 300, "k": 1000})
    assert answer.status_code == 422 and "k x histories" in answer.json()["detail"]
    # a refused input is echoed whole only when short: a 10,001-id history comes back as its start
    answer = client.post("/recommend", json={"history": [1] * 10_001, "k": 3})
    assert answer.status_code == 422 and len(answer.text) < 1000, answer.text[:300]
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body", "history"] and error["input"].endswith("... (30,003 characters)")
    answer = client.post("/recommend", json={"history": [1], "k": "5"})
    assert answer.json()["detail"][0]["input"] == "5"  # a short one whole, as it was sent


def test_a_model_with_non_finite_scores_is_not_served(trained_run, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(trained_run.run_dir, broken)
    weights = load_file(broken / "model.safetensors")
    name = next(k for k in weights if "items" in k and k.endswith("weight"))
    weights[name][5] = float("nan")
    save_file(weights, str(broken / "model.safetensors"))
    answer = TestClient(create_app(broken)).post("/recommend", json={"history": [5], "k": 3})
    assert answer.status_code == 500 and "non-finite scores" in answer.json()["detail"]


def test_model_and_health_describe_what_is_served(client, trained_run):
    model = client.get("/model").json()
    assert model["max_len"] == 20 and model["model"]["name"] == "sasrec"  # tests/conftest.py's tiny run
    assert model["name"] == trained_run.run_dir.name and "/" not in model["name"]  # no server paths
    assert model["items"] == 50 and model["test"] == trained_run.metrics["test"]
    assert model["dataset"]["sha256"] == trained_run.metrics["dataset"]["sha256"]
    assert client.get("/health").json() == {"status": "ok"}


def test_a_model_of_three_files_still_names_its_training_data(trained_run, tmp_path):
    import shutil

    kept = tmp_path / "model"
    kept.mkdir()
    for name in ("config.yaml", "vocab.json", "model.safetensors"):  # no metrics.json
        shutil.copy(trained_run.run_dir / name, kept / name)
    model = TestClient(create_app(kept)).get("/model").json()
    stored = trained_run.metrics["dataset"]
    assert model["dataset"] == {key: stored[key] for key in ("users", "items", "interactions", "sha256")}
    assert model["test"] is None


def test_a_bad_artifact_fails_before_serving(tmp_path):
    with pytest.raises(ArtifactError, match="not found"):
        create_app(tmp_path / "nothing-here")


def test_model_info_leaves_out_where_the_training_file_lies_on_the_server(tmp_path):
    from rich.console import Console

    from awrsr.data import DataConfig
    from awrsr.infer.server import public_dataset_record
    from awrsr.workflows import fit

    from conftest import tiny_run_config

    private = tmp_path / "private" / "alice"
    private.mkdir(parents=True)
    (private / "ratings.txt").write_text("".join(f"{u} {' '.join(str((u + i) % 30 + 1) for i in range(8))}\n" for u in range(60)))
    config = tiny_run_config(tmp_path / "run", max_epochs=1)
    config["data"] = DataConfig(path=str(private / "ratings.txt"), min_user_interactions=0, min_item_interactions=0)
    fit(**config, console=Console(quiet=True))
    answer = TestClient(create_app(tmp_path / "run")).get("/model")
    assert answer.status_code == 200 and answer.json()["dataset"]["stats"]["source"] == "ratings.txt"
    assert "alice" not in answer.text and str(tmp_path) not in answer.text
    assert public_dataset_record(None) is None  # runs without a stored dataset record


def test_serve_on_a_port_in_use_is_a_clear_error_before_the_model_loads(tmp_path, capsys, monkeypatch):
    import socket

    import awrsr.infer.server
    from conftest import run_cli

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the port was checked")

    monkeypatch.setattr(awrsr.infer.server, "create_app", no_model)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_cli(capsys, "serve", str(tmp_path / "no-model"), "--port", str(port))
    assert code == 2 and not out
    assert err == f"awrsr: error: cannot listen on 127.0.0.1:{port}: Address already in use; another process listens there: choose another --port\n"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"histories": []}, "histories"),  # an empty batch is a mistake, not an empty answer
        ({"histories": [[1]], "k": 1001}, "k"),  # k is at most 1,000
        ({"history": [1], "k": 1001}, "k"),
    ],
)
def test_requests_beyond_the_fields_limits_are_422_naming_the_field(client, body, field):
    answer = client.post("/recommend/batch" if "histories" in body else "/recommend", json=body)
    assert answer.status_code == 422
    assert [error["loc"] for error in answer.json()["detail"]] == [["body", field]]


def test_the_limits_on_one_answer_and_one_history_are_inclusive(client):
    # k x histories may be 200,000 and a history 10,000 ids long; one more is refused
    assert client.post("/recommend/batch", json={"histories": [[1]] * 200, "k": 1000}).status_code == 200
    answer = client.post("/recommend/batch", json={"histories": [[1]] * 201, "k": 1000})
    assert answer.status_code == 422 and answer.json()["detail"] == "k x histories may be at most 200,000, got 1000 x 201"
    assert client.post("/recommend/batch", json={"histories": [[2], [1] * 10_000], "k": 3}).status_code == 200
    answer = client.post("/recommend/batch", json={"histories": [[2], [1] * 10_001], "k": 3})
    assert answer.status_code == 422 and answer.json()["detail"] == "histories[1]: at most 10,000 item ids per history"


def test_serve_listens_where_it_says_and_serves_the_run_given(trained_run, capsys, monkeypatch):
    """--port 0 takes a free port; the address printed is the one listening (an IPv6 host in
    brackets, as a URL writes it), and what listens there serves the run given."""
    import uvicorn

    from conftest import run_cli

    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.append((self.config.app, sockets[0].getsockname())))
    code, out, err = run_cli(capsys, "serve", str(trained_run.run_dir), "--port", "0")
    app, (host, port) = served[-1]
    assert code == 0 and port > 0 and host == "127.0.0.1", err
    assert out == f"serving {trained_run.run_dir} on http://127.0.0.1:{port} (the API at /docs; Ctrl+C stops)\n"
    expected = Recommender.load(trained_run.run_dir).recommend([1, 2, 3], k=3)
    answer = TestClient(app).post("/recommend", json={"history": [1, 2, 3], "k": 3}).json()
    assert [i["item"] for i in answer["items"]] == [r.item for r in expected]
    code, out, err = run_cli(capsys, "serve", str(trained_run.run_dir), "--host", "::1", "--port", "0")
    if code == 2 and "cannot listen on ::1" in err:
        pytest.skip("this machine has no IPv6 loopback")
    assert code == 0 and out.startswith(f"serving {trained_run.run_dir} on http://[::1]:{served[-1][1][1]} "), err


def test_the_service_reads_a_history_with_the_models_duplicates_policy(trained_run, tmp_path):
    import shutil

    import yaml

    run = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["data"]["duplicates"] = "consecutive"  # as awrsr fit --data.duplicates consecutive stores it
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    expected = Recommender.load(trained_run.run_dir).recommend([3, 7, 3, 9], k=5)
    service = TestClient(create_app(run))
    single = service.post("/recommend", json={"history": [3, 3, 7, 3, 9], "k": 5}).json()["items"]
    batch = service.post("/recommend/batch", json={"histories": [[3, 3, 7, 3, 9]], "k": 5}).json()["results"][0]["items"]
    for items in (single, batch):
        assert [i["item"] for i in items] == [r.item for r in expected]
        assert [i["score"] for i in items] == pytest.approx([r.score for r in expected], abs=1e-5)

"""A real (small) fit, then everything a user does with its artifact."""

import csv
import json
import re
import shutil

import numpy as np
import pytest
import torch
from rich.console import Console
from safetensors.torch import load_file, save_file

from awrsr.errors import ArtifactError, ConfigError, UnknownItemError
from awrsr.infer import Recommender, load_artifact
from awrsr.workflows import evaluate, fit

from conftest import tiny_run_config


def test_fit_beats_popularity_by_a_wide_margin(trained_run):
    m = trained_run.metrics
    assert m["test"]["ndcg@10"] > m["popularity"]["test"]["ndcg@10"] + 0.15
    assert m["test"]["hr@10"] > m["popularity"]["test"]["hr@10"] + 0.15


def test_results_record_protocol_fingerprint_and_selection(trained_run):
    stored = json.loads((trained_run.run_dir / "metrics.json").read_text())
    assert stored["protocol"]["filter_seen"] is True and stored["protocol"]["ties"] == "pessimistic"
    assert stored["dataset"]["users"] == 300 and len(stored["dataset"]["sha256"]) == 64
    assert stored["seed"] == 7 and stored["code_version"]
    # where it trained: tables that mix GPU and CPU runs tell them apart by this
    assert stored["machine"]["device"] == "cpu" and stored["machine"]["torch"] == torch.__version__
    assert stored["machine"]["torch_threads"] == torch.get_num_threads() >= 1
    sel = stored["selection"]
    assert 1 <= sel["best_epoch"] <= sel["epochs_trained"] <= 8
    assert sel["stopped_by"] in ("early stopping", "max_epochs")
    rows = list(csv.DictReader(open(trained_run.run_dir / "history.csv")))
    assert [int(r["epoch"]) for r in rows] == list(range(1, sel["epochs_trained"] + 1))
    assert trained_run.history["epoch"].to_list() == [int(r["epoch"]) for r in rows]  # FitResult.history reads it
    assert all(0 < float(r["train/loss"]) < 20 for r in rows)  # every epoch's mean training loss is recorded
    # the selected epoch is the one with the best validation NDCG@10
    best = max(rows, key=lambda r: float(r["val/ndcg@10"]))
    assert int(best["epoch"]) == sel["best_epoch"]
    assert float(best["val/ndcg@10"]) == pytest.approx(stored["valid"]["ndcg@10"], abs=1e-6)


def test_evaluate_again_reproduces_the_stored_test_metrics(trained_run):
    from awrsr.train.process_state import flushed_share

    again = evaluate(trained_run.run_dir, console=Console(quiet=True))
    assert flushed_share() == 0.0  # the Python API leaves the caller's subnormals as they were (kept, here)
    for name, value in trained_run.metrics["test"].items():
        assert again[name] == pytest.approx(value, abs=1e-9)


def test_metrics_by_history_length_partition_the_overall_ones(trained_run):
    from awrsr.workflows import evaluate_by_length

    table = evaluate_by_length(trained_run.run_dir, edges=[10, 15])
    assert set(table["history length"]) <= {"1-10", "11-15", ">15"} and table["users"].min() > 0
    users = table["users"].to_numpy()
    for name, value in trained_run.metrics["test"].items():  # bucket means weighted by users: the overall mean
        assert float((table[name].to_numpy() * users).sum() / users.sum()) == pytest.approx(value, abs=1e-9), name
    with pytest.raises(ConfigError, match=r"edges: length edges must be positive and increasing, got \[10, 5\]"):
        evaluate_by_length(trained_run.run_dir, edges=[10, 5])
    for edges, message in ((10, "a list of integers"), ("10", "a list of integers"), ([10.5], "whole numbers")):
        with pytest.raises(ConfigError, match=f"^edges: length edges must be {message}"):
            evaluate_by_length(trained_run.run_dir, edges=edges)
    assert evaluate_by_length(trained_run.run_dir, edges=np.array([10, 15])).equals(table)  # numpy ints are ints


def test_a_users_history_length_counts_the_items_before_the_held_out_one(trained_run):
    from awrsr.workflows import load_run_data, rank_artifact

    full = load_run_data(load_artifact(trained_run.run_dir)).sequences.lengths  # every synthetic user is evaluated
    assert np.array_equal(rank_artifact(trained_run.run_dir, split="test").lengths, full - 1)
    assert np.array_equal(rank_artifact(trained_run.run_dir, split="valid").lengths, full - 2)


def test_same_config_and_seed_give_the_same_metrics(trained_run, tmp_path):
    again = fit(**tiny_run_config(tmp_path / "again"), console=Console(quiet=True))
    assert again.metrics["test"] == trained_run.metrics["test"]
    assert again.metrics["selection"]["best_epoch"] == trained_run.metrics["selection"]["best_epoch"]


def test_recommender_returns_original_ids_best_first_without_seen_items(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    history = [1, 2, 3]
    top = rec.recommend(history, k=5)
    assert len(top) == 5
    assert all(isinstance(r.item, int) for r in top)
    assert not {r.item for r in top} & set(history)
    scores = [r.score for r in top]
    assert scores == sorted(scores, reverse=True)
    assert rec.recommend(["1", "2", "3"], k=5) == top  # string ids from a command line work too
    batched = rec.recommend_many([history, [4, 5]], k=5)[0]
    assert [r.item for r in batched] == [r.item for r in top]
    assert [r.score for r in batched] == pytest.approx(scores, abs=1e-5)


def test_recommender_learned_the_planted_successor(trained_run):
    from awrsr.data import SyntheticConfig
    from awrsr.data.synthetic import planted_successors

    successor = planted_successors(SyntheticConfig(num_users=300, num_items=50, min_length=8, max_length=20))
    follow = lambda item: int(successor[item - 1])  # out[id - 1] is the successor of id
    rec = Recommender.load(trained_run.run_dir)
    hits = 0
    for start in range(1, 51):
        history = [start]
        for _ in range(5):
            history.append(follow(history[-1]))
        hits += rec.recommend(history, k=1)[0].item == follow(history[-1])
    assert hits >= 40  # of 50 planted chains


def test_unknown_items_are_a_clear_error_or_skipped_on_request(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    with pytest.raises(UnknownItemError, match="999"):
        rec.recommend([1, 999], k=3)
    assert rec.recommend([1, 999], k=3, unknown="ignore") == rec.recommend([1], k=3)
    # in a batch, the error names the history it is about
    with pytest.raises(UnknownItemError, match=r"^histories\[1\]: unknown item id\(s\): 999$"):
        rec.recommend_many([[1], [2, 999]], k=3)
    # ignored: a history with no known id gets nothing, and fails neither the batch nor the others
    assert rec.recommend_many([[999], [1]], k=3, unknown="ignore") == [[], rec.recommend([1], k=3)]
    with pytest.raises(ConfigError, match=r"^no known item id to recommend from \(unknown item id\(s\): 999, 'x'\)$"):
        rec.recommend([999, "x"], k=3, unknown="ignore")  # alone, there is nothing to recommend from
    with pytest.raises(ConfigError, match=r"histories\[1\]: a history needs at least one item id"):
        rec.recommend_many([[1], []], k=3)
    with pytest.raises(ConfigError, match="^unknown must be 'error' or 'ignore', got 'skip'$"):  # not a silent ignore
        rec.recommend([1, 999], k=3, unknown="skip")
    assert rec.recommend_many([], k=3) == []


def test_recommender_arguments_of_the_wrong_type_are_clear_errors(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    for k in (2.5, "5", True, 0):
        with pytest.raises(ConfigError, match="^k must be an integer >= 1, got "):
            rec.recommend([1, 2], k=k)
    with pytest.raises(ConfigError, match="^history is a list of item ids, oldest first; got str '12'$"):
        rec.recommend("12", k=3)  # not the history [1, 2], nor ["12"]
    with pytest.raises(ConfigError, match=r"^histories\[1\] is a list of item ids, oldest first; got int 7$"):
        rec.recommend_many([[1], 7], k=3)
    assert rec.recommend((x for x in [1, 2]), k=3) == rec.recommend([1, 2], k=3)  # any iterable of ids
    for unordered in ({1, 2}, {1: "a", 2: "b"}):  # but not one without an order: it is the model's whole input
        with pytest.raises(ConfigError, match=f"^history is a list of item ids, oldest first; got {type(unordered).__name__} "):
            rec.recommend(unordered, k=3)
    # argument checks do not depend on whether any history is left to score
    with pytest.raises(ConfigError, match="not a single string"):
        rec.recommend_many([[999999]], unknown="ignore", exclude="12")
    with pytest.raises(ConfigError, match="^k must be an integer >= 1"):
        rec.recommend_many([[999999]], k=0, unknown="ignore")


def test_histories_of_the_wrong_shape_say_so_and_whole_float_ids_are_the_items(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    expected = rec.recommend([1, 2, 3], k=3)
    # what pandas makes of an integer column with gaps (7.0), numpy ints, a 1-d tensor: the same items
    assert rec.recommend([1.0, 2.0, 3.0], k=3) == expected
    assert rec.recommend(np.array([1, 2, 3]), k=3) == expected
    assert rec.recommend(torch.tensor([1, 2, 3]), k=3) == expected
    blocked = expected[0].item
    assert blocked not in [r.item for r in rec.recommend([1, 2, 3], k=3, exclude=[float(blocked)])]  # was ignored
    # only whole floats, and their text as the CSV readers write it (session 54: "1.0" is item 1)
    assert 2.5 not in rec.vocab and "1.5" not in rec.vocab and "01.0" not in rec.vocab
    assert rec.recommend(["1.0", "2.00", 3.0], k=3) == expected
    # several histories where one is expected: the shape is named, not "unknown item id(s)"
    for nested, message in (([[1, 2]], r"^history\[0\] is a list, not an item id"),
                            (np.array([[1, 2], [3, 4]]), r"^history is a list of item ids, oldest first; got a 2-d array"),
                            (torch.tensor([[1, 2]]), r"^history is a list of item ids, oldest first; got a 2-d array")):
        with pytest.raises(ConfigError, match=message):
            rec.recommend(nested, k=3)
    with pytest.raises(ConfigError, match=r"^histories\[1\]\[0\] is a list"):
        rec.recommend_many([[1], [[2]]], k=3)


def test_excluded_items_are_never_recommended_and_the_rest_keep_their_order(trained_run):
    rec = Recommender.load(trained_run.run_dir)
    full = rec.recommend([1, 2, 3], k=10)
    blocked = [full[0].item, full[2].item]
    top = rec.recommend([1, 2, 3], k=8, exclude=[*blocked, 424242])  # an unknown id is skipped
    assert [r.item for r in top] == [r.item for r in full if r.item not in blocked][:8]
    assert [r.score for r in top] == pytest.approx([r.score for r in full if r.item not in blocked][:8])
    histories = [[1, 2, 3], [4]]
    for history, row in zip(histories, rec.recommend_many(histories, k=50, exclude=[str(x) for x in blocked])):  # string ids too
        assert len(row) == 50 - len(set(history) | set(blocked))  # every item but the seen and the blocked ones
        assert not set(blocked) & {r.item for r in row}
    everything = list(range(1, 51))
    assert rec.recommend([1], k=5, exclude=everything) == []  # nothing left to recommend
    with pytest.raises(ConfigError, match="not a single string"):
        rec.recommend([1], exclude="12")


def test_the_scoring_device_is_checked_when_loading(trained_run, monkeypatch):
    from awrsr.infer.recommender import resolve_device

    assert str(resolve_device("cpu")) == "cpu"
    # auto: CUDA first, then Apple's MPS, then the CPU
    for cuda, mps, expected in ((True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda cuda=cuda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda mps=mps: mps)
        assert resolve_device("auto").type == expected
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="device must be cpu, cuda, cuda:N, mps or auto, got 'gpu'"):
        Recommender.load(trained_run.run_dir, device="gpu")
    with pytest.raises(ConfigError, match=r"device 'cuda:7': torch sees \d+ CUDA device"):
        Recommender.load(trained_run.run_dir, device="cuda:7")
    if torch.cuda.is_available():  # the same answers on the GPU (on a GPU machine)
        on_gpu, on_cpu = Recommender.load(trained_run.run_dir, device="cuda"), Recommender.load(trained_run.run_dir)
        assert [r.item for r in on_gpu.recommend([1, 2, 3], k=5)] == [r.item for r in on_cpu.recommend([1, 2, 3], k=5)]


def test_artifact_loading_errors(trained_run, tmp_path):
    with pytest.raises(ArtifactError, match="max_len=20"):
        load_artifact(trained_run.run_dir, max_len=50)
    with pytest.raises(ArtifactError, match="trained with max_len=20; it cannot be loaded with max_len=50"):
        Recommender.load(trained_run.run_dir, max_len=50)
    assert Recommender.load(trained_run.run_dir, max_len=20).max_len == 20
    broken = tmp_path / "broken"
    shutil.copytree(trained_run.run_dir, broken)
    (broken / "vocab.json").unlink()
    with pytest.raises(ArtifactError, match="missing vocab.json"):
        load_artifact(broken)
    (broken / "vocab.json").write_text('{"ids": [1, 2')  # garbled: the run's error (it was the data's)
    with pytest.raises(ArtifactError, match=r"broken/vocab.json: not a readable vocabulary JSON file"):
        load_artifact(broken)
    # a run still training (or interrupted) has checkpoints and no model yet: said so
    unfinished = tmp_path / "unfinished"
    (unfinished / "checkpoints").mkdir(parents=True)
    with pytest.raises(ArtifactError, match=r"not a finished run yet \(no config.yaml, vocab.json, model.safetensors\): it is still training"):
        load_artifact(unfinished)

    reshaped = tmp_path / "reshaped"
    shutil.copytree(trained_run.run_dir, reshaped)
    state = load_file(str(reshaped / "model.safetensors"))
    state["embedding.positions.weight"] = state["embedding.positions.weight"][:10].clone()
    save_file(state, str(reshaped / "model.safetensors"))
    with pytest.raises(ArtifactError, match="embedding.positions.weight"):
        load_artifact(reshaped)

    with pytest.raises(ArtifactError, match="not found"):
        load_artifact(tmp_path / "nowhere")


def test_an_unfinished_run_says_how_far_it_has_come(trained_run, tmp_path):
    """Loading a run with no model yet says whether it trains now or was interrupted, and how far
    it has come by its log (what a report of a comparison says of it)."""
    import threading

    from awrsr.run_directory import run_lock

    run = tmp_path / "run"
    shutil.copytree(trained_run.run_dir, run)
    for name in ("config.yaml", "vocab.json", "model.safetensors", "metrics.json"):  # as before the model is saved
        (run / name).unlink()
    progress = r"epoch 8/8, [0-9.]+ s per epoch lately, best valid ndcg@10 [0-9.]+ at epoch \d, \d of patience 3 without a gain"
    with pytest.raises(ArtifactError, match=rf"not a finished run yet .*: it was interrupted \(at {progress}\); "
                                            r"awrsr fit --resume true continues it; the model is saved when training ends"):
        load_artifact(run)
    held, done = threading.Event(), threading.Event()

    def trainer():  # another thread holds the run's lock, as a process training it would
        with run_lock(run):
            held.set()
            done.wait(30)

    thread = threading.Thread(target=trainer)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(ArtifactError, match=rf": it is training now \(at {progress}\); the model is saved"):
            load_artifact(run)
    finally:
        done.set()
        thread.join()
    # a damaged record, or one without the budget (defaults would mislead): the status alone
    for record in ("train: [not, a, mapping]\n", "train: {lr: 0.1}\n"):
        (run / "checkpoints" / "run.yaml").write_text(record)
        with pytest.raises(ArtifactError, match=r": it was interrupted; awrsr fit --resume true continues it;"):
            load_artifact(run)


def test_a_loaded_model_is_in_eval_mode(trained_run):
    # dropout 0.1: in training mode the same history would score differently each time
    assert not load_artifact(trained_run.run_dir).model.training


def test_a_directory_with_only_lightnings_log_is_an_unfinished_run(tmp_path):
    (tmp_path / "metrics.csv").write_text("epoch,val/ndcg@10\n1,0.1\n")  # no checkpoints/, no metrics.json
    with pytest.raises(ArtifactError, match=r"not a finished run yet \(no config.yaml, vocab.json, model.safetensors\)"):
        load_artifact(tmp_path)


def test_runs_inside_a_collection_finished_first_and_seed_runs_only_under_a_variant(tmp_path):
    from awrsr.infer.artifact import collection_kind, runs_inside

    def run(path, finished):
        path.mkdir(parents=True)
        (path / "config.yaml").write_text("model: {}\n")
        if finished:
            (path / "metrics.json").write_text("{}")

    run(tmp_path / "a", finished=False)
    run(tmp_path / "b", finished=True)
    assert runs_inside(tmp_path) == [tmp_path / "b", tmp_path / "a"]  # finished first, then by path
    with pytest.raises(ArtifactError, match=r"a directory of runs, not a single run; pick one of its runs, e\.g\. \S+/b or \S+/a$"):
        load_artifact(tmp_path)  # the example to pick first is one that can be loaded
    # a run named seed-1 right inside a directory is not a comparison's <variant>/seed-N
    run(tmp_path / "other" / "seed-1", finished=True)
    assert collection_kind(tmp_path / "other") == "a directory of runs"
    run(tmp_path / "compare" / "none" / "seed-1", finished=True)
    assert collection_kind(tmp_path / "compare") == "a comparison output directory (one run per <variant>/seed-N)"


def test_an_edited_model_section_is_refused_even_where_no_shape_changes(trained_run, tmp_path):
    import yaml

    edited = tmp_path / "edited"
    shutil.copytree(trained_run.run_dir, edited)
    config = yaml.safe_load((edited / "config.yaml").read_text())
    config["model"]["norm_eps"] = 1e-5  # every tensor keeps its shape; the scores would change silently
    (edited / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ArtifactError, match=r"config.yaml: the model section differs .*: norm_eps \(1e-08 -> 1e-05\)"):
        load_artifact(edited)
    # weights saved before the model section travelled with them load as before
    save_file(load_file(str(edited / "model.safetensors")), str(edited / "model.safetensors"))
    assert load_artifact(edited).model_config.norm_eps == 1e-5


@pytest.mark.parametrize("edit", ["reorder", "drop", "add"])
def test_another_vocabulary_beside_the_weights_is_refused(trained_run, tmp_path, edit):
    # reordered, the ids name other items' weights with no shape changed; one id fewer or more
    # was reported as the item table's shape, blaming the intact weights
    edited = tmp_path / "edited"
    shutil.copytree(trained_run.run_dir, edited)
    vocab = json.loads((edited / "vocab.json").read_text())
    ids = vocab["ids"]
    vocab["ids"] = {"reorder": [ids[1], ids[0], *ids[2:]], "drop": ids[:-1], "add": [*ids, 10**6]}[edit]
    (edited / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(ArtifactError, match=r"vocab.json: not the vocabulary these weights were trained with"):
        load_artifact(edited)
    # weights saved before the digest travelled with them are not checked
    save_file(load_file(str(edited / "model.safetensors")), str(edited / "model.safetensors"))
    if edit == "reorder":
        assert load_artifact(edited).vocab.ids[:2] == [ids[1], ids[0]]


def test_weights_copied_from_another_run_are_named_as_the_odd_file(trained_run, tmp_path):
    # both the model section and the vocabulary disagreed with the weights' copies, and the error
    # blamed the run's own vocab.json
    from safetensors import safe_open

    from awrsr.infer.artifact import MODEL_METADATA, VOCAB_METADATA

    copied = tmp_path / "copied"
    shutil.copytree(trained_run.run_dir, copied)
    with safe_open(str(copied / "model.safetensors"), "pt") as handle:
        metadata = handle.metadata()
    model = json.loads(metadata[MODEL_METADATA])
    other = {**metadata, MODEL_METADATA: json.dumps({**model, "norm_eps": 1e-5}), VOCAB_METADATA: "0" * 64}
    save_file(load_file(str(copied / "model.safetensors")), str(copied / "model.safetensors"), metadata=other)
    with pytest.raises(ArtifactError, match=r"copied/model.safetensors: not the weights of this run \(copied from another\?\): "
                                            r"both config.yaml's model section \(norm_eps \(1e-05 -> 1e-08\)\) and vocab.json differ"):
        load_artifact(copied)


def test_load_checks_the_type_of_its_arguments(trained_run):
    with pytest.raises(ArtifactError, match="max_len must be an integer .*got '20'"):
        load_artifact(trained_run.run_dir, max_len="20")
    assert load_artifact(trained_run.run_dir, max_len=np.int64(20)).model_config.max_len == 20  # numpy ints are ints
    with pytest.raises(TypeError, match="directory must be a path, got NoneType"):
        load_artifact(None)


def test_evaluate_refuses_data_other_than_the_training_data(trained_run, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("".join(f"{u} {' '.join(str(i) for i in range(1, 8))}\n" for u in range(1, 30)))
    # the counts come first: they often say what changed
    with pytest.raises(ArtifactError, match=r"\(now 29 users, 7 items, 203 interactions, fingerprint [0-9a-f]{12}; "
                                            r"trained on [\d,]+ users, [\d,]+ items, [\d,]+ interactions, fingerprint [0-9a-f]{12}\)"):
        evaluate(trained_run.run_dir, data_path=str(other), console=Console(quiet=True))


def test_evaluate_takes_true_or_false_not_a_string(trained_run):
    # "no" is a true string: the metrics would be the filtered ones with no error
    for name, value in (("filter_seen", "no"), ("by_length", "false")):
        with pytest.raises(ConfigError, match=f"^{name} must be true or false, got '{value}'"):
            evaluate(trained_run.run_dir, console=Console(quiet=True), **{name: value})


def test_a_model_of_three_files_still_refuses_changed_data(tmp_path):
    """config.yaml, vocab.json and model.safetensors are a loadable model without metrics.json;
    the data's fingerprint travels in the weights, so a changed file with the same items is still
    refused (it used to be scored, with only the vocabulary checked)."""
    import random

    from awrsr.data import DataConfig

    rng = random.Random(1)
    rows = [(u, rng.randint(1, 30)) for u in range(1, 61) for _ in range(8)]
    trained_on, changed = tmp_path / "data.csv", tmp_path / "changed.csv"
    trained_on.write_text("user_id,item_id\n" + "".join(f"{u},{i}\n" for u, i in rows))
    changed.write_text(trained_on.read_text() + "1,5\n")  # one more interaction, the same items
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1)
    cfg["data"] = DataConfig(path=str(trained_on))
    fit(**cfg, console=Console(quiet=True))
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.yaml", "vocab.json", "model.safetensors"):
        shutil.copy(tmp_path / "run" / name, model / name)
    assert load_artifact(model).metrics is None
    evaluate(model, data_path=str(trained_on), console=Console(quiet=True))  # its own data: scored
    with pytest.raises(ArtifactError, match=r"is not the dataset this model was trained on \(now 60 users, 30 items, 481"):
        evaluate(model, data_path=str(changed), console=Console(quiet=True))


def test_code_version_names_the_commit_and_uncommitted_changes(tmp_path, monkeypatch):
    import subprocess

    import awrsr
    from awrsr.version import SOURCE_VERSION_VARIABLE, source_version

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.delenv(SOURCE_VERSION_VARIABLE, raising=False)
    assert source_version(tmp_path) == awrsr.__version__  # not a checkout: the version alone
    monkeypatch.setenv(SOURCE_VERSION_VARIABLE, "gabc1234.dirty")  # a copy that names its commit
    assert source_version(tmp_path) == f"{awrsr.__version__}+gabc1234.dirty"

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "module.py").write_text("x = 1\n")
    git("add", "module.py")
    git("commit", "-q", "-m", "first")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert source_version(tmp_path) == f"{awrsr.__version__}+g{commit}"  # a checkout's own commit wins
    (tmp_path / "module.py").write_text("x = 2\n")  # code edited after the commit
    assert source_version(tmp_path) == f"{awrsr.__version__}+g{commit}.dirty"


def test_a_damaged_stored_fingerprint_is_the_runs_error(trained_run, tmp_path):
    """A fingerprint in metrics.json with a field of the wrong type or missing names the run: a
    value that is no number escaped as the data's error, naming neither run nor file."""
    for name, expected in (("typed", "malformed dataset fingerprint"), ("missing", "a dataset fingerprint needs the fields")):
        copy = tmp_path / name
        shutil.copytree(trained_run.run_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
        record = json.loads((copy / "metrics.json").read_text())
        if name == "typed":
            record["dataset"]["users"] = "many"
        else:
            del record["dataset"]["sha256"]
        (copy / "metrics.json").write_text(json.dumps(record))
        with pytest.raises(ArtifactError, match=rf"^{re.escape(str(copy))}: its stored dataset fingerprint is damaged \({expected}"):
            evaluate(copy, console=Console(quiet=True))


def test_evaluate_says_when_ids_once_read_as_integers_are_now_text(tmp_path):
    """Since CSV ids with leading zeros stay text, a file trained on when they became integers no
    longer matches its run; the error says why instead of only that the fingerprint differs."""
    import random

    from awrsr.data import DataConfig

    rng = random.Random(0)
    rows = [(u, rng.randint(1, 30)) for u in range(1, 61) for _ in range(8)]
    as_integers, padded = tmp_path / "ints.csv", tmp_path / "padded.csv"
    as_integers.write_text("user_id,item_id\n" + "".join(f"{u},{i}\n" for u, i in rows))
    padded.write_text("user_id,item_id\n" + "".join(f"{u},{i:03d}\n" for u, i in rows))
    cfg = tiny_run_config(tmp_path / "run", max_epochs=1)
    cfg["data"] = DataConfig(path=str(as_integers))
    fit(**cfg, console=Console(quiet=True))
    with pytest.raises(ArtifactError, match="read as text now but were integers at training"):
        evaluate(tmp_path / "run", data_path=str(padded), console=Console(quiet=True))
    # other ids altogether: the data differs, and leading zeros are not the reason
    named = tmp_path / "named.csv"
    named.write_text("user_id,item_id\n" + "".join(f"{u},i{i}\n" for u, i in rows))
    with pytest.raises(ArtifactError, match="is not the dataset this model was trained on") as caught:
        evaluate(tmp_path / "run", data_path=str(named), console=Console(quiet=True))
    assert "leading zeros" not in str(caught.value)
    # the same data with its item ids read as text (a frame read with dtype=str): the counts agree,
    # so the error says which types differ
    import polars as pl

    as_text = pl.read_csv(as_integers, schema_overrides={"item_id": pl.String})
    with pytest.raises(ArtifactError, match="its item ids are text here but were integers at training"):
        evaluate(tmp_path / "run", frame=as_text, console=Console(quiet=True))

"""The benchmark scripts that sessions with a GPU rely on keep working against the library's API:
the device check passes a correct model and fails a planted bug, and the comparison queue walks
its runs in the promised order and exits non-zero when runs fail."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_device_check_passes_a_model_and_fails_a_planted_refinement_bug(monkeypatch):
    device_check = load_script("device_check")
    row = device_check.check_model("sasrec", "dot", "simp", torch.device("cpu"))
    assert row["ok"], row

    from awrsr.nn.refine.matrices import MatrixRefinement

    original = MatrixRefinement.bilinear

    def swapped_in_float32(self, weights, left, right):  # W_Q and W_K swapped on the checked side only
        if weights.dtype == torch.float32:
            return original(self, weights, right, left)
        return original(self, weights, left, right)

    monkeypatch.setattr(MatrixRefinement, "bilinear", swapped_in_float32)
    row = device_check.check_model("sasrec", "dot", "simp", torch.device("cpu"))
    assert not row["ok"]
    assert row["gradients"] > 0.1 and row["weights"] > 1e-3


def test_compare_queue_walks_seeds_outermost_and_checks_its_specs():
    compare_queue = load_script("compare_queue")
    runs = compare_queue.queue(["a=configs/sasrec/synthetic.yaml:simp,add"], [1, 2])
    assert [(name, variant, options["train.seed"]) for name, _, variant, options in runs] == [
        ("a", "none", 1), ("a", "simp", 1), ("a", "add", 1), ("a", "none", 2), ("a", "simp", 2), ("a", "add", 2),
    ]
    assert runs[1][3] == {"model.refine": "simp", "train.seed": 1}
    skipped = compare_queue.queue(
        ["a=configs/sasrec/synthetic.yaml:simp,add", "b=configs/sasrec/synthetic.yaml:value"], [1], skip=["a/s*", "b/none"]
    )
    assert [(name, variant) for name, _, variant, _ in skipped] == [("a", "none"), ("a", "add"), ("b", "value")]
    from_file = compare_queue.queue(["s=configs/stosa/beauty.yaml:configs/compare/stosa.yaml"], [7])
    assert [variant for _, _, variant, _ in from_file][:2] == ["stosa", "stosa+simp"]
    with pytest.raises(SystemExit, match="NAME=CONFIG:VARIANTS"):
        compare_queue.queue(["no-config-here"], [1])


def test_compare_queue_exits_non_zero_when_its_runs_fail(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_queue.py"), "a=configs/sasrec/synthetic.yaml:simp,add",
         "--workers", "2", "--root", str(tmp_path), "--seeds", "1", "--set", "data.path=/nonexistent/data.txt",
         "--skip", "a/add"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1
    assert "unfinished: a/none/seed-1, a/simp/seed-1" in result.stdout  # failed, not skipped
    assert "left out by --skip, not trained: a/add/seed-1" in result.stdout
    logs = sorted((tmp_path / "logs").glob("q*-w*.log"))  # one log per worker, named after its queue too
    assert len(logs) == 2
    failed = [line.split(" failed ")[1] for log in logs for line in log.read_text().splitlines() if " failed " in line]
    assert sorted(failed) == sorted({str(tmp_path / "a" / v / "seed-1") for v in ("none", "simp")})  # each tried once


def test_a_queue_worker_skips_a_run_another_worker_saw_fail(tmp_path, monkeypatch, capsys):
    import argparse

    compare_queue = load_script("compare_queue")
    tried = []
    monkeypatch.setattr(compare_queue, "run_or_reuse", lambda config, options, run_dir, *a, **k: tried.append(run_dir.parent.name))
    failed_dir = tmp_path / "failed"
    failed_dir.mkdir()
    (failed_dir / "a__none__seed-1").touch()  # another worker of this queue failed it
    args = argparse.Namespace(comparisons=["a=configs/sasrec/synthetic.yaml:simp"], seeds=[1], skip=[], set=[],
                              root=tmp_path, failed_dir=failed_dir, worker="w2")
    assert compare_queue.work(args) == 0 and tried == ["simp"]

    def fails(*a, **k):
        raise RuntimeError("diverged")

    monkeypatch.setattr(compare_queue, "run_or_reuse", fails)
    assert compare_queue.work(args) == 1 and (failed_dir / "a__simp__seed-1").exists()  # marked for the others


def test_compare_queue_refuses_a_comparison_given_after_skip(monkeypatch, capsys):
    compare_queue = load_script("compare_queue")
    monkeypatch.setattr(sys, "argv", ["compare_queue.py", "a=configs/sasrec/synthetic.yaml:simp", "--skip", "a/simp",
                                      "b=configs/sasrec/synthetic.yaml:add"])
    with pytest.raises(SystemExit) as exit_:
        compare_queue.main()
    assert exit_.value.code == 2 and "give the comparisons before --skip" in capsys.readouterr().err


def fake_run(directory: Path, seed: int, ndcg: float, refine: str = "none", sha256: str = "abc") -> Path:
    import json

    import yaml

    directory.mkdir(parents=True)
    config = {"data": {"path": f"/elsewhere/{seed}/data.txt"}, "model": {"refine": refine},
              "train": {"seed": seed, "num_threads": seed % 2 + 1, "lr": 0.001}, "output_dir": str(directory)}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    test = {m: ndcg for m in load_script("accuracy").METRICS}
    (directory / "metrics.json").write_text(json.dumps({"seed": seed, "test": test, "dataset": {"sha256": sha256}}))
    return directory


def test_accuracy_tabulates_finished_runs_of_one_config_and_refuses_mixed_ones(tmp_path):
    accuracy = load_script("accuracy")
    runs = [fake_run(tmp_path / f"s{seed}", seed, value) for seed, value in [(42, 0.1), (43, 0.2), (44, 0.6)]]
    record = accuracy.tabulated_record("three", runs)
    assert record["seeds"] == [42, 43, 44]
    # mean 0.3; sample std sqrt(((-.2)^2 + (-.1)^2 + .3^2) / 2) = sqrt(0.07)
    assert record["test_mean_std"]["ndcg@10"]["mean"] == pytest.approx(0.3)
    assert record["test_mean_std"]["ndcg@10"]["std"] == pytest.approx(0.07 ** 0.5)
    assert "not recorded" in record["machine"]

    other_model = fake_run(tmp_path / "simp", 45, 0.1, refine="simp")
    with pytest.raises(SystemExit, match="model.refine"):
        accuracy.tabulated_record("mixed", [runs[0], other_model])
    other_data = fake_run(tmp_path / "data", 46, 0.1, sha256="def")
    with pytest.raises(SystemExit, match="different datasets"):
        accuracy.tabulated_record("mixed", [runs[0], other_data])
    with pytest.raises(SystemExit, match="repeat a seed"):
        accuracy.tabulated_record("twice", [runs[0], runs[1], runs[0]])
    with pytest.raises(SystemExit, match="not a finished run"):
        accuracy.tabulated_record("missing", [runs[0], tmp_path / "nothing"])

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
    from_file = compare_queue.queue(["s=configs/stosa/beauty.yaml:configs/compare/stosa.yaml"], [7])
    assert [variant for _, _, variant, _ in from_file][:2] == ["stosa", "stosa+simp"]
    with pytest.raises(SystemExit, match="NAME=CONFIG:VARIANTS"):
        compare_queue.queue(["no-config-here"], [1])


def test_compare_queue_exits_non_zero_when_its_runs_fail(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_queue.py"), "a=configs/sasrec/synthetic.yaml:simp",
         "--workers", "1", "--root", str(tmp_path), "--seeds", "1", "--set", "data.path=/nonexistent/data.txt"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1
    assert "unfinished: a/none/seed-1, a/simp/seed-1" in result.stdout
    assert "failed" in (tmp_path / "logs" / "w1.log").read_text()

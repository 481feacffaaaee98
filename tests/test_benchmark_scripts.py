"""The benchmark scripts that sessions with a GPU rely on keep working against the library's API:
the device check passes a correct model and fails a planted bug, and the comparison queue walks
its runs in the promised order and exits non-zero when runs fail, and a run cut off on a lent GPU
comes back packed within the device tool's limits and finishes elsewhere as if never stopped."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str, folder: str = "benchmarks"):
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
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


def test_device_checks_bf16_at_the_default_init_where_a_defect_stands_out(monkeypatch):
    """bf16 rows run with the refinement at the default init: STOSA + M_simp on logits passes there
    (at init std 0.5, where rounding its parameters alone moves its exact gradients ~23%, bf16
    autocast's 9.6e-2 failed, within 15% of a planted defect), while its attention run in bf16,
    the defect that the float32 guard mended, still fails (M_value on logits, 9.2e-2)."""
    device_check = load_script("device_check")
    row = device_check.check_model("stosa", "wasserstein", "simp", torch.device("cpu"), "logits")
    assert row["ok"] and row["bf16 gradients"] < device_check.TOLERANCE["bf16 gradients"], row

    from awrsr.nn.attention.wasserstein import WassersteinAttention

    monkeypatch.setattr(WassersteinAttention, "forward", lambda self, x, mask, need_weights=False: self._attend(x, mask, need_weights))
    row = device_check.check_model("stosa", "wasserstein", "value", torch.device("cpu"), "logits")
    assert not row["ok"] and row["bf16 gradients"] > device_check.TOLERANCE["bf16 gradients"], row


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
    # the failure marks stay as the queue's record; the workers' claim files go
    (marks,) = (tmp_path / "logs").glob("q*-failed")
    assert sorted(p.name for p in marks.iterdir()) == ["a__none__seed-1", "a__simp__seed-1"]


def test_a_queue_never_adopts_failure_marks_left_by_an_earlier_queue_of_its_pid(tmp_path):
    # pids repeat across machines and containers, and roots are copied between them
    stale = tmp_path / "logs" / "q12345-failed"
    stale.mkdir(parents=True)
    (stale / "a__none__seed-1").touch()
    script = ROOT / "benchmarks" / "compare_queue.py"
    argv = [str(script), "a=configs/sasrec/synthetic.yaml:simp", "--workers", "1", "--root", str(tmp_path),
            "--seeds", "1", "--set", "train.max_epochs=1", "--skip", "a/simp"]
    as_pid_12345 = f"import os, runpy, sys; os.getpid = lambda: 12345; sys.argv = {argv!r}; runpy.run_path({str(script)!r}, run_name='__main__')"
    result = subprocess.run([sys.executable, "-c", as_pid_12345], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "a" / "none" / "seed-1" / "metrics.json").is_file()  # trained, not skipped as failed


def test_a_skipped_variant_is_not_checked(tmp_path):
    # M_stoc on SASRec is a configuration error; skipped, it must not stop the queue from starting
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_queue.py"), "a=configs/sasrec/synthetic.yaml:stoc",
         "--workers", "1", "--root", str(tmp_path), "--seeds", "1", "--skip", "a/*"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "left out by --skip, not trained: a/none/seed-1, a/stoc/seed-1" in result.stdout
    # not skipped, it is one line naming the variant, before anything trains
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_queue.py"), "a=configs/sasrec/synthetic.yaml:stoc",
         "--workers", "1", "--root", str(tmp_path), "--seeds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "compare_queue: variant 'a/stoc': model.refine 'stoc' only exists for stochastic attention" in result.stderr


def test_a_clean_queue_leaves_its_logs_only(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compare_queue.py"), "a=configs/sasrec/synthetic.yaml:simp",
         "--workers", "1", "--root", str(tmp_path), "--seeds", "1", "--set", "train.max_epochs=1", "--skip", "a/simp"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "a" / "none" / "seed-1" / "metrics.json").is_file()
    # no empty-looking folder of claim files (a reader took it for failures)
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [next((tmp_path / "logs").glob("q*-w1.log")).name]


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


def saved_as_on_cuda(path: Path) -> None:
    """Rewrite the checkpoint at ``path`` as a GPU run writes it: every tensor's storage tagged
    "cuda:0" and, in a Lightning checkpoint, a CUDA generator state beside the CPU one."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    for key, callback_state in state.get("callbacks", {}).items():
        if key == "RandomState":
            callback_state["cuda"] = [torch.zeros(16, dtype=torch.uint8)]
    entry = (1, lambda storage: "cuda:0" if storage.device.type == "cpu" else None, lambda storage, location: None)
    registry = torch.serialization._package_registry
    registry.insert(0, entry)
    try:
        torch.save(state, path)
    finally:
        registry.remove(entry)


def _as_if_cut_off(run_dir: Path) -> None:
    """Leave what a run directory holds while its run is training: checkpoints and the log."""
    for path in run_dir.iterdir():
        if path.name not in ("checkpoints", "metrics.csv"):
            path.unlink()


def test_accuracy_reuses_a_finished_seed_only_of_the_same_configuration(tmp_path):
    from rich.console import Console

    accuracy = load_script("accuracy")
    config, run_dir, quiet = ROOT / "configs" / "sasrec" / "synthetic.yaml", tmp_path / "bench-seed42", Console(quiet=True)
    tiny = ["--data.synthetic.num_users", "60", "--model.hidden_size", "8", "--train.max_epochs", "1", "--train.num_threads", "1"]
    first = accuracy.seed_run(config, 42, run_dir, tiny, False, quiet)
    again = accuracy.seed_run(config, 42, run_dir, [*tiny[:-1], "2"], False, quiet)  # the thread count may differ
    assert again == first
    with pytest.raises(SystemExit, match=r"holds a finished run of another configuration \(differs in model.hidden_size \(8 -> 16\)"):
        accuracy.seed_run(config, 42, run_dir, [*tiny, "--model.hidden_size", "16"], False, quiet)


def test_archive_runs_packs_runs_without_their_optional_files(tmp_path):
    import tarfile

    for seed in (42, 43):
        run = fake_run(tmp_path / "cmp" / "none" / f"seed-{seed}", seed, 0.1)
        if seed == 43:
            continue  # the last run sorted has no test_ranks.npy
        (run / "test_ranks.npy").write_bytes(b"x")
    # the tables, without which figures drawn from the archive ordered variants by name and had no bars by length
    for table in ("runs.csv", "table.md", "by_length.csv"):
        (tmp_path / "cmp" / table).write_text("x\n")
    archive = tmp_path / "runs.tar.gz"
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "archive_runs.sh"), str(tmp_path / "cmp"), str(archive)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "2 finished run(s)" in done.stdout, done.stderr
    with tarfile.open(archive) as packed:
        assert sorted(packed.getnames()) == [
            "cmp/by_length.csv",
            "cmp/none/seed-42/config.yaml", "cmp/none/seed-42/metrics.json", "cmp/none/seed-42/test_ranks.npy",
            "cmp/none/seed-43/config.yaml", "cmp/none/seed-43/metrics.json",
            "cmp/runs.csv", "cmp/table.md",
        ]


def test_a_run_cut_off_on_a_gpu_comes_back_packed_and_finishes_on_the_cpu_as_if_never_stopped(tmp_path):
    import tarfile

    from rich.console import Console

    from awrsr.workflows import fit
    from conftest import tiny_run_config

    pack_partial = load_script("pack_partial", "benchmarks/device")
    quiet = Console(quiet=True)
    settings = dict(max_epochs=6, patience=50, lr=0.03)  # validation peaks before the last epoch
    straight = fit(**tiny_run_config(tmp_path / "straight", **settings), console=quiet)
    best = straight.metrics["selection"]["best_epoch"]
    assert best < 5  # else the cut-off run's best and last checkpoints coincide and this shows less
    lease = tmp_path / "lease"
    cut = lease / "cmp" / "simp" / "seed-7"
    fit(**tiny_run_config(cut, **{**settings, "max_epochs": best + 1}), console=quiet)
    _as_if_cut_off(cut)
    (cut / ".awrsr.lock").touch()  # a worker still holds it
    fit(**tiny_run_config(lease / "cmp" / "none" / "seed-7", max_epochs=1), console=quiet)  # finished: not packed

    out = tmp_path / "out"
    out.mkdir()
    (out / "gpu-partial-3.tar").touch()  # from an earlier pack, when more runs were unfinished
    written = pack_partial.pack(lease, out, file_limit=16 * 1024 * 1024, max_files=6, budget=60 * 1024 * 1024)
    assert written == [out / "gpu-partial-1.tar"] and sorted(out.iterdir()) == written
    assert (lease / ".packed-last").read_text() == "cmp/simp/seed-7\n"  # what monitor.sh adds to .returned
    with tarfile.open(written[0]) as tar:
        names = sorted(tar.getnames())
        slim = torch.load(tar.extractfile("cmp/simp/seed-7/checkpoints/best.ckpt"), weights_only=True)
        home = tmp_path / "home"
        tar.extractall(home, filter="data")
    assert names == sorted(f"cmp/simp/seed-7/{name}" for name in (
        "checkpoints/best.ckpt", "checkpoints/last.ckpt", "checkpoints/run.yaml", "metrics.csv"))
    assert set(slim) == {"epoch", "state_dict"} and slim["epoch"] + 1 == best  # the weights only
    full = torch.load(cut / "checkpoints" / "best.ckpt", weights_only=True)
    assert all(torch.equal(slim["state_dict"][k], v) for k, v in full["state_dict"].items())

    run_dir = home / "cmp" / "simp" / "seed-7"
    for name in ("best.ckpt", "last.ckpt"):
        saved_as_on_cuda(run_dir / "checkpoints" / name)
    if not torch.cuda.is_available():  # the rewritten file is a GPU's: torch will not load it here as it is
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)
    resumed = fit(**tiny_run_config(run_dir, **settings), console=quiet, resume=True)
    assert resumed.metrics["selection"] == straight.metrics["selection"]
    assert resumed.metrics["valid"] == straight.metrics["valid"] and resumed.metrics["test"] == straight.metrics["test"]


def test_a_checkpoint_being_written_is_left_for_the_next_pack(tmp_path):
    import shutil

    from rich.console import Console

    from awrsr.workflows import fit
    from conftest import tiny_run_config

    pack_partial = load_script("pack_partial", "benchmarks/device")
    run_dir = tmp_path / "root" / "cmp" / "none" / "seed-7"
    fit(**tiny_run_config(run_dir, max_epochs=2, patience=50), console=Console(quiet=True))
    _as_if_cut_off(run_dir)
    root, checkpoints = tmp_path / "root", run_dir / "checkpoints"
    assert pack_partial.snapshot(run_dir, root, tries=1).epochs == 2
    last = (checkpoints / "last.ckpt").read_bytes()
    (checkpoints / "last.ckpt").write_bytes(last[: len(last) // 2])  # half written
    assert pack_partial.snapshot(run_dir, root, tries=2, wait_s=0) is None
    (checkpoints / "last.ckpt").write_bytes(last)
    best = torch.load(checkpoints / "best.ckpt", weights_only=True)
    torch.save({**best, "epoch": 5}, checkpoints / "best.ckpt")  # a new best after last.ckpt was read
    assert pack_partial.snapshot(run_dir, root, tries=2, wait_s=0) is None

    # A second call of the lease brings back first what the first call had no room for.
    torch.save(best, checkpoints / "best.ckpt")
    shutil.copytree(run_dir, root / "cmp" / "simp" / "seed-7")
    (root / ".returned").write_text("cmp/none/seed-7\n")
    size = pack_partial.snapshot(run_dir, root).size
    pack_partial.pack(root, tmp_path, file_limit=size + pack_partial.TAR_END, max_files=1, budget=10**9)
    assert (root / ".packed-last").read_text() == "cmp/simp/seed-7\n"


def test_partial_runs_are_packed_most_trained_first_within_the_device_tools_limits():
    pack_partial = load_script("pack_partial", "benchmarks/device")
    end = pack_partial.TAR_END

    def run(name, epochs, size):  # one member whose header and data make ``size`` bytes
        return pack_partial.PartialRun(Path(name), epochs, {name: b"x" * (size - pack_partial.TAR_HEADER)})

    runs = [run("a", 10, 6000), run("b", 30, 9216), run("c", 20, 4096), run("d", 5, 30000), run("e", 1, 1024)]
    limit = 9216 + 4096 + end  # b and c fill a file exactly
    bins, left_out = pack_partial.plan_files(runs, limit, max_files=2, budget=10**6)
    assert [[r.path.name for r in b] for b in bins] == [["b", "c"], ["a", "e"]]
    assert [r.path.name for r in left_out] == ["d"]  # larger than a file
    bins, left_out = pack_partial.plan_files(runs, limit, max_files=1, budget=10**6)
    assert [[r.path.name for r in b] for b in bins] == [["b", "c"]] and {r.path.name for r in left_out} == {"a", "d", "e"}
    bins, left_out = pack_partial.plan_files(runs, limit, max_files=5, budget=9216 + 4096 + end + 1023)
    assert [[r.path.name for r in b] for b in bins] == [["b", "c"]]  # a second file's closing blocks do not fit
    assert pack_partial.PartialRun(Path("r"), 1, {"f": b"x" * 513}).size == 512 + 1024  # header + padded data
    bins, left_out = pack_partial.plan_files(runs, limit, max_files=2, budget=10**6, returned=frozenset({"b"}))
    assert [[r.path.name for r in b] for b in bins] == [["c", "a", "e"], ["b"]]  # b came back in an earlier call


def test_speed_profiles_an_ac_tsr_step_after_timing_it_and_times_stosa_with_its_hinge(monkeypatch):
    from awrsr.data import DataConfig, SyntheticConfig, leave_one_out, load_sequence_data
    from awrsr.models import ModelConfig, build_model
    from awrsr.train.batches import training_loader

    speed = load_script("speed")
    data = load_sequence_data(DataConfig(synthetic=SyntheticConfig(num_users=40, num_items=20, max_length=12)))
    loader = training_loader(leave_one_out(data).train, 8, batch_size=16, seed=0)
    model = build_model(ModelConfig(attention="calibrated", max_len=8, hidden_size=8, num_blocks=1), data.num_items)
    speed.train_epoch_seconds(model, loader, "32-true", max_steps=1)
    assert "Self CPU" in speed.profile_step(model, loader, "32-true")  # the timed steps' gradients left behind
    # STOSA's step is timed with the hinge its configs train with, not without it
    assert speed.loss_options("stosa", "beauty") == {"pvn_weight": 0.005} and speed.loss_options("ce", "beauty") == {}
    stosa = build_model(ModelConfig(name="stosa", attention="wasserstein", max_len=8, hidden_size=8, num_blocks=1), data.num_items)
    seen, real = [], speed.LOSSES.get("stosa")
    monkeypatch.setattr(speed.LOSSES, "get", lambda name: lambda *a, **kw: seen.append(kw) or real(*a, **kw))
    speed.train_epoch_seconds(stosa, loader, "32-true", 1, "stosa", options=speed.loss_options("stosa", "beauty"))
    assert seen and all(kw == {"pvn_weight": 0.005} for kw in seen)


def test_archive_runs_packs_a_tune_so_that_its_trials_come_back_finished_or_skipped(tmp_path, monkeypatch):
    """A tune's trials are one level less deep than a comparison's runs; unpacked on a new
    machine, the report is the same and the tune trains nothing again (sessions lose runs/)."""
    import tarfile

    from rich.console import Console

    from awrsr.experiments.runs import parse_sets
    from awrsr.experiments.tune import run_tune, trial_id
    from awrsr.train.module import SequentialRecommenderModule

    quiet = Console(quiet=True)
    config = tmp_path / "base.yaml"
    config.write_text("train:\n  monitor: ndcg@5\n")
    tiny = parse_sets(["data.synthetic.num_users=60", "data.synthetic.num_items=20", "model.max_len=10",
                       "model.hidden_size=8", "model.num_blocks=1", "train.max_epochs=1"])
    space = {"train.lr": [0.01, 0.001], "model.num_heads": [1, 3]}  # 3 heads do not divide 8: skipped
    # a folder name with a space: every path goes to tar one per line, whole
    best = run_tune(str(config), space, tmp_path / "old" / "my search", extra=tiny, console=quiet)
    archive = tmp_path / "search.tar.gz"
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "archive_runs.sh"), str(tmp_path / "old" / "my search"), str(archive)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "2 finished run(s), 2 skipped trial(s)" in done.stdout, done.stderr
    finished = f"my search/trial-{trial_id({'train.lr': 0.01, 'model.num_heads': 1})}"
    skipped = f"my search/trial-{trial_id({'train.lr': 0.01, 'model.num_heads': 3})}"
    with tarfile.open(archive) as packed:
        names = packed.getnames()
    assert f"{finished}/metrics.json" in names and f"{finished}/history.csv" in names and f"{skipped}/skipped.json" in names
    assert not any("checkpoints" in name or name.endswith((".ckpt", ".lock")) for name in names)
    assert "my search/best.yaml" not in names  # written again from the trials

    new = tmp_path / "new"
    new.mkdir()
    subprocess.run(["tar", "xzf", str(archive), "-C", str(new)], check=True)
    assert run_tune(str(config), space, new / "my search", extra=tiny, console=quiet, report_only=True) == best
    monkeypatch.setattr(SequentialRecommenderModule, "training_step", lambda *args: pytest.fail("trained again"))
    assert run_tune(str(config), space, new / "my search", extra=tiny, console=quiet) == best

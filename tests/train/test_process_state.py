"""Flushing subnormal floats: each of torch's CPU threads keeps the mode it started with, so a
run must set it before torch starts them, and its record must say what held on every thread."""

import json
import platform
import subprocess
import sys

import pytest
import torch
from rich.console import Console

from awrsr.train.process_state import SUBNORMALS_FLUSHED, SUBNORMALS_KEPT, SUBNORMALS_MIXED, flushed_share
from awrsr.workflows import fit
from conftest import tiny_run_config

# torch flushes subnormals on x86 only (SSE's flush-to-zero and denormals-are-zero bits)
pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="flushing needs x86")

TINY_FIT = ["fit", "--data.synthetic.num_users", "60", "--model.hidden_size", "8", "--train.max_epochs", "1",
            "--train.num_threads", "2", "--train.progress_bar", "false"]


def python(code: str, *argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_share_of_flushing_threads_is_read_thread_by_thread():
    # a new process: in this one, torch's threads have long started in whatever mode
    out = python(
        "import torch\n"
        "from awrsr.train.process_state import flushed_share, subnormal_mode\n"
        "torch.set_num_threads(2)\n"
        "print(flushed_share(), flushed_share(2), subnormal_mode())\n"  # the pool starts keeping them
        "torch.set_flush_denormal(True)\n"  # this thread flushes now, the other does not
        "print(flushed_share(), flushed_share(2), subnormal_mode())\n"
    )
    assert out.splitlines() == [f"0.0 0.0 {SUBNORMALS_KEPT}", f"1.0 0.5 {SUBNORMALS_MIXED}"]


def test_the_command_line_flushes_on_every_thread_before_they_start(tmp_path):
    """awrsr fit sets train.flush_denormal before torch's first parallel operation, so every CPU
    thread flushes; a process whose threads started before is told so, and recorded as it ran."""
    run = "import sys; from awrsr.cli import main; sys.exit(main())"
    out = python(run, *TINY_FIT, "--output_dir", str(tmp_path / "cli"))
    assert "flush_denormal" not in out, out
    machine = json.loads((tmp_path / "cli" / "metrics.json").read_text())["machine"]
    assert machine["subnormals"] == SUBNORMALS_FLUSHED and machine["torch_threads"] == 2
    started = "import sys, torch; torch.set_num_threads(2); torch.ones(1 << 20) + 0\n" + run  # threads keeping them
    out = python(started, *TINY_FIT, "--output_dir", str(tmp_path / "late"))
    assert "note: train.flush_denormal=true holds on only some of torch's CPU threads" in " ".join(out.split()), out
    assert json.loads((tmp_path / "late" / "metrics.json").read_text())["machine"]["subnormals"] == SUBNORMALS_MIXED


@pytest.mark.parametrize("flush, recorded", [(True, SUBNORMALS_FLUSHED), (False, SUBNORMALS_KEPT)])
def test_a_fit_flushes_as_configured_and_records_it(tmp_path, flush, recorded):
    torch.set_flush_denormal(not flush)  # the caller's mode, the other one
    try:
        result = fit(**tiny_run_config(tmp_path / "run", max_epochs=1, num_threads=1, flush_denormal=flush),
                     console=Console(quiet=True))
        assert result.metrics["machine"]["subnormals"] == recorded  # on its one thread, this one
        assert flushed_share() == float(not flush)  # and the caller's mode is back
    finally:
        torch.set_flush_denormal(False)

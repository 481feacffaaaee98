"""Flushing subnormal floats: under GNU OpenMP (the pip wheels' runtime) each of torch's CPU
threads keeps the mode it started with, so a run must set it before torch starts them, leave the
process in one mode, and record what held on every thread."""

import json
import subprocess
import sys

import pytest
import torch
from rich.console import Console

from awrsr.train.process_state import SUBNORMALS_FLUSHED, SUBNORMALS_KEPT, SUBNORMALS_MIXED, flushed_share
from awrsr.workflows import fit
from conftest import tiny_run_config

pytestmark = pytest.mark.skipif(not torch.set_flush_denormal(False), reason="torch cannot flush subnormals on this CPU")

TINY_FIT = ["fit", "--data.synthetic.num_users", "60", "--model.hidden_size", "8", "--train.max_epochs", "1",
            "--train.num_threads", "2", "--train.progress_bar", "false"]
# The CLI's fit, then the process's mode after it: its calling thread's, and every thread's
CLI_FIT = ("import sys; from awrsr.cli import main; code = main()\n"
           "from awrsr.train.process_state import flushed_share, subnormal_mode\n"
           "print('after:', flushed_share(), subnormal_mode()); sys.exit(code)\n")
STARTED_KEEPING = "import torch; torch.set_num_threads(2); torch.ones(1 << 20) + 0\n"  # torch's threads start, keeping them


def python(code: str, *argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def threads_keep_their_mode() -> bool:
    """Whether torch's threads keep the mode they started with, as GNU OpenMP's do (LLVM's and
    Intel's OpenMP give them the calling thread's at each parallel region): read without the
    probe under test, in a new process, whose threads have not started yet."""
    share = python(STARTED_KEEPING + "torch.set_flush_denormal(True); tiny = torch.ones(1 << 18, dtype=torch.int32)"
                   ".view(torch.float32); print(float(((tiny + tiny).view(torch.int32) == 0).float().mean()))")
    return float(share) < 1


def test_the_share_of_flushing_threads_is_read_thread_by_thread(threads_keep_their_mode):
    if not threads_keep_their_mode:
        pytest.skip("this OpenMP runtime gives its threads the calling thread's mode: they cannot differ")
    out = python(  # a new process: in this one, torch's threads have long started in whatever mode
        "import torch\n"
        "from awrsr.train.process_state import flushed_share, subnormal_mode\n"
        "torch.set_num_threads(2)\n"
        "print(flushed_share(), flushed_share(pool=True), subnormal_mode())\n"  # the pool starts keeping them
        "torch.set_flush_denormal(True)\n"  # this thread flushes now, the other does not
        "print(flushed_share(), flushed_share(pool=True), subnormal_mode())\n"
    )
    assert out.splitlines() == [f"0.0 0.0 {SUBNORMALS_KEPT}", f"1.0 0.5 {SUBNORMALS_MIXED}"]


def test_the_command_line_flushes_on_every_thread_and_leaves_the_process_in_one_mode(tmp_path, threads_keep_their_mode):
    """awrsr fit sets train.flush_denormal before torch's first parallel operation, so every CPU
    thread flushes. The threads it started stay so after it (they cannot be set back), and so
    does the calling thread, with the caller's 4 threads as with the fit's 2: the threads started
    after take its mode. (Where OpenMP hands the calling thread's mode on, it is simply given
    back.) A process whose threads started before is told so, recorded as it ran, and given back
    its mode."""
    four = "import torch; torch.set_num_threads(4)\n"  # the caller's; the fit's train.num_threads is 2
    out = python(four + CLI_FIT, *TINY_FIT, "--output_dir", str(tmp_path / "cli"))
    after = f"after: 1.0 {SUBNORMALS_FLUSHED}" if threads_keep_their_mode else f"after: 0.0 {SUBNORMALS_KEPT}"
    assert "flush_denormal" not in out and after in out, out
    machine = json.loads((tmp_path / "cli" / "metrics.json").read_text())["machine"]
    assert machine["subnormals"] == SUBNORMALS_FLUSHED and machine["torch_threads"] == 2
    if not threads_keep_their_mode:
        return
    out = python(STARTED_KEEPING + CLI_FIT, *TINY_FIT, "--output_dir", str(tmp_path / "late"))
    assert "note: train.flush_denormal=true holds on only some of torch's CPU threads" in " ".join(out.split()), out
    assert f"after: 0.0 {SUBNORMALS_KEPT}" in out, out
    assert json.loads((tmp_path / "late" / "metrics.json").read_text())["machine"]["subnormals"] == SUBNORMALS_MIXED


@pytest.mark.parametrize("flush, recorded", [(True, SUBNORMALS_FLUSHED), (False, SUBNORMALS_KEPT)])
def test_a_fit_flushes_as_configured_and_records_it(tmp_path, flush, recorded):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the caller's one thread, this one: no thread of torch's pool keeps another mode
    torch.set_flush_denormal(not flush)  # the caller's mode, the other one
    try:
        result = fit(**tiny_run_config(tmp_path / "run", max_epochs=1, num_threads=1, flush_denormal=flush),
                     console=Console(quiet=True))
        assert result.metrics["machine"]["subnormals"] == recorded
        assert flushed_share() == float(not flush)  # and the caller's mode is back
    finally:
        torch.set_num_threads(threads)

"""Parts from other packages (entry-point group awrsr.parts): found, recorded, refused clearly.

A plugin registers into the process's registries for good, so whatever registers one runs in a
child process; the in-process tests swap the entry points and the loader's state only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from awrsr import plugins
from awrsr.errors import PluginError

ROOT = Path(__file__).resolve().parents[1]

# A refinement that sharpens each row of A (squares it and normalises again): zeros stay zeros
# and rows still sum to one, so it keeps every invariant the shared tests check.
SHARPEN = '''
from awrsr.nn.refine.base import REFINEMENTS, Refinement


class Sharpen(Refinement):
    window_invariant = True

    def forward(self, weights, mask):
        squared = weights * weights
        return squared / squared.sum(-1, keepdim=True).clamp_min(1e-30)


@REFINEMENTS.register("sharpen")
def build_sharpen(cfg, block_index):
    return Sharpen()
'''


def install_plugin(site: Path, module: str, source: str, entry: str | None = None) -> None:
    """A distribution ``<module>`` 0.1 in ``site`` (a directory on PYTHONPATH): its module, and
    the dist-info that importlib.metadata reads its entry point from."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[awrsr.parts]\n{entry or module} = {module}\n")


def run(site: Path, *args: str, disabled: bool = False, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env.pop(plugins.DISABLE_VARIABLE, None)
    if disabled:
        env[plugins.DISABLE_VARIABLE] = "1"
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def awrsr(site: Path, *argv: str, disabled: bool = False) -> subprocess.CompletedProcess:
    return run(site, "-c", "import sys; from awrsr.cli import main; sys.exit(main())", *argv, disabled=disabled)


def test_a_plugin_part_is_registered_after_the_shipped_ones_and_can_be_turned_off(tmp_path):
    install_plugin(tmp_path / "site", "sharpen_plugin", SHARPEN, entry="sharpen")
    code = ("from awrsr.nn.refine import REFINEMENTS; from awrsr.plugins import load_plugins; "
            "print(REFINEMENTS.get('sharpen').__name__); print(REFINEMENTS.names()); print(load_plugins())")
    loaded = run(tmp_path / "site", "-c", code)  # the first thing asked is the plugin's part
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.splitlines() == ["build_sharpen", "['add', 'none', 'sharpen', 'simp', 'stoc', 'value']",
                                          "{'sharpen': 'sharpen-plugin 0.1'}"]
    off = run(tmp_path / "site", "-c", code.replace("REFINEMENTS.get('sharpen').__name__", "'sharpen' in REFINEMENTS"),
              disabled=True)
    assert off.stdout.splitlines() == ["False", "['add', 'none', 'simp', 'stoc', 'value']", "{}"]


def test_fit_trains_a_plugin_refinement_records_it_and_its_model_needs_it_to_load(tmp_path):
    site = tmp_path / "site"
    install_plugin(site, "sharpen_plugin", SHARPEN, entry="sharpen")
    run_dir = tmp_path / "run"
    fit = awrsr(site, "fit", "--config", "configs/sasrec/synthetic.yaml", "--model.refine", "sharpen",
                "--train.max_epochs", "10", "--train.num_threads", "1", "--train.progress_bar", "false",
                "--output_dir", str(run_dir))
    assert fit.returncode == 0, fit.stderr[-2000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["plugins"] == {"model.refine": "sharpen-plugin 0.1"}  # which package made which part
    assert metrics["test"]["hr@10"] > metrics["popularity"]["test"]["hr@10"]
    assert "refined by sharpen" in fit.stdout
    version = awrsr(site, "--version")
    assert version.stdout.rstrip().endswith(", plugin sharpen (sharpen-plugin 0.1))"), version.stdout

    again = awrsr(site, "evaluate", str(run_dir), "--num_threads", "1")
    assert again.returncode == 0, again.stderr[-2000:]
    without = awrsr(site, "evaluate", str(run_dir), disabled=True)
    assert without.returncode == 2 and "Traceback" not in without.stderr
    assert ("unknown refinement 'sharpen'; known: add, none, simp, stoc, value; "
            "a part of another package needs that package installed (a plugin)") in without.stderr


@pytest.mark.parametrize("source, why", [
    ("import a_module_nobody_has\n", "ModuleNotFoundError: No module named 'a_module_nobody_has'"),
    (SHARPEN.replace('register("sharpen")', 'register("simp")'), "ValueError: refinement 'simp' is registered twice"),
])
def test_a_plugin_that_cannot_load_is_named_without_a_traceback(tmp_path, source, why):
    install_plugin(tmp_path / "site", "bad_plugin", source)
    message = (f"awrsr: error: plugin 'bad_plugin' (bad_plugin, from bad-plugin 0.1) failed to load: {why}; "
               f"uninstall it, or set {plugins.DISABLE_VARIABLE}=1 to load no plugin\n")
    # a name awrsr does not ship loads the plugins
    failed = awrsr(tmp_path / "site", "fit", "--config", "configs/sasrec/synthetic.yaml", "--model.refine", "sharpen",
                   "--output_dir", str(tmp_path / "run"))
    assert (failed.returncode, failed.stderr) == (2, message)
    assert not (tmp_path / "run").exists()


def test_a_broken_plugin_stops_nothing_that_does_not_need_it(tmp_path):
    install_plugin(tmp_path / "site", "bad_plugin", "import a_module_nobody_has\n")
    # a run of awrsr's own parts never imports a plugin
    shipped = awrsr(tmp_path / "site", "fit", "--config", "configs/sasrec/synthetic.yaml", "--print_config")
    assert shipped.returncode == 0 and "refine: none" in shipped.stdout, shipped.stderr
    # --version lists the plugins, so it loads them, unless they are turned off
    assert "failed to load" in awrsr(tmp_path / "site", "--version").stderr
    assert awrsr(tmp_path / "site", "--version", disabled=True).returncode == 0


def test_the_shared_tests_pick_up_a_plugin_part(tmp_path):
    install_plugin(tmp_path / "site", "sharpen_plugin", SHARPEN, entry="sharpen")
    collected = run(tmp_path / "site", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                    "tests/models/test_invariants.py", "-k", "sharpen")
    assert collected.returncode == 0, collected.stdout[-2000:]
    count = int(collected.stdout.strip().splitlines()[-1].split("/")[0])  # "N/M tests collected (K deselected) in ..."
    assert count >= 20, collected.stdout[-500:]


def _entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=plugins.ENTRY_POINT_GROUP)


def test_a_failed_plugin_fails_every_later_lookup_and_none_load_when_disabled(monkeypatch):
    monkeypatch.setattr(plugins, "_loaded", None)
    monkeypatch.setattr(plugins, "_failure", None)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [_entry("gone", "awrsr_no_such_module_anywhere")])
    monkeypatch.delenv(plugins.DISABLE_VARIABLE, raising=False)
    for _ in range(2):  # not only the first lookup: a later one would otherwise go on without the plugin
        with pytest.raises(PluginError, match=r"^plugin 'gone' \(awrsr_no_such_module_anywhere\) failed to load: ModuleNotFoundError"):
            plugins.load_plugins()

    monkeypatch.setattr(plugins, "_loaded", None)
    monkeypatch.setattr(plugins, "_failure", None)
    for value in ("1", "true", "yes"):
        monkeypatch.setenv(plugins.DISABLE_VARIABLE, value)
        assert plugins.plugins_disabled()
    assert plugins.load_plugins() == {}
    for value in ("", "0", "false", "no"):
        monkeypatch.setenv(plugins.DISABLE_VARIABLE, value)
        assert not plugins.plugins_disabled()


def test_a_plugin_that_exits_is_named_and_an_interrupt_while_loading_leaves_nothing_half_loaded(monkeypatch, tmp_path):
    (tmp_path / "awrsr_exiting_plugin.py").write_text("raise SystemExit('bye')\n")
    (tmp_path / "awrsr_interrupted_plugin.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(plugins.DISABLE_VARIABLE, raising=False)
    monkeypatch.setattr(plugins, "_failure", None)
    monkeypatch.setattr(plugins, "_loaded", None)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [_entry("interrupted", "awrsr_interrupted_plugin")])
    with pytest.raises(KeyboardInterrupt):
        plugins.load_plugins()
    assert plugins._loaded is None and plugins._failure is None  # the next lookup tries them all again
    monkeypatch.setattr(plugins, "entry_points", lambda group: [_entry("exiting", "awrsr_exiting_plugin")])
    with pytest.raises(PluginError, match=r"^plugin 'exiting' \(awrsr_exiting_plugin\) failed to load: SystemExit: bye;"):
        plugins.load_plugins()

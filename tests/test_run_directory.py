"""The run directory's lock and guards, without training: what a failed fit removes, which files
count as a run's, and that the lock is one per directory and re-entrant within a process."""

import pytest
from filelock import Timeout

from awrsr.errors import ArtifactError
from awrsr.run_directory import (
    RUN_LOCK_FILE, discard_unwritten_run, first_missing_folder, refuse_foreign_files, refuse_to_replace, run_lock,
)


def test_the_first_missing_folder_is_the_outermost_one_a_fit_creates(tmp_path):
    assert first_missing_folder(tmp_path / "a" / "b" / "c") == tmp_path / "a"
    assert first_missing_folder(tmp_path / "a") == tmp_path / "a"
    assert first_missing_folder(tmp_path) is None


def test_an_unwritten_run_takes_away_the_folders_the_fit_made_and_no_other(tmp_path):
    mine = tmp_path / "mine"  # the user's own empty folder, there before the fit
    mine.mkdir()
    run_dir = mine / "runs" / "run"
    created = first_missing_folder(run_dir)
    assert created == mine / "runs"
    with run_lock(run_dir):  # makes the folders and its lock file, as fit does
        pass
    assert [p.name for p in run_dir.iterdir()] == [RUN_LOCK_FILE]
    discard_unwritten_run(run_dir, created)
    assert not (mine / "runs").exists()
    assert mine.is_dir()  # empty, but not the fit's to remove


def test_a_folder_that_was_there_before_is_left_with_its_lock_file(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()  # the user made it: created is None
    with run_lock(run_dir):
        pass
    discard_unwritten_run(run_dir, first_missing_folder(run_dir))
    assert [p.name for p in run_dir.iterdir()] == [RUN_LOCK_FILE]


def test_a_run_that_wrote_something_is_left_as_it_is(tmp_path):
    run_dir = tmp_path / "runs" / "run"
    created = first_missing_folder(run_dir)
    with run_lock(run_dir):
        pass
    (run_dir / "config.yaml").write_text("model: {}\n")
    discard_unwritten_run(run_dir, created)
    assert sorted(p.name for p in run_dir.iterdir()) == [RUN_LOCK_FILE, "config.yaml"]


@pytest.mark.parametrize("name", [
    "config.yaml", "vocab.json", "model.safetensors", "test_ranks.npy", "metrics.csv", "history.csv",
    "checkpoints",
])
def test_every_file_a_run_writes_is_refused_when_the_user_holds_it(tmp_path, name):
    path = tmp_path / name
    path.mkdir() if name == "checkpoints" else path.write_text("the user's\n")
    with pytest.raises(ArtifactError, match=rf"holds files that awrsr did not write and a run would replace \({name}\)"):
        refuse_foreign_files(tmp_path)


@pytest.mark.parametrize("mark", ["checkpoints/run.yaml", "metrics.json", "checkpoints/last.ckpt"])
def test_a_run_of_awrsr_is_known_by_its_run_record_metrics_or_checkpoint(tmp_path, mark):
    (tmp_path / mark).parent.mkdir(exist_ok=True)
    (tmp_path / mark).write_text("")
    (tmp_path / "config.yaml").write_text("model: {}\n")
    refuse_foreign_files(tmp_path)  # awrsr's own: refuse_to_replace judges it
    if mark == "checkpoints/run.yaml":  # a run that failed before finishing: replaced without asking
        refuse_to_replace(tmp_path)


def test_the_lock_is_one_per_directory_and_reentrant_in_a_process(tmp_path):
    """compare and tune hold a run's lock around fit, which takes it again: a second lock object
    on the same file would wait for the first forever (or time out)."""
    run_dir = tmp_path / "run"
    outer = run_lock(run_dir)
    assert outer.lock_file == str((run_dir / RUN_LOCK_FILE).resolve())
    with outer:
        inner = run_lock(run_dir)
        inner.acquire(blocking=False)  # a Timeout here would be a lock held against itself
        inner.release()
        assert outer.is_locked
    assert not outer.is_locked


def test_another_directory_has_its_own_lock(tmp_path):
    with run_lock(tmp_path / "a"):
        with run_lock(tmp_path / "b").acquire(blocking=False):
            pass
    with pytest.raises(Timeout):  # sanity: a lock held elsewhere is seen (a process of its own)
        _held_by_another_process(tmp_path / "c")


def _held_by_another_process(run_dir):
    import multiprocessing

    holding, release = multiprocessing.Event(), multiprocessing.Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(run_dir, holding, release))
    holder.start()
    try:
        assert holding.wait(30)
        run_lock(run_dir).acquire(blocking=False)
    finally:
        release.set()
        holder.join(30)


def _hold(run_dir, holding, release):
    from filelock import FileLock

    with FileLock(run_dir.resolve() / RUN_LOCK_FILE):
        holding.set()
        release.wait(30)

"""Where a run may be written: the lock a training process holds on its directory, and the
guards that keep a fresh ``fit`` from replacing what it must not (a finished or interrupted run,
the user's own files, a tune's or a comparison's runs, the training data itself)."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock

from awrsr.data import DataConfig
from awrsr.errors import ArtifactError, ConfigError
from awrsr.files import user_path
from awrsr.infer.artifact import METRICS_FILE, REQUIRED_FILES, collection_kind
from awrsr.train.trainer import CHECKPOINT_DIR, HISTORY_FILE, LAST_CHECKPOINT, LOG_FILE, RUN_RECORD

TEST_RANKS_FILE = "test_ranks.npy"
RUN_LOCK_FILE = ".awrsr.lock"


def run_lock(run_dir: Path) -> FileLock:
    """The lock a process holds while it trains into ``run_dir`` (a hidden file in it). The
    operating system drops it if the process dies, and it is re-entrant within a process
    (compare and tune hold it around ``fit``). It relies on the file system's locks: on a
    network file system without them (NFS mounted ``nolock``), machines do not see each
    other's locks."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return FileLock(run_dir.resolve() / RUN_LOCK_FILE, is_singleton=True)


def first_missing_folder(path: Path) -> Path | None:
    """The outermost folder of ``path`` (itself included) that does not exist yet: the one that
    creating ``path`` creates first. None if ``path`` exists."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            return missing
        missing = folder
    return missing


def discard_unwritten_run(run_dir: Path, created: Path | None) -> None:
    """Remove ``run_dir`` if it holds nothing but its lock file, and its parents up to ``created``
    (the outermost folder this process made for it, see ``first_missing_folder``) while they are
    empty: a run that failed before writing anything (a bad path, a bad config) leaves no empty
    folders behind. Nothing is removed when the process created none of them."""
    if created is None:
        return
    try:
        if [p.name for p in run_dir.iterdir()] != [RUN_LOCK_FILE]:
            return
        (run_dir / RUN_LOCK_FILE).unlink()
        for folder in (run_dir, *run_dir.parents):
            if any(folder.iterdir()):
                break
            folder.rmdir()
            if folder == created:
                break
    except OSError:  # another process began writing there, or removed it already: leave it
        pass


# What a run writes into its directory: a fresh fit replaces these names and nothing else.
RUN_FILES = (METRICS_FILE, *REQUIRED_FILES, TEST_RANKS_FILE, LOG_FILE, HISTORY_FILE, CHECKPOINT_DIR)


def refuse_to_replace(run_dir: Path) -> None:
    """An ArtifactError if ``run_dir`` holds a run that a fresh fit would delete. A run that failed
    before finishing (no metrics, no checkpoint) is replaced without asking, as a repeated command
    expects; files of the user's are refused earlier (``refuse_foreign_files``)."""
    if (run_dir / METRICS_FILE).is_file():
        held = "a finished run"
        if (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file():  # its checkpoints can take it further
            held += (" (to train it for longer, --resume true with a larger train.max_epochs, patience or max_time; "
                     "resume=True in Python)")
    elif (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file():
        held = "an interrupted run (continue it with --resume true, resume=True in Python)"
    else:
        return
    raise ArtifactError(
        f"{run_dir} holds {held}; choose another output_dir, or pass --overwrite true (overwrite=True in Python) "
        "to delete it and start afresh"
    )


def refuse_collection(run_dir: Path) -> None:
    """An ArtifactError if ``run_dir`` is a tune's or a comparison's output directory: a run
    written beside their runs would pass for one of them, or hide them from ``plot`` and ``compare``."""
    kind = collection_kind(run_dir) if run_dir.is_dir() else None
    if kind is not None:
        raise ArtifactError(f"{run_dir} is {kind}; a run cannot be written into it: choose another output_dir")


def refuse_foreign_files(run_dir: Path) -> None:
    """An ArtifactError if ``run_dir`` holds files with the names a run writes but no run record
    (which every run of awrsr writes first), metrics or checkpoint: they are the user's, and a fit
    would replace them."""
    marks = (Path(CHECKPOINT_DIR) / RUN_RECORD, METRICS_FILE, Path(CHECKPOINT_DIR) / LAST_CHECKPOINT)
    if not run_dir.is_dir() or any((run_dir / mark).is_file() for mark in marks):
        return  # awrsr's own run (refuse_to_replace words a finished or interrupted one)
    taken = [name for name in RUN_FILES if (run_dir / name).exists()]
    if taken:
        raise ArtifactError(
            f"{run_dir} holds files that awrsr did not write and a run would replace ({', '.join(taken)}); "
            "choose another output_dir, or pass --overwrite true to replace them"
        )


def check_data_outside_run(data: DataConfig, run_dir: Path) -> None:
    """A ConfigError if the training data is one of the files the run writes (a log named
    history.csv in output_dir, say): the run would overwrite its own data."""
    if data.path is None:
        return
    source = user_path(data.path)
    if source.exists() and (
        any(source.resolve() == (run_dir / name).resolve() for name in RUN_FILES)
        or source.resolve().is_relative_to((run_dir / CHECKPOINT_DIR).resolve())  # deleted with the old checkpoints
    ):
        raise ConfigError(
            f"data.path {data.path} is a file that the run writes into output_dir {run_dir}; "
            "move the data or choose another output_dir"
        )

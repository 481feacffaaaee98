"""On a lent GPU machine: pack the runs that have not finished into files the device tool brings
back, so that a lease's unfinished runs continue elsewhere instead of being lost.

A lease is shorter than an ML-1M run, and the tool returns at most 8 files of at most 16 MiB each
(64 MiB together), so a run's whole directory (two full checkpoints) rarely fits. What a run needs
to continue is its last checkpoint (weights, optimiser, RNG and callbacks' state), the weights of
its best epoch so far (all that a run reads from ``best.ckpt``: the selected weights and their
epoch), ``checkpoints/run.yaml`` and its log. ``best.ckpt`` is therefore packed slim, without the
optimiser state, about a third of its size. Runs are packed most-trained first into tar files of at
most ``--file-limit`` bytes each, at most ``--max-files`` files and ``--budget`` bytes in all;
what does not fit is named and left out. Runs that an earlier call of the lease already brought
back (listed in ``ROOT/.returned``, which ``monitor.sh`` extends with ``ROOT/.packed-last`` when a
call ends) go after the others, so that a second call brings back the runs the first had no room for.

Unpacked under a root on any machine (``tar xf gpu-partial-1.tar -C runs/gpu17/a``), each run
continues from its last epoch with ``awrsr compare``, ``benchmarks/compare_queue.py`` (both resume
an interrupted run by themselves) or ``awrsr fit --resume true``, on a GPU or on a CPU.

A checkpoint may be written while it is read: a file that does not load, or a best checkpoint newer
than the last one (Lightning writes best.ckpt after validation, last.ckpt at the epoch's end), means
the run is between two writes; it is tried again a few times, then left for the next pack.

    python3 benchmarks/device/pack_partial.py /tmp/gpu "$OUT" --budget 50000000
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from awrsr.files import write_atomic  # noqa: E402

MIB = 1024 * 1024
# tar's own bytes: a 512-byte header per member, data padded to 512 bytes, and the closing blocks
# with the padding to a whole record (10,240 bytes), at most 2 records
TAR_HEADER, TAR_END = 512, 20480
SKIPPED_NAMES = {".awrsr.lock", "best.ckpt", "last.ckpt"}  # the lock stays; the checkpoints are added apart
RETURNED, LAST_PACK = ".returned", ".packed-last"  # under the root: runs earlier calls brought back; this pack's


@dataclass
class PartialRun:
    path: Path  # relative to the root
    epochs: int  # completed epochs in last.ckpt
    files: dict[str, bytes]  # archive name -> contents

    @property
    def size(self) -> int:
        return sum(TAR_HEADER + -(-len(data) // 512) * 512 for data in self.files.values())


def unfinished_runs(root: Path) -> list[Path]:
    """Run directories under ``root`` with a last checkpoint and no metrics.json (not finished)."""
    return sorted(
        last.parent.parent for last in root.rglob("checkpoints/last.ckpt")
        if not (last.parent.parent / "metrics.json").is_file()
    )


def _load(data: bytes) -> dict:
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def snapshot(run_dir: Path, root: Path, tries: int = 3, wait_s: float = 2.0) -> PartialRun | None:
    """A consistent copy of what ``run_dir`` needs to continue, or None if it stayed mid-write."""
    checkpoints = run_dir / "checkpoints"
    relative = run_dir.relative_to(root)
    for attempt in range(tries):
        if attempt:
            time.sleep(wait_s)
        try:
            last_bytes = (checkpoints / "last.ckpt").read_bytes()  # last first: see the module docstring
            best_bytes = (checkpoints / "best.ckpt").read_bytes()
            last, best = _load(last_bytes), _load(best_bytes)
        except Exception:  # noqa: BLE001 - a half-written or vanished file: try again
            continue
        if int(best["epoch"]) > int(last["epoch"]):
            continue  # a new best was written after the last checkpoint was read
        slim = io.BytesIO()
        torch.save({"epoch": best["epoch"], "state_dict": best["state_dict"]}, slim)
        files = {
            str(relative / "checkpoints" / "last.ckpt"): last_bytes,
            str(relative / "checkpoints" / "best.ckpt"): slim.getvalue(),
        }
        for path in sorted(run_dir.rglob("*")):
            if path.is_file() and path.name not in SKIPPED_NAMES:
                files[str(relative / path.relative_to(run_dir))] = path.read_bytes()
        return PartialRun(relative, int(last["epoch"]) + 1, files)
    return None


def plan_files(
    runs: list[PartialRun], file_limit: int, max_files: int, budget: int, returned: frozenset[str] = frozenset(),
) -> tuple[list[list[PartialRun]], list[PartialRun]]:
    """Runs into at most ``max_files`` bins of at most ``file_limit`` bytes, ``budget`` in all;
    those not ``returned`` before first, then most-trained first, each into the first bin it fits.
    Returns the bins and the runs left out."""
    bins: list[list[PartialRun]] = []
    left_out: list[PartialRun] = []
    total = 0  # bytes of every bin so far, closing blocks included
    for run in sorted(runs, key=lambda r: (str(r.path) in returned, -r.epochs, str(r.path))):
        target = next((b for b in bins if sum(r.size for r in b) + run.size + TAR_END <= file_limit), None)
        cost = run.size + (TAR_END if target is None else 0)
        if (target is None and (len(bins) == max_files or run.size + TAR_END > file_limit)) or total + cost > budget:
            left_out.append(run)
            continue
        if target is None:
            bins.append(target := [])
        target.append(run)
        total += cost
    return bins, left_out


def write_tar(runs: list[PartialRun], out: Path) -> None:
    """An uncompressed tar of ``runs``, written atomically (a reader sees all of it or none)."""
    def write(temporary: Path) -> None:
        with tarfile.open(temporary, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for run in runs:
                for name, data in run.files.items():
                    info = tarfile.TarInfo(name)
                    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                    tar.addfile(info, io.BytesIO(data))

    write_atomic(out, write)


def pack(root: Path, out_dir: Path, file_limit: int, max_files: int, budget: int, prefix: str = "gpu-partial") -> list[Path]:
    """Pack the unfinished runs under ``root`` into ``out_dir/<prefix>-K.tar``; replaces the files
    of an earlier pack. Prints what was packed and what was not."""
    runs, unsettled = [], []
    for run_dir in unfinished_runs(root):
        if (run := snapshot(run_dir, root)) is not None:
            runs.append(run)
        else:
            unsettled.append(run_dir.relative_to(root))
    returned = root / RETURNED
    bins, left_out = plan_files(
        runs, file_limit, max_files, budget, frozenset(returned.read_text().split()) if returned.is_file() else frozenset(),
    )
    (root / LAST_PACK).write_text("".join(f"{r.path}\n" for group in bins for r in group))
    written = []
    for i, group in enumerate(bins, 1):
        write_tar(group, out := out_dir / f"{prefix}-{i}.tar")
        written.append(out)
    for stale in out_dir.glob(f"{prefix}-*.tar"):  # a run finished since the last pack: fewer files
        if stale not in written:
            stale.unlink()
    packed = ", ".join(f"{r.path} ({r.epochs} ep, {r.size / MIB:.1f} MiB)" for group in bins for r in group)
    print(f"partial runs packed into {len(written)} file(s): {packed or 'none'}")
    if left_out:
        print("left out (no room): " + ", ".join(f"{r.path} ({r.size / MIB:.1f} MiB)" for r in left_out))
    if unsettled:
        print("left out (checkpoint being written): " + ", ".join(map(str, unsettled)))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="where the queues train (their runs are ROOT/.../seed-N)")
    parser.add_argument("out_dir", type=Path, help="where to write the tar files ($OUT)")
    parser.add_argument("--file-limit", type=int, default=16 * MIB - 64 * 1024, help="bytes per file (default just under 16 MiB)")
    # 8 files come back: gpu-runs.tgz, these, and one slot for a file being written when a call is cut off
    parser.add_argument("--max-files", type=int, default=6, help="files at most (default 6)")
    parser.add_argument("--budget", type=int, default=56 * MIB, help="bytes in all (64 MiB less the other files)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root}: no such directory")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    pack(args.root, args.out_dir, args.file_limit, args.max_files, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())

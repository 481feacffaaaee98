"""Several ``awrsr compare`` comparisons as one queue, trained by K worker processes on one machine.

Small sequential recommenders leave a large GPU mostly idle, so a GPU session trains many runs at
once. Each worker walks every (comparison, seed, variant) run in order and trains those that no
other worker holds (the run locks of ``awrsr compare``); it never waits for a run another worker
has, so no worker idles while runs remain. Within each comparison seeds are the outer loop
(the comparisons come in the order given), so that with fewer workers than runs, a queue cut short
has whole seeds of the comparisons it reached. Afterwards each comparison is tabulated like
``awrsr compare --report_only``, and the exit status is 1 if any run failed or is unfinished.

    python benchmarks/compare_queue.py \\
        refine-ml-1m=configs/sasrec/ml-1m.yaml:simp,value,add \\
        stosa-beauty=configs/stosa/beauty.yaml:configs/compare/stosa.yaml \\
        --workers 14 --root runs/gpu --set train.num_threads=1 --seeds 42 43 44

A comparison is NAME=CONFIG:VARIANTS, VARIANTS being values of model.refine (the base is "none")
or a variants file (configs/compare/*.yaml). Runs go to ROOT/NAME/<variant>/seed-<seed>, worker
logs to ROOT/logs/. Finished runs are reused, so an interrupted queue resumes. The tables are the
same as ``awrsr compare CONFIG --variants ... --set ... --output_dir ROOT/NAME --report_only true``.
``--skip PATTERN ...`` leaves out runs too slow for the time at hand (e.g. a GPU lease); they stay
in the tables as unfinished. Give the comparisons first: --seeds and --skip take every word after them.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from filelock import FileLock, Timeout  # noqa: E402
from rich.console import Console  # noqa: E402

from awrsr.errors import AwrsrError  # noqa: E402
from awrsr.experiments.compare import (  # noqa: E402
    check_variant, load_variants_file, run_compare, split_references, variant_options,
)
from awrsr.experiments.runs import DataFingerprints, check_earlier_runs, parse_sets, run_or_reuse  # noqa: E402
from awrsr.infer.artifact import METRICS_FILE  # noqa: E402


def parse_comparison(spec: str) -> tuple[str, str, list[str] | dict]:
    name, sep, rest = spec.partition("=")
    config, sep2, variants = rest.rpartition(":")
    if not (sep and sep2 and name and config and variants):
        raise SystemExit(f"expected NAME=CONFIG:VARIANTS, got {spec!r}")
    chosen = load_variants_file(variants) if variants.endswith((".yaml", ".yml")) else variants.split(",")
    return name, config, chosen


def queue(comparisons: list[str], seeds: list[int], skip: Sequence[str] = ()) -> list[tuple[str, str, str, dict]]:
    """(comparison, config, variant, options) for every run, comparison by comparison and within
    each seeds outermost, less the runs whose "comparison/variant" matches a ``skip`` pattern
    (fnmatch: runs too slow for the time at hand)."""
    runs = []
    for spec in comparisons:
        name, config, chosen = parse_comparison(spec)
        base, options = variant_options(chosen, "model.refine", "none")
        options, _ = split_references(options, base)
        kept = {v: o for v, o in options.items() if not any(fnmatch.fnmatchcase(f"{name}/{v}", p) for p in skip)}
        runs += [(name, config, variant, {**opts, "train.seed": seed}) for seed in seeds for variant, opts in kept.items()]
    return runs


def work(args: argparse.Namespace) -> int:
    console = Console(width=120)
    extra = parse_sets(args.set)
    failures = 0
    fingerprints = DataFingerprints()
    for name, config, variant, options in queue(args.comparisons, args.seeds, args.skip):
        run_dir = args.root / name / variant / f"seed-{options['train.seed']}"
        # A run that failed in one worker of this queue is not tried again by the others (a late
        # divergence would cost K times its device time); the next queue tries it afresh. The
        # worker holds the run's claim from before it reads the mark until after it writes one, so
        # that no other worker reads "not failed" while the failure is being recorded.
        failed_mark = args.failed_dir / f"{name}__{variant}__seed-{options['train.seed']}"
        claim = FileLock(failed_mark.with_name(failed_mark.name + ".claim"))
        try:
            claim.acquire(blocking=False)
        except Timeout:  # another worker of this queue is on it
            continue
        try:
            if not failed_mark.exists() and not train_one(config, {**extra, **options}, run_dir, console, fingerprints, args.worker):
                failed_mark.touch()
                failures += 1
        finally:
            claim.release()
    print(f"@@ {args.worker} queue done ({failures} failed)", flush=True)
    return 1 if failures else 0


def train_one(config: str, options: dict, run_dir: Path, console: Console, fingerprints: DataFingerprints, worker: str) -> bool:
    """Train (or reuse) one run; False if it failed, which must not stop the queue."""
    start = time.time()
    try:
        metrics = run_or_reuse(config, options, run_dir, console, wait=False, fingerprints=fingerprints)
    except Exception:  # a bad config, a diverged model
        print(f"@@ {worker} failed {run_dir}\n{traceback.format_exc()}", flush=True)
        return False
    if metrics is not None and time.time() - start > 5:
        print(f"@@ {worker} trained {run_dir} in {time.time() - start:.0f} s", flush=True)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("comparisons", nargs="+", help="NAME=CONFIG:VARIANTS")
    parser.add_argument("--root", type=Path, default=Path("runs/queue"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44],
                        help="give the comparisons before this option, which takes every number after it")
    parser.add_argument("--set", action="append", default=[], help="an extra option for every run, key=value (repeatable)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--skip", nargs="+", action="extend", default=[], metavar="PATTERN",
                        help='leave out runs whose "comparison/variant" matches, e.g. "neighbours-beauty/ac-*"')
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # set in the worker processes
    parser.add_argument("--failed-dir", type=Path, help=argparse.SUPPRESS)  # this queue's failed runs, one file each
    args = parser.parse_args()
    for pattern in args.skip:  # a comparison given after --skip would be read as a pattern
        if "/" not in pattern or "=" in pattern:
            parser.error(f"--skip {pattern!r}: expected COMPARISON/VARIANT patterns; give the comparisons before --skip")
    if args.worker:
        return work(args)
    extra = parse_sets(args.set)
    try:
        for name, config, variant, options in queue(args.comparisons, args.seeds[:1], args.skip):
            check_variant(config, {**extra, **options}, f"{name}/{variant}")  # a clear error now (a skipped one never runs)
        # a finished run on other data than the data now, or an interrupted one of other options: an error before any trains
        check_earlier_runs(
            ((config, {**extra, **options}, args.root / name / variant / f"seed-{options['train.seed']}")
             for name, config, variant, options in queue(args.comparisons, args.seeds, args.skip)),
            DataFingerprints(),
        )
    except AwrsrError as err:
        raise SystemExit(f"compare_queue: {err}") from None
    (args.root / "logs").mkdir(parents=True, exist_ok=True)
    # a new folder, never one left by an earlier queue of the same pid (marks in it would skip runs)
    failed_dir = Path(tempfile.mkdtemp(prefix=f"q{os.getpid()}-", suffix="-failed", dir=args.root / "logs"))
    workers = []
    for i in range(args.workers):
        # Named after this queue's process too: two queues may share a root (their run locks keep
        # them apart), and their workers must not write one log. Logs are appended to, never cut.
        name = f"q{os.getpid()}-w{i + 1}"
        log = open(args.root / "logs" / f"{name}.log", "a")
        command = [sys.executable, __file__, "--worker", name, "--failed-dir", str(failed_dir), *sys.argv[1:]]
        workers.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
        time.sleep(2)  # stagger the start, so the workers take different runs
    failed = sum(worker.wait() != 0 for worker in workers)
    # The workers' claim files mean nothing once they are done; the failure marks are the queue's
    # record, so the folder stays only if it holds one.
    try:
        for claim in failed_dir.glob("*.claim"):
            claim.unlink(missing_ok=True)
        if not any(failed_dir.iterdir()):
            failed_dir.rmdir()
    except OSError as err:  # removed or unreadable meanwhile: the tables below matter more
        print(f"could not tidy {failed_dir}: {err}")
    for spec in args.comparisons:
        name, config, chosen = parse_comparison(spec)
        try:
            run_compare(config, chosen, args.seeds, args.root / name, extra=extra, report_only=True)
        except AwrsrError as err:
            print(f"{name}: {err}")
    def missing(skip: list[str]) -> list[str]:
        return [
            f"{name}/{variant}/seed-{options['train.seed']}" for name, _, variant, options in queue(args.comparisons, args.seeds, skip)
            if not (args.root / name / variant / f"seed-{options['train.seed']}" / METRICS_FILE).is_file()
        ]

    unfinished = missing(args.skip)
    if args.skip:
        skipped = sorted(set(missing([])) - set(unfinished))
        print(f"left out by --skip, not trained: {', '.join(skipped) or 'none'}")
    if failed or unfinished:
        print(f"{failed} worker(s) had failed runs (see {args.root / 'logs'}); unfinished: {', '.join(unfinished) or 'none'}")
    return 1 if failed or unfinished else 0


if __name__ == "__main__":
    sys.exit(main())

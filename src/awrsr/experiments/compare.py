"""``awrsr compare``: the base model and each variant with the same hyper-parameters over several
seeds, in the layout of the AWRSR paper's Table 2 (mean ± std, relative improvement, paired
p-value)."""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from rich.console import Console
from rich.markup import escape

from awrsr.config_types import check_flag, checked_console, is_whole_number
from awrsr.errors import AwrsrError, ConfigError, DataError
from awrsr.experiments.by_length import DEFAULT_EDGES, bucket_labels, write_length_tables
from awrsr.experiments.runs import (
    RESOLVED_SECTIONS, DataFingerprints, check_collection_directory, check_earlier_runs, data_config_key, finished_run, describe_runs, option_args,
    left_out_runs, pairs_across_machines, progress_sentence, run_device, run_or_reuse, run_status, run_subnormals,
)
from awrsr.experiments.stats import summary_against
from awrsr.files import csv_text, output_directory, read_text, relative_to_cwd, user_path, write_text_atomic
from awrsr.strict_yaml import VARIANTS_FILE, check_unique_keys, refuse_other_kind

COMPARE_TO = "compare_to"  # in a variants file: the variant this one's improvement and p-value refer to
TABLE_METRICS = ["hr@1", "hr@5", "ndcg@5", "ndcg@10"]  # Recall@k = HR@k with one target per user
LABELS = {"hr@1": "Recall@1", "hr@5": "Recall@5", "ndcg@5": "NDCG@5", "ndcg@10": "NDCG@10"}


@dataclass
class Cell:
    mean: float
    std: float
    improvement: float  # % over its reference's mean on the shared seeds (nan for a reference)
    p_value: float  # paired over the shared seeds against its reference (nan for a reference)
    runs: int  # seeds behind mean and std
    pairs: int  # seeds shared with the reference, behind improvement and p-value
    is_reference: bool = False


DEFAULT_BASE = "none"  # the base's value of model.refine; for a variants file: its entry `base`, else the first


def variant_options(
    variants: Sequence[str] | Mapping[str, Mapping[str, Any]], key: str, base: str
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The base's name and each variant's options, base first. ``variants`` is either values of
    ``key`` (``["simp", "value"]`` -> ``{"simp": {key: "simp"}, ...}``, base ``{key: base}``) or
    named option sets (``{"fparec": {"model.attention": "positional", ...}}``), whose base is
    ``base`` if named there and the first entry otherwise."""
    if isinstance(variants, Mapping):
        if not variants:
            raise ConfigError("the variants file names no variant")
        named = {str(name): dict(options or {}) for name, options in variants.items()}
        check_variant_names(list(named))
        if len(named) == 1:
            raise ConfigError(
                f"the variants file names only {next(iter(named))!r}; a comparison needs a base and at least one variant"
            )
        if base != DEFAULT_BASE and base not in named:  # a misspelt base would silently invert the table
            raise ConfigError(f"base {base!r} is not a variant of the variants file ({', '.join(named)})")
        base = base if base in named else next(iter(named))
        return base, {base: named[base], **named}
    values = {value_name(base): base}
    for value in variants:  # the base among them, or a value given twice, is trained once
        values.setdefault(value_name(value), value)
    if len(values) == 1:
        raise ConfigError(
            f"variants: none besides the base ({key}: {value_name(base)}), which is always trained; "
            f"name the values of {key} to compare with it, e.g. --variants [simp,value,add]"
        )
    check_variant_names(list(values))
    return value_name(base), {name: {key: value} for name, value in values.items()}


def value_name(value: Any) -> str:
    """A variant's name for a value of ``key``: as it is written in YAML (``true``, not ``True``)."""
    return json.dumps(value) if isinstance(value, bool) or value is None else str(value)


# A variant's name is its directory under output_dir: one plain path component.
_UNSAFE_NAME = re.compile(r"[/\\\x00]|^\.\.?$|^$")
_NAME_MAX = 255  # bytes in one path component (ext4, XFS, APFS)


def check_variant_names(names: Sequence[str]) -> None:
    """Each name becomes ``output_dir/<name>``: a name with a path separator (a file path given as
    a value of ``key``, say) would write outside it or nest runs, so it is refused; so is one
    longer than a directory name may be."""
    for name in names:
        if len(os.fsencode(name)) > _NAME_MAX:  # found by mkdir only after the runs before it trained
            raise ConfigError(
                f"variant name {name[:40]!r}... is {len(os.fsencode(name))} bytes; a directory name under output_dir "
                f"holds at most {_NAME_MAX}; shorten it, or name the variant in a variants file"
            )
        if _UNSAFE_NAME.search(name):
            raise ConfigError(
                f"variant name {name!r} cannot be a directory name under output_dir (no '/', '\\', '.' or '..'); "
                "name the variants in a variants file, e.g. books: {data.path: /data/books.csv}"
            )


def seed_list(seeds: object) -> list[int]:
    """``seeds`` as a list of ints (numpy ints included), or a ConfigError naming what was given."""
    wrong = ConfigError(f"seeds must be a list of integers, e.g. [42, 43, 44], got {seeds!r:.60}")
    if isinstance(seeds, (str, bytes, numbers.Integral)):
        raise wrong
    try:
        values = list(seeds)  # type: ignore[call-overload]
    except TypeError:
        raise wrong from None
    if not all(is_whole_number(seed) for seed in values):
        raise wrong
    return [int(seed) for seed in values]


def check_seeds(seeds: Sequence[int], options: Mapping[str, Mapping[str, Any]], extra: Mapping[str, Any]) -> None:
    """Seeds are the comparison's own axis: at least one, each once and in numpy's range, and none
    set by a variant or by ``--set`` (``extra``)."""
    if not seeds:
        raise ConfigError("seeds: none given; a comparison needs at least one, e.g. --seeds [42,43,44]")
    repeated = sorted(seed for seed, count in Counter(seeds).items() if count > 1)
    if repeated:
        raise ConfigError(f"seeds: {', '.join(map(str, repeated))} given twice; each seed is one paired run")
    for seed in seeds:
        if not 0 <= seed < 2**32:
            raise ConfigError(f"seeds: each must be in 0..{2**32 - 1}, got {seed}")
    for name, variant in options.items():
        if "train.seed" in variant:
            raise ConfigError(f"variant {name!r} sets train.seed; the comparison's seeds are given by --seeds")
    if "train.seed" in extra:
        raise ConfigError("--set train.seed: --seeds sets it too; give it in one place only")


def load_variants_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """A YAML mapping of variant names to option sets (see configs/compare/)."""
    try:
        text = read_text(user_path(path))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the variants file ({err.strerror or err})") from None
    check_unique_keys(text, str(path))  # names the file and line of a YAML error, or of a repeated key
    variants = yaml.safe_load(text)
    refuse_other_kind(variants, path, VARIANTS_FILE)  # a base config or a search space in its place
    if not isinstance(variants, dict) or not all(isinstance(o, dict) or o is None for o in variants.values()):
        raise ConfigError(f"{path}: expected a mapping of variant names to option mappings, e.g. parec: {{model.attention: positional}}")
    return variants


def check_variant(config: str, options: dict[str, Any], name: str) -> dict[str, Any]:
    """A clear error now, not hours into a comparison, for a variant whose parts do not fit; its
    resolved fit arguments otherwise."""
    from awrsr.models import check_parts_fit
    from awrsr.run_config import load_fit_config

    try:
        resolved = load_fit_config(["--config", config, *option_args(options)])
        check_parts_fit(resolved["model"], resolved["train"])
    except ConfigError as err:
        raise ConfigError(f"variant {name!r}: {err}") from None
    needed = sorted({int(m.split("@")[1]) for m in TABLE_METRICS} - set(resolved["evaluation"].ks))
    if needed:  # the table's columns are Recall@1, Recall@5, NDCG@5 and NDCG@10
        raise ConfigError(
            f"variant {name!r}: evaluation.ks {resolved['evaluation'].ks} lacks {needed}, which the table reports; "
            "add them to evaluation.ks in the base config (e.g. ks: [1, 5, 10, 20])"
        )
    return resolved


def check_variants_differ(resolved: Mapping[str, Mapping[str, Any]], references: Mapping[str, str]) -> None:
    """A ConfigError for two variants that differ only in options neither run reads
    (``model.mask_prob`` on SASRec, say), or not at all (``0.01`` and ``0.010``): they would train
    the same model twice and, against each other, report +0%. Every pair is checked, a variant
    against its reference first."""
    from awrsr.run_config import changed_fields, inert_options

    names = list(resolved)
    pairs = [(name, reference) for name, reference in references.items() if name != reference]
    pairs += [
        (name, other) for i, name in enumerate(names) for other in names[:i]
        if references.get(name) != other and references.get(other) != name  # not a pair above
    ]
    for name, other in pairs:
        mine, theirs = resolved[name], resolved[other]
        stored = {section: asdict(theirs[section]) for section in RESOLVED_SECTIONS}
        changed = [key for key in changed_fields(stored, {s: mine[s] for s in RESOLVED_SECTIONS}) if key != "train.seed"]
        inert = set(inert_options(mine["model"], mine["train"])) | set(inert_options(theirs["model"], theirs["train"]))
        if not changed:  # --base 0.10 with --variants [0.1], say
            raise ConfigError(f"variant {name!r} is the same configuration as {other!r}")
        if all(c in inert for c in changed):
            raise ConfigError(
                f"variant {name!r} differs from {other!r} only in {', '.join(changed)}, which neither model reads; "
                "it would train the same model"
            )


def run_compare(
    config: str, variants: Sequence[str] | Mapping[str, Mapping[str, Any]], seeds: Sequence[int],
    output_dir: str | Path, key: str = "model.refine", base: str = "none",
    extra: dict[str, Any] | None = None, console: Console | None = None, report_only: bool = False,
    length_edges: Sequence[int] = DEFAULT_EDGES,
) -> dict[str, dict[str, Cell]]:
    """Train the base and every variant for every seed, then tabulate (see ``variant_options``).

    Run directories are ``output_dir/<variant>/seed-<seed>``; finished runs are reused, so an
    interrupted comparison resumes where it stopped, and several processes (or machines sharing
    the directory) may each run a part of it. ``report_only`` trains nothing and tabulates the
    finished runs, naming the missing ones.
    """
    check_flag(report_only, "report_only")
    if isinstance(config, Path):
        config = str(config)
    if isinstance(variants, (str, bytes)):  # "simp" would be taken letter by letter
        raise ConfigError(f"variants must be a list of names or a mapping of named option sets, got the string {variants!r}")
    seeds = seed_list(seeds)
    console = checked_console(console, "compare")
    output_dir = output_directory(output_dir, needs="a comparison needs a directory")
    check_collection_directory(output_dir, "comparison")
    try:  # now, not after hours of training
        bucket_labels(length_edges)
    except ValueError as err:
        raise ConfigError(f"length_edges: {err}") from None
    base, options = variant_options(variants, key, base)
    options, references = split_references(options, base)
    check_seeds(seeds, options, extra or {})
    dead = [option for option in (extra or {}) if all(option in variant for variant in options.values())]
    if dead:  # a variant's own value wins, so --set would be ignored by every run
        raise ConfigError(f"--set {dead[0]}: every variant sets it (their own value wins); give it in one place only")
    label = "model" if isinstance(variants, Mapping) else key
    # every variant must build, and differ from its reference in effect, before any trains
    resolved = {}
    for name, variant in options.items():
        try:
            resolved[name] = check_variant(config, {**(extra or {}), **variant}, name)
        except ConfigError as err:
            if name == base and base == DEFAULT_BASE and key != "model.refine":
                # the base defaults to model.refine's "none", which another key rarely takes
                raise ConfigError(f"{err} (the base's value of {key}: give it with --base)") from None
            raise
    check_variants_differ(resolved, references)
    if not report_only:  # a variant's own data file, found missing only after the runs before it trained
        for name, fit_args in resolved.items():
            path = fit_args["data"].path
            if path is not None and not user_path(path).exists():
                relative = relative_to_cwd(path)
                # a variant's own value wins over --set, so only the base config's path is mended there
                mend = "mend the variant's data.path" if "data.path" in options[name] else "give it with --set [data.path=FILE]"
                raise DataError(
                    f"variant {name!r}: data file not found: {path} ({f'{relative}; ' if relative else ''}{mend})"
                )

    def run_options(name: str, seed: int) -> dict[str, Any]:
        return {**(extra or {}), **options[name], "train.seed": seed}

    runs = [(name, seed) for name in options for seed in seeds]
    results: dict[tuple[str, int], dict] = {}
    fingerprints = DataFingerprints()  # a finished run is reused only on the data read now
    if report_only:
        for name, seed in runs:
            metrics = finished_run(config, run_options(name, seed), output_dir / name / f"seed-{seed}", fingerprints)[1]
            if metrics is not None:
                results[name, seed] = metrics
    else:
        check_earlier_runs(
            ((config, run_options(name, seed), output_dir / name / f"seed-{seed}") for name, seed in runs), fingerprints,
        )
        # Runs another process is training are left for last, then awaited: several processes
        # may share one comparison directory without training anything twice.
        for wait in (False, True):
            for name, seed in [r for r in runs if r not in results]:
                console.rule(f"{name}, seed {seed}")
                metrics = run_or_reuse(
                    config, run_options(name, seed), output_dir / name / f"seed-{seed}", console, wait,
                    fingerprints=fingerprints,
                )
                if metrics is not None:
                    results[name, seed] = metrics
                else:
                    console.print("[dim]another process is training it; coming back to it last[/dim]")
    records = [
        {"variant": name, "seed": seed, "run_dir": str(output_dir / name / f"seed-{seed}"), "metrics": results[name, seed],
         "data": resolved[name]["data"]}  # as given now: the by-length table reads it again
        for name, seed in runs if (name, seed) in results
    ]
    missing = [(name, seed, run_status(output_dir / name / f"seed-{seed}")) for name, seed in runs if (name, seed) not in results]
    so_far = progress_sentence(
        (f"{name} seed {seed}", output_dir / name / f"seed-{seed}", status, resolved[name]["train"])
        for name, seed, status in missing
    )
    if not records:
        raise ConfigError(f"{output_dir}: no finished run of this comparison yet. {describe_runs(missing)} {so_far}".rstrip())
    check_one_dataset_per_data_config(records, resolved)
    table = tabulate(records, base, references=references)
    # A complete table is never replaced by a report of runs not all finished (another variant or
    # seed asked for), nor by a table that leaves out runs it holds (fewer --seeds): the new one is
    # printed from a scratch directory instead.
    complete = (output_dir / "table.md").is_file() and "Partial table" not in (output_dir / "table.md").read_text()
    left_out = left_out_runs(output_dir / "runs.csv", ("variant", "seed"), {(r["variant"], str(r["seed"])) for r in records})
    with tempfile.TemporaryDirectory() as scratch:
        tables_dir = Path(scratch) if complete and (report_only and missing or left_out) else output_dir
        write_tables(records, table, tables_dir, label, references, base, length_edges, missing, console)
    if so_far:  # on the screen only: the table files record results, not how far a run has come
        console.print(so_far, markup=False, highlight=False, soft_wrap=True)
    if tables_dir != output_dir:
        which = (f" of runs this one leaves out ({', '.join(f'{v} seed {s}' for v, s in left_out[:3])}"
                 f"{', ...' if len(left_out) > 3 else ''})" if left_out else ", which this partial one would replace")
        console.print(
            f"[yellow]printed, not written: {escape(str(output_dir))} holds a complete table (table.md){escape(which)}; "
            "ask for the variants and seeds it was made of to write it again, or use another output_dir[/yellow]"
        )
    return table


def write_tables(
    records: list[dict], table: dict[str, dict[str, Cell]], output_dir: Path, label: str, references: dict[str, str],
    base: str, length_edges: Sequence[int], missing: Sequence[tuple[str, int, str]], console: Console,
) -> None:
    """The comparison's tables (``write_outputs``, ``write_length_tables``) in ``output_dir``, and printed."""
    write_outputs(records, table, output_dir, label, base, {k: v for k, v in references.items() if v not in (k, base)}, missing)
    # soft_wrap and no markup: a Markdown table must come out copyable, never cut at the terminal width
    console.print((output_dir / "table.md").read_text(), soft_wrap=True, markup=False, highlight=False)
    try:  # where the differences are: by the users' history length (reads each dataset once)
        console.print(
            write_length_tables(records, references, base, output_dir, length_edges, missing=missing).read_text(),
            soft_wrap=True, markup=False, highlight=False,
        )
    except (AwrsrError, OSError) as err:  # e.g. tabulating on a machine without the data file
        for stale in (output_dir / "by_length.md", output_dir / "by_length.csv"):  # never beside a newer table
            stale.unlink(missing_ok=True)
        console.print(f"[yellow]no table by history length: {escape(str(err))}[/yellow]")


def check_one_dataset_per_data_config(records: list[dict], resolved: Mapping[str, Mapping[str, Any]]) -> None:
    """A ConfigError if runs whose variants read the same data config were trained on different
    data (the file changed between them): the table would pair them as if they were not."""
    groups: dict[str, dict[str, list[str]]] = {}
    for r in records:
        key = data_config_key(resolved[r["variant"]]["data"])
        sha = str((r["metrics"].get("dataset") or {}).get("sha256", "not recorded"))
        groups.setdefault(key, {}).setdefault(sha, []).append(f"{r['variant']} seed {r['seed']}")
    for by_sha in groups.values():
        if len(by_sha) > 1:
            listed = "; ".join(f"{', '.join(runs)} on {sha[:12]}" for sha, runs in by_sha.items())
            raise ConfigError(
                f"these runs read the same data config but were trained on different data (the file changed "
                f"between them): {listed}. Delete the stale runs to train them again, or use another output_dir"
            )


def split_references(options: dict[str, dict[str, Any]], base: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each variant's run options without ``compare_to``, and the variant each one is compared
    with (``compare_to`` if given, else the base; variants that are their own reference are
    references, e.g. each block count's base in the Table 3 layout)."""
    runs, references = {}, {}
    for name, variant in options.items():
        variant = dict(variant)
        reference = str(variant.pop(COMPARE_TO, base))
        if reference not in options:
            raise ConfigError(f"variant {name!r}: {COMPARE_TO} {reference!r} is not a variant ({', '.join(options)})")
        runs[name], references[name] = variant, reference
    return runs, references


def tabulate(
    records: list[dict], base: str, metrics: Sequence[str] = TABLE_METRICS, references: dict[str, str] | None = None,
) -> dict[str, dict[str, Cell]]:
    """Mean ± std per variant, and improvement and paired p-value against its reference (the base
    unless ``references`` names another)."""
    by_variant: dict[str, dict[int, dict]] = {}
    for r in records:
        by_variant.setdefault(r["variant"], {})[r["seed"]] = r["metrics"]["test"]
    table = {}
    for variant, runs in by_variant.items():
        reference = (references or {}).get(variant, base)
        base_runs = by_variant.get(reference, {})
        # Improvement and p-value on the seeds both sides have: with every run finished these
        # are all the seeds; in a partial table they stay paired.
        paired = sorted(set(runs) & set(base_runs)) if variant != reference else []
        row = {}
        for m in metrics:
            cell = summary_against({s: r[m] for s, r in runs.items()}, {s: base_runs[s][m] for s in paired})
            row[m] = Cell(*cell, len(runs), len(paired), is_reference=variant == reference)
        table[variant] = row
    return table


def write_outputs(
    records: list[dict], table: dict[str, dict[str, Cell]], output_dir: Path, key: str, base: str,
    other_references: dict[str, str] | None = None, missing: Sequence[tuple[str, int, str]] = (),
) -> None:
    """runs.csv, table.csv and table.md; ``other_references`` names the variants compared with
    something other than ``base`` (shown as "variant (vs reference)"), ``missing`` the runs not
    finished yet (a partial table says so)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    metric_names = sorted({m for r in records for m in r["metrics"]["test"]})
    rows = [["variant", "seed", "best_epoch", "epochs", "mean_epoch_s", *[f"test_{m}" for m in metric_names],
             "device", "subnormals", "code_version", "run_dir"]]
    for r in records:
        m = r["metrics"]
        rows.append([
            r["variant"], r["seed"], m["selection"]["best_epoch"], m["selection"]["epochs_trained"],
            m["time"]["mean_epoch_s"], *[m["test"][n] for n in metric_names],
            run_device(m) or "",  # runs made before the record existed: unknown
            run_subnormals(m) or "",
            m.get("code_version", ""),
            r["run_dir"],
        ])
    write_text_atomic(output_dir / "runs.csv", csv_text(rows))
    metrics = list(next(iter(table.values())))
    rows = [["variant", "runs", "pairs", *[f"{m}_{part}" for m in metrics for part in ("mean", "std", "improvement_pct", "p_value")]]]
    for variant, row in table.items():
        first = next(iter(row.values()))
        rows.append([variant, first.runs, first.pairs,
                     *[v for m in metrics for v in (row[m].mean, row[m].std, row[m].improvement, row[m].p_value)]])
    write_text_atomic(output_dir / "table.csv", csv_text(rows))
    seeds = sorted({r["seed"] for r in records})
    switches = {r["metrics"]["protocol"]["filter_seen"] for r in records}
    seen = "seen items filtered" if switches == {True} else "seen items NOT filtered" if switches == {False} else "MIXED seen-item filtering"
    lines = [
        f"Test metrics at the best validation epoch (full ranking, {seen}), mean ± std over seeds {seeds}; "
        f"improvement in % over the base's mean on the seeds both have, paired t-test p-value over those seeds ({key}; "
        "a variant marked 'vs X' is compared with X instead). s / epoch: these runs' mean training "
        "seconds per epoch (it depends on the machine and on what ran beside them).",
        "",
        "| " + key + " | " + " | ".join(LABELS.get(m, m) for m in metrics) + " | seeds | s / epoch |",
        "|---" * (len(metrics) + 3) + "|",
    ]
    epoch_seconds: dict[str, list[float]] = {}
    for r in records:
        epoch_seconds.setdefault(r["variant"], []).append(r["metrics"]["time"]["mean_epoch_s"])
    for variant, row in table.items():
        first = next(iter(row.values()))
        reference = other_references.get(variant, "the base") if other_references else "the base"
        cells = []
        for m in metrics:
            c = row[m]
            cell = f"{c.mean:.4f} ± {c.std:.4f}" if c.runs > 1 else f"{c.mean:.4f}"  # no spread from one run
            if c.pairs:
                p = "n/a" if math.isnan(c.p_value) else f"{c.p_value:.3f}"  # under two pairs, or no variance
                gain = "n/a" if math.isnan(c.improvement) else f"{c.improvement:+.2f}%"  # a reference mean of 0
                cell += f" ({gain}, p={p})"
            elif not c.is_reference:
                cell += f" (no seed shared with {reference})"
            cells.append(cell)
        label = f"{variant} (vs {other_references[variant]})" if variant in (other_references or {}) else variant
        counted = str(first.runs) if first.is_reference or first.pairs == first.runs else f"{first.runs} ({first.pairs} paired)"
        seconds = sum(epoch_seconds[variant]) / len(epoch_seconds[variant])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {counted} | {seconds:.1f} |")
    # Notes on mixed tables: on several machines, or with subnormals flushed and kept on the CPU
    # (a GPU computes them at full speed), the s / epoch column compares machines, not models; and
    # floating point may differ between code versions even where the model does not.
    cpu_runs = [r for r in records if run_device(r["metrics"]) == "cpu"]
    for what, of_run, runs in (("trained on several machines", run_device, records),
                               ("on the CPU with subnormal floats treated differently, as train.flush_denormal sets",
                                run_subnormals, cpu_runs),
                               ("made by several code versions", lambda m: m.get("code_version"), records)):
        counts = Counter(of_run(r["metrics"]) or "not recorded" for r in runs)
        if len(counts) > 1:
            lines += ["", f"Runs {what} (runs.csv names each run's): "
                      + ", ".join(f"{value} ({count})" for value, count in sorted(counts.items())) + "."]
    crossed = pairs_across_machines(records, other_references or {}, base)
    if crossed:
        lines += ["", crossed]
    if missing:
        lines += [
            "",
            f"Partial table: {len(missing)} run(s) not finished. {describe_runs(missing)} Improvements and "
            "p-values compare only the seeds a variant shares with its reference (paired), so they may "
            "differ from the ratio of the means shown.",
        ]
    write_text_atomic(output_dir / "table.md", "\n".join(lines) + "\n")

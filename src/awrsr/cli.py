"""The ``awrsr`` command. Every subcommand is a typed function; jsonargparse turns the signatures
into options and YAML configs (``--config``), and rejects unknown keys.

    awrsr fit --config configs/sasrec/ml-1m.yaml [--data.path FILE] [--train.max_epochs 50]
    awrsr evaluate runs/sasrec-ml-1m [--split valid]
    awrsr recommend runs/sasrec-ml-1m --history 1193,661,914 --k 10
    awrsr recommend runs/sasrec-ml-1m --input events.csv --output recs.parquet   # every user of a log
    awrsr serve runs/sasrec-ml-1m --port 8000          # the same over HTTP (pip install "awrsr[serve]")
    awrsr stats --data.path ../shared/data/beauty/Beauty.txt
    awrsr tune configs/sasrec/beauty.yaml configs/search/awrsr-grid.yaml --output_dir runs/tune-beauty
    awrsr compare configs/sasrec/beauty.yaml --variants [simp,value,add] --seeds [42,43,44] --output_dir runs/compare-beauty
    awrsr plot runs/compare-beauty
    awrsr --version                                    # the code, torch and Python, for a bug report
"""

# No `from __future__ import annotations`: jsonargparse reads these annotations at run time.
import argparse
import json
import os
import platform
import re
import sys
from typing import TYPE_CHECKING, List, Literal, Optional, Union

import yaml
from jsonargparse import CLI

from awrsr.data import DataConfig
from awrsr.data.config import Format
from awrsr.errors import AwrsrError, ConfigError, UnknownItemError, out_of_memory_detail
from awrsr.files import read_text, user_path
from awrsr.eval import EvalConfig
from awrsr.models import ModelConfig
from awrsr.run_config import SuggestingParser, debugging
from awrsr.strict_yaml import FIT_KEYS, check_config_files, install_strict_yaml_loader
from awrsr.train import TrainConfig

if TYPE_CHECKING:
    from awrsr.data.vocab import Vocabulary


def fit(
    data: DataConfig = DataConfig(),
    model: ModelConfig = ModelConfig(),
    train: TrainConfig = TrainConfig(),
    evaluation: EvalConfig = EvalConfig(),
    output_dir: str = "runs/latest",
    resume: bool = False,
    overwrite: bool = False,
) -> None:
    """Train a model, select it on validation, score the test set once and save the artifact.

    Args:
        data: where the interactions come from and how they are cleaned (no path: built-in synthetic data).
        model: the backbone and its parts.
        train: loss, optimiser, early stopping, seed.
        evaluation: metric cut-offs and the seen-item filter.
        output_dir: the run directory; it becomes the saved artifact.
        resume: continue the run in output_dir from its last checkpoint (same config; only the
            budget train.max_epochs/max_time/patience/val_every, the machine options
            train.num_threads/flush_denormal/accelerator/progress_bar and data.path, for a moved file whose
            fingerprint is checked, may change).
        overwrite: start afresh in an output_dir that holds a finished or interrupted run, deleting
            it; without this, such a directory is refused and the run in it is kept.
    """
    from awrsr import workflows

    workflows.fit(data, model, train, evaluation, output_dir, resume=resume, overwrite=overwrite)


def evaluate(
    artifact: str,
    data_path: Optional[str] = None,
    split: Literal["test", "valid"] = "test",
    filter_seen: Optional[bool] = None,
    by_length: bool = False,
    num_threads: Optional[int] = None,
    flush_denormal: bool = True,
) -> None:
    """Score a saved model again by full ranking on its dataset.

    Args:
        artifact: the run directory written by ``awrsr fit``.
        data_path: the data file, if it moved since training or the run was trained from a data
            frame (it must be the same data).
        split: which held-out item to rank.
        filter_seen: override the stored seen-item filter.
        by_length: also print the metrics per bucket of the users' history length.
        num_threads: CPU threads for torch (default: torch's, every core), e.g. 1 beside other jobs.
        flush_denormal: flush subnormal floats to zero on the CPU, as train.flush_denormal (faster
            for a trained refinement; false keeps them).
    """
    from awrsr import workflows

    _cpu_options(num_threads, flush_denormal)
    workflows.evaluate(artifact, data_path=data_path, split=split, filter_seen=filter_seen, by_length=by_length)


def _cpu_options(num_threads: Optional[int], flush_denormal: Optional[bool] = None) -> None:
    """--num_threads (None leaves torch's default, every core) and --flush_denormal (None leaves
    torch's mode) for this command, set before torch starts its CPU threads: each keeps the
    flushing of subnormal floats it started with."""
    if num_threads is not None and num_threads < 1:
        raise AwrsrError(f"--num_threads must be >= 1, got {num_threads}")
    import torch

    if num_threads is not None:
        torch.set_num_threads(num_threads)
    if flush_denormal is not None:
        torch.set_flush_denormal(flush_denormal)


def _id_list(text: str, option: str) -> list[str]:
    """Item ids from comma-separated text (``1193,661,914``), or from a JSON list for ids that hold
    commas or spaces (``'["a,b", " c"]'``), each as written."""
    if not text.strip().startswith("["):
        ids = [token.strip() for token in text.strip().removesuffix(",").split(",")] if text.strip() else []
        if "" in ids:  # a data file's empty id is an error too; skipped, a typo would go unseen (a last comma is fine)
            raise AwrsrError(f"{option}: id {ids.index('') + 1} of {text!r} is empty; give comma-separated item ids, e.g. 1193,661,914")
        return ids
    try:
        ids = json.loads(text)
    except json.JSONDecodeError as err:
        raise AwrsrError(f"{option}: not a JSON list of ids ({err})") from None
    if not isinstance(ids, list) or not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in ids):
        raise AwrsrError(f"{option}: a JSON list must hold ids (strings or integers), got {text!r}")
    return [str(x) for x in ids]


def recommend(
    artifact: str,
    history: str = "",
    k: int = 10,
    include_seen: bool = False,
    ignore_unknown: bool = False,
    exclude: str = "",
    device: str = "cpu",
    json_output: bool = False,
    input: Optional[str] = None,
    output: Optional[str] = None,
    input_format: Optional[Format] = None,
    user_col: Optional[str] = None,
    item_col: Optional[str] = None,
    time_col: Optional[str] = None,
    separator: Optional[str] = None,
    has_header: Optional[bool] = None,
    batch_size: Optional[int] = None,
    num_threads: Optional[int] = None,
    flush_denormal: bool = True,
) -> None:
    """Top-k next items for a history of original item ids, oldest first, or for every user of a log.

    With --history, print one list. With --input, read an interaction log (the model's own training
    format and columns unless overridden, each user's interactions in time order, no k-core filter)
    and write every user's top k, one row per (user, rank, item, score), to --output.

    Args:
        artifact: the run directory written by ``awrsr fit``.
        history: comma-separated item ids, e.g. 1193,661,914, or a JSON list for ids with commas: '["a,b","c"]'.
        k: how many items to return.
        include_seen: allow items already in the history.
        ignore_unknown: skip ids the model does not know instead of failing.
        exclude: item ids never to recommend, as --history takes them; ids the model does not know are skipped, and named.
        device: where to score: cpu, cuda, cuda:N, mps, or auto (CUDA, else MPS, else the CPU).
        json_output: print JSON instead of a table (--history only).
        input: an interaction log (csv, tsv, parquet, whitespace or movielens file): recommend for each of its users.
        output: where --input's recommendations go; the suffix picks the format: .csv, .tsv, .parquet,
            .jsonl or .ndjson (default: CSV on standard output).
        input_format: the log's format (default: its suffix's for .csv, .tsv and .parquet files, else
            the model's training format).
        user_col: the log's user column (default: as the model was trained).
        item_col: the log's item column (default: as the model was trained).
        time_col: the log's timestamp column (default: as the model was trained; "" for none: file order).
        separator: the log's csv/tsv separator (default: as the model was trained; "" for the format's own).
        has_header: whether the log's first line names its columns (default: as the model was trained).
        batch_size: users scored at once with --input (default 1024).
        num_threads: CPU threads for torch (default: torch's, every core), e.g. 1 beside other jobs.
        flush_denormal: flush subnormal floats to zero on the CPU, as train.flush_denormal (faster
            for a trained refinement; false keeps them).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from awrsr.infer import Recommender

    items, excluded = _id_list(history, "--history"), _id_list(exclude, "--exclude")
    _cpu_options(num_threads, flush_denormal)
    reading = dict(
        format=input_format, user_col=user_col, item_col=item_col, time_col=time_col, separator=separator,
        has_header=has_header,
    )
    if input is not None:
        if items:
            raise AwrsrError("give either --history or --input, not both")
        if json_output:
            raise AwrsrError("--json_output is for --history; with --input, write JSON lines with --output recs.jsonl")
        _recommend_log(artifact, input, output, k, include_seen, ignore_unknown, excluded, device, reading, 1024 if batch_size is None else batch_size)
        return
    given = [
        f"--{name}" for name, value in {"output": output, **reading, "batch_size": batch_size}.items() if value is not None
    ]
    if given:
        raise AwrsrError(f"{', '.join(given)} only appl{'y' if len(given) > 1 else 'ies'} with --input (a log to score)")
    if not items:
        raise AwrsrError("--history is empty; give comma-separated item ids, e.g. 1193,661,914, or a log with --input")
    recommender = Recommender.load(artifact, device=device)
    try:
        recs = recommender.recommend(
            items, k=k, exclude_seen=not include_seen, unknown="ignore" if ignore_unknown else "error", exclude=excluded,
        )
    except UnknownItemError as err:
        spaced = next((x for x in err.unknown if len(x.split()) > 1 and all(part in recommender.vocab for part in x.split())), None)
        if spaced is None:
            raise
        raise UnknownItemError(err.unknown, hint=f" (ids are comma-separated: --history {','.join(spaced.split())})") from None
    unknown = [x for x in items if x not in recommender.vocab]  # left out with --ignore_unknown
    if unknown:
        Console(stderr=True).print(f"[yellow]left out {_unknown_ids(unknown)}[/yellow]")
    _note_unknown_excluded(excluded, recommender.vocab)
    if json_output:
        print(json.dumps([{"item": r.item, "score": r.score} for r in recs]))
        return
    table = Table(title=f"top {len(recs)} after {len(items) - len(unknown)} item(s)")
    table.add_column("rank", justify="right")
    table.add_column("item")
    table.add_column("score", justify="right")
    for rank, rec in enumerate(recs, 1):
        table.add_row(str(rank), escape(str(rec.item)), f"{rec.score:.4f}")  # an id like "[red]" is no markup
    Console().print(table)
    if len(recs) < k:  # as for --input: say why the list is short
        Console(stderr=True).print(
            f"[yellow]only {len(recs)} of the model's items are neither in the history nor excluded[/yellow]"
        )


def _users(count: int) -> str:
    """``1 user``, ``1,234 users``."""
    return f"{count:,} user{'s' * (count != 1)}"


def _unknown_ids(unknown: list) -> str:
    """"N id(s) the model does not know: a, b, ..." (markup escaped), for a note."""
    from rich.markup import escape

    shown = ", ".join(map(str, unknown[:10])) + (", ..." if len(unknown) > 10 else "")
    return f"{len(unknown)} id(s) the model does not know: {escape(shown)}"


def _note_unknown_excluded(excluded: list, vocab: "Vocabulary") -> None:
    """Say which --exclude ids the model does not know: it never recommends them, so excluding
    them does nothing, but a mistyped id would otherwise leave its item in the list unnoticed."""
    from rich.console import Console

    unknown = [x for x in excluded if x not in vocab]
    if unknown:
        Console(stderr=True).print(f"[yellow]--exclude names {_unknown_ids(unknown)} (it only recommends items it knows)[/yellow]")


def _recommend_log(
    artifact: str, input: str, output: Optional[str], k: int, include_seen: bool, ignore_unknown: bool,
    exclude: list, device: str, reading: dict, batch_size: int,
) -> None:
    from rich.console import Console
    from rich.markup import escape

    from awrsr.infer import Recommender, load_artifact
    from awrsr.infer.artifact import recorded_data_file
    from awrsr.infer.batch import score_log_file

    loaded = load_artifact(artifact)  # score_log_file checks output before the log is read and scored
    result = score_log_file(
        Recommender.from_artifact(loaded, device=device), loaded.config.get("data"), input, output, k=k,
        exclude_seen=not include_seen, unknown="ignore" if ignore_unknown else "error", exclude=exclude,
        batch_size=batch_size, reading=reading,
        training_file=recorded_data_file(loaded.metrics),
    )
    if output is None:
        sys.stdout.write(result.frame.write_csv())
    _note_unknown_excluded(exclude, loaded.vocab)
    console = Console(stderr=True)
    served = result.frame.get_column("user").n_unique()
    console.print(f"top {min(k, len(loaded.vocab))} for {_users(served)} ({result.frame.height:,} rows) -> {escape(output or 'standard output')}")
    if served < result.users:
        console.print(f"[yellow]{_users(result.users - served)} had every item seen or excluded and got none[/yellow]")
    if result.skipped_users:
        examples = ", ".join(map(str, result.skipped_users[:5])) + (", ..." if len(result.skipped_users) > 5 else "")
        has = "has" if len(result.skipped_users) == 1 else "have"
        console.print(f"[yellow]{_users(len(result.skipped_users))} {has} no item the model knows and got none: {escape(examples)}[/yellow]")
    if result.unknown_interactions:
        console.print(
            f"[yellow]left out {result.unknown_interactions:,} interactions with {len(result.unknown_items):,} "
            "item ids the model does not know[/yellow]"
        )


def serve(
    artifact: str, host: str = "127.0.0.1", port: int = 8000, device: str = "cpu", num_threads: Optional[int] = None,
    flush_denormal: bool = True,
) -> None:
    """Serve a saved model's recommendations over HTTP (JSON; the API is at /docs).

    Needs the serve extra: pip install 'awrsr[serve]'.

    Args:
        artifact: the run directory written by ``awrsr fit``.
        host: the address to listen on (0.0.0.0 for every interface).
        port: the TCP port.
        device: where to score: cpu, cuda, cuda:N, mps, or auto (CUDA, else MPS, else the CPU).
        num_threads: CPU threads for torch (default: torch's, every core), e.g. 1 beside other jobs.
        flush_denormal: flush subnormal floats to zero on the CPU, as train.flush_denormal (faster
            for a trained refinement; false keeps them).
    """
    from awrsr.infer.server import create_app, listening_socket

    _cpu_options(num_threads, flush_denormal)

    if not 0 <= port <= 65535:
        raise AwrsrError(f"--port must be in 0..65535, got {port}")
    try:
        import uvicorn
    except ImportError:
        raise AwrsrError("awrsr serve needs FastAPI and uvicorn: pip install 'awrsr[serve]'") from None
    sock = listening_socket(host, port)  # a port in use: a clear error before the model loads
    with sock:
        app = create_app(artifact, device=device)  # a bad artifact or device is a clear error before anything listens
        # uvicorn names the address only for sockets it binds itself
        address = f"[{host}]" if ":" in host else host
        print(f"serving {artifact} on http://{address}:{sock.getsockname()[1]} (the API at /docs; Ctrl+C stops)")
        uvicorn.Server(uvicorn.Config(app, host=host, port=port)).run(sockets=[sock])


def stats(data: DataConfig = DataConfig()) -> None:
    """Print a dataset's statistics and fingerprint after cleaning.

    Args:
        data: where the interactions come from and how they are cleaned.
    """
    from awrsr.data import load_sequence_data, print_stats

    dataset = load_sequence_data(data)
    print_stats(dataset.stats, dataset.fingerprint)


def tune(
    base_config: str,
    space: str,
    output_dir: str = "runs/tune",
    max_trials: Optional[int] = None,
    sample_seed: int = 0,
    set: Optional[List[str]] = None,
    report_only: bool = False,
) -> None:
    """Grid search of a base config over a YAML search space; selection on validation only.

    Args:
        base_config: the base fit config (YAML).
        space: YAML mapping dotted keys to lists of values (e.g. train.lr: [0.001, 0.0001]).
        output_dir: one sub-directory per trial; finished trials are reused.
        max_trials: run only this many combinations, sampled with sample_seed.
        sample_seed: seed of that sample.
        set: extra fixed options for every trial, as key=value (--set train.max_epochs=50, once
            per option, or a list: --set [train.max_epochs=50,train.patience=5]); not a key of
            the search space.
        report_only: train nothing: print the trials finished so far, best first, and name the
            others (training now, interrupted, not started, skipped); trials.csv and best.yaml are
            written only when no trial is left to train.
    """
    from awrsr.experiments.runs import parse_sets
    from awrsr.experiments.tune import load_search_space, run_tune

    run_tune(base_config, load_search_space(space), output_dir, max_trials, sample_seed, extra=parse_sets(set),
             report_only=report_only)


DEFAULT_VARIANTS = ["simp", "value", "add"]  # compare's refinements of SASRec when no variants are named


def compare(
    base_config: str,
    variants: List[Union[str, bool, int, float]] = DEFAULT_VARIANTS,  # --key train.lr --variants [0.01]
    seeds: List[int] = [42, 43, 44],
    output_dir: str = "runs/compare",
    key: str = "model.refine",
    base: str = "none",
    set: Optional[List[str]] = None,
    variants_file: Optional[str] = None,
    report_only: bool = False,
    length_edges: List[int] = [5, 10, 20, 50, 100, 200],
) -> None:
    """Train a base and its variants over several seeds and write the paper's Table 2 layout.

    Every variant shares the base's hyper-parameters; the table (mean ± std, improvement %,
    paired p-value) is written as Markdown and CSV beside the per-run records.

    Args:
        base_config: the base fit config (YAML); tune its hyper-parameters first (the best.yaml awrsr tune writes).
        variants: values of `key` to compare with the base.
        seeds: one run per seed and variant; pairs share a seed.
        output_dir: runs go to <output_dir>/<variant>/seed-<seed>; finished runs are reused.
        key: the config key that differs between variants.
        base: the value of `key` for the base model (with the default key, model.refine: none, no refinement).
        set: extra options for every run, as key=value (--set train.num_threads=1, once per
            option, or a list: --set [train.num_threads=1,train.patience=10]); a variant's own value
            of the same key wins for that variant (train.seed comes from --seeds only).
        variants_file: YAML mapping of named variants to their options (e.g. configs/compare/neighbours-beauty.yaml);
            replaces variants and key; the base is the entry that --base names (an entry named none
            by default), else the first.
        report_only: train nothing; tabulate the finished runs and name the missing ones.
        length_edges: upper bounds of the history-length buckets of by_length.md (the last bucket
            is everything longer).
    """
    from awrsr.experiments.compare import load_variants_file, run_compare
    from awrsr.experiments.runs import parse_sets

    if variants_file and (variants != DEFAULT_VARIANTS or key != "model.refine"):
        raise ConfigError("--variants_file names the variants and their options; give it without --variants and --key")
    chosen = load_variants_file(variants_file) if variants_file else variants
    run_compare(
        base_config, chosen, seeds, output_dir, key=key, base=base, extra=parse_sets(set), report_only=report_only,
        length_edges=length_edges,
    )


def plot(
    directory: str, output_dir: Optional[str] = None, user: Optional[int] = None, data_path: Optional[str] = None,
    user_id: Optional[str] = None, figures: Optional[list[str]] = None, num_threads: Optional[int] = None,
) -> None:
    """Draw the paper's figures from a run directory or a compare directory.

    Attention heatmaps (Figure 3), validation NDCG@5 per epoch (Figure 4), the gradient norm per
    epoch (Figure 5) and NDCG@N for N = 1..20 (Figure 2), as PNG files.

    Args:
        directory: a run directory (awrsr fit; one still training gets its learning curves so far),
            a compare directory (awrsr compare; seeds still training join its learning curves so
            far), or a tune directory (awrsr tune: every trial's learning curves, no test metric
            per trial).
        output_dir: where the PNG files go (default: <directory>/figures).
        user: the attention heatmap's user: a 0-based index into the run's test users (those with
            3+ interactions), not an original user id; the figure's title names that id
            (default: the first with 15+ items).
        data_path: the data file, if it moved since training or the run was trained from a data
            frame (it must be the same data).
        user_id: the attention heatmap's user by original user id instead (one with 3+ interactions).
        figures: draw only these kinds, of curves (validation NDCG@5 and gradient norm per epoch),
            ndcg_at_n, attention, by_length (a comparison's NDCG@10 by history length); default
            all the directory holds. [curves] needs no data, e.g. for a run whose data is elsewhere.
        num_threads: CPU threads for torch (default: torch's, every core), e.g. 1 beside other jobs.
    """
    from awrsr.experiments.figures import draw_figures

    _cpu_options(num_threads)

    for path in draw_figures(directory, output_dir, user, data_path=data_path, user_id=user_id, figures=figures):
        print(path)


# The sections of a fit config that `awrsr stats` has no use for.
_FIT_ONLY_SECTIONS = set(FIT_KEYS) - {"data"}  # what stats, which reads only data, leaves out


def stats_reads_data_section(args: list[str]) -> list[str]:
    """``awrsr stats --config fit.yaml``: a fit config's ``data`` section, passed as ``--data``,
    so that stats describes exactly the data a run trains on (stats itself takes only ``data``)."""
    if not args or args[0] != "stats":
        return args
    out = [args[0]]
    rest = iter(args[1:])
    for arg in rest:
        path = next(rest, None) if arg == "--config" else arg[9:] if arg.startswith("--config=") else None
        if path is None:
            out.append(arg)
            continue
        try:
            loaded = yaml.safe_load(read_text(user_path(path)))
        except (OSError, yaml.YAMLError):
            loaded = None  # not a readable file: the parser names the problem
        others = set(loaded) - {"data"} if isinstance(loaded, dict) else set()
        # (a file with another section was refused by check_config_files, naming it)
        if not others & _FIT_ONLY_SECTIONS:  # a stats config (data only), or not ours: the parser reads it
            out += ["--config", path]
        else:  # a section given as a file name stays one; dates and the like as the YAML wrote them
            section = loaded.get("data") or {}
            out += ["--data", section if isinstance(section, str) else json.dumps(section, default=str)]
    return out


# "-1,2" after an option: argparse takes it for an option (only "-1" and "-1.5" pass as numbers)
# and says "expected one argument"; no awrsr option begins with a dash and a digit.
_DASH_DIGIT = re.compile(r"^-\d")


def accumulate_sets(args: list[str]) -> list[str]:
    """``tune`` and ``compare``'s ``--set`` in jsonargparse's append form (``--set+``): each of
    ``--set a=1 --set b=2`` adds to the list, as does a whole list ``--set [c=3,d=4]``; given
    plainly, a second ``--set`` would replace the first, and a bare ``a=1`` would be refused as
    not a list."""
    if args[:1] not in (["tune"], ["compare"]):
        return args
    return [("--set+" + arg.removeprefix("--set")) if arg == "--set" or arg.startswith("--set=") else arg
            for arg in args]


def attach_dash_values(args: list[str]) -> list[str]:
    """``--history -1,2`` as ``--history=-1,2``: a value that begins with a dash and a digit
    (negative ids), attached to the option before it."""
    out: list[str] = []
    for arg in args:
        if out and _DASH_DIGIT.match(arg) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def version_text() -> str:
    """What ``awrsr --version`` prints: the code (with its commit in a checkout, as a run's
    metrics.json records it), then the torch and Python it runs on, and the plugins it loads."""
    import torch

    from awrsr.plugins import load_plugins
    from awrsr.version import code_version

    plugins = "".join(f", plugin {name} ({source})" for name, source in load_plugins().items())
    return f"awrsr {code_version()} (torch {torch.__version__}, Python {platform.python_version()}{plugins})"


class _PrintVersion(argparse.Action):
    """``--version``: computed when asked for, so that no other command runs git for it."""

    def __init__(self, option_strings: list, dest: str = argparse.SUPPRESS, help: Optional[str] = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_text())
        parser.exit()


class CommandParser(SuggestingParser):
    """The parser of ``awrsr`` itself: only it takes ``--version`` (jsonargparse passes CLI's
    keyword arguments to the top parser alone, and makes the subcommands' parsers without them)."""

    def __init__(self, *args, version_option: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if version_option:
            self.add_argument("--version", action=_PrintVersion, help="Print the code's version, torch's and Python's, and exit.")


def main(argv: Optional[list] = None) -> None:
    try:
        argv = sys.argv[1:] if argv is None else argv
        if argv and (argv[0] == "--config" or argv[0].startswith("--config=")):  # jsonargparse would blame a key inside
            raise ConfigError("--config goes after the command, e.g. awrsr fit --config FILE")
        if "--version" in argv[1:] and not argv[0].startswith("-"):  # a subcommand's parser has no --version
            raise ConfigError(f"--version goes before the command: awrsr --version (not awrsr {argv[0]} --version)")
        check_config_files(argv, fit=argv[:1] in (['fit'], ['stats']))  # names the file; the loader, inline configs
        argv = accumulate_sets(attach_dash_values(stats_reads_data_section(list(argv))))
        install_strict_yaml_loader()
        # allow_abbrev=False: argparse would take --train.max_epoch for --train.max_epochs, and a
        # misspelt option must be an error, not a guess.
        CLI(
            [fit, evaluate, recommend, serve, stats, tune, compare, plot], args=argv, as_positional=True,
            allow_abbrev=False, parser_class=CommandParser, version_option=True,
        )
    except (AwrsrError, FloatingPointError) as err:  # FloatingPointError: a model whose scores are not finite
        if debugging():
            raise
        print(f"awrsr: error: {err}", file=sys.stderr)
        sys.exit(2)
    except (MemoryError, RuntimeError) as err:  # numpy, torch's CPU allocator, CUDA: say what ran out
        detail = out_of_memory_detail(err)
        if detail is None or debugging():
            raise
        print(
            f"awrsr: error: out of memory ({detail}); make the work smaller: train.batch_size, model.max_len, "
            "train.num_negatives or the data in training, a sampled train.loss (bce, sampled_softmax; stosa for "
            "STOSA) where ce scores every item, evaluation.batch_size, --batch_size in recommend --input",
            file=sys.stderr,
        )
        sys.exit(2)
    except KeyboardInterrupt:  # outside training (reading data, the final evaluation): no traceback either
        print("\nawrsr: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # `awrsr recommend --input log | head`: the reader stopped early; say nothing
        try:  # point stdout at /dev/null, so that the interpreter's flush at exit fails quietly too
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # no real file descriptor (stdout replaced by a test, say)
            pass
        sys.exit(1)
    except OSError as err:  # a directory that cannot be created or written, a full disk: say which path
        if debugging():
            raise
        where = f": {err.filename}" if err.filename else ""
        print(f"awrsr: error: {err.strerror or err}{where}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

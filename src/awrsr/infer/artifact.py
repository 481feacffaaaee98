"""A trained model on disk: everything needed to recommend, and nothing from the training data.

    <dir>/config.yaml        the run's full configuration (data, model, train, evaluation)
    <dir>/vocab.json         original item ids by index
    <dir>/model.safetensors  weights
    <dir>/metrics.json       validation/test metrics, dataset fingerprint, protocol, seed, version
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save
from torch import nn

from awrsr.config_types import is_whole_number
from awrsr.data import Vocabulary
from awrsr.errors import ArtifactError, AwrsrError, DataError
from awrsr.files import read_text, user_path, write_bytes_atomic, write_text_atomic
from awrsr.models import ModelConfig, build_model

CONFIG_FILE = "config.yaml"
VOCAB_FILE = "vocab.json"
WEIGHTS_FILE = "model.safetensors"
METRICS_FILE = "metrics.json"
REQUIRED_FILES = (CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE)


@dataclass
class LoadedArtifact:
    directory: Path
    config: dict[str, Any]
    model_config: ModelConfig
    vocab: Vocabulary
    model: nn.Module
    metrics: dict[str, Any] | None
    # the fingerprint of the training data saved in the weights (None for weights saved before it was)
    trained_on: dict[str, Any] | None = None


def save_artifact(
    directory: str | Path, *, config: dict[str, Any], vocab: Vocabulary, model: nn.Module,
    trained_on: dict[str, Any] | None = None,
) -> Path:
    """Write the artifact files into ``directory`` (created if needed). ``trained_on``, the
    training data's fingerprint (``Fingerprint.to_dict()``), is saved in the weights file. A run's
    metrics.json is written apart (``write_metrics``), last: it marks the run finished."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_text_atomic(directory / CONFIG_FILE, yaml.safe_dump(config, sort_keys=False))
    vocab.save(directory / VOCAB_FILE)
    state = {name: t.detach().contiguous().cpu() for name, t in model.state_dict().items()}
    # The model section travels inside the weights too: settings that change no tensor's shape
    # (max_len of a model without position embeddings, say) are checked against config.yaml on load.
    # So does the vocabulary's digest: another vocab.json (edited, reordered, copied from another
    # run) would map the ids to other items' weights without changing any shape.
    metadata = {MODEL_METADATA: json.dumps(config.get("model", {}), sort_keys=True), VOCAB_METADATA: vocab_digest(vocab)}
    # And the data's fingerprint: the three files alone are a loadable model, and evaluating one
    # on changed data must still be refused without metrics.json.
    if trained_on is not None:
        metadata[DATASET_METADATA] = json.dumps(trained_on, sort_keys=True)
    # safetensors' save_file creates the file owner-only (0600); bytes through our writer get the umask's mode
    write_bytes_atomic(directory / WEIGHTS_FILE, sorted_header(save(state, metadata=metadata)))
    return directory


MODEL_METADATA = "awrsr.model"  # the weights file's copy of config.yaml's model section
VOCAB_METADATA = "awrsr.vocab.sha256"  # and the digest of vocab.json's vocabulary
DATASET_METADATA = "awrsr.dataset"  # and the fingerprint of the data it was trained on


def sorted_header(weights: bytes) -> bytes:
    """``weights`` (a safetensors file's bytes) with its JSON header's keys sorted. safetensors
    writes its metadata in a random order, per save (safetensors issue 584), so the same model
    gave one of two files; sorted, the same config and seed give the same bytes. Offsets count
    from the end of the header, so the tensors' bytes are kept as they are."""
    (size,) = struct.unpack("<Q", weights[:8])
    header = json.loads(weights[8 : 8 + size])
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the tensors start 8-byte aligned, as safetensors pads them
    return struct.pack("<Q", len(text)) + text + weights[8 + size :]


def vocab_digest(vocab: Vocabulary) -> str:
    """SHA-256 of the vocabulary (its ids in index order and their type)."""
    return hashlib.sha256(json.dumps(vocab.to_dict(), sort_keys=True).encode("utf-8")).hexdigest()


def check_saved_copies(
    weights_path: Path, model_config: ModelConfig, config_path: Path, vocab: Vocabulary | None = None,
) -> dict[str, str]:
    """An ArtifactError if config.yaml's model section, or the vocabulary, differs from the copy
    (the digest) saved in the weights file: an edited config would silently score with other
    settings, another vocabulary name other items. Weights saved before the copies existed are
    not checked, nor fields that awrsr added since (they take their defaults). Returns the
    weights file's metadata."""
    try:
        with safe_open(str(weights_path), "pt") as handle:
            metadata = handle.metadata() or {}
    except (SafetensorError, OSError) as err:
        raise ArtifactError(f"{weights_path}: cannot read weights ({err})") from None
    saved_vocab, saved = metadata.get(VOCAB_METADATA), metadata.get(MODEL_METADATA)
    other_vocab = vocab is not None and saved_vocab is not None and saved_vocab != vocab_digest(vocab)
    changed = []
    if saved is not None:
        saved_model, model = json.loads(saved), json.loads(json.dumps(asdict(model_config)))  # JSON values on both sides
        changed = [f"{key} ({saved_model[key]!r} -> {model[key]!r})"
                   for key in sorted(saved_model) if key in model and saved_model[key] != model[key]]
    if other_vocab and changed:  # both of the run's own files differ: the odd one out is the weights
        raise ArtifactError(
            f"{weights_path}: not the weights of this run (copied from another?): both {config_path.name}'s model "
            f"section ({', '.join(changed)}) and {VOCAB_FILE} differ from the copies saved with them"
        )
    if other_vocab:
        raise ArtifactError(
            f"{config_path.parent / VOCAB_FILE}: not the vocabulary these weights were trained with ({len(vocab)} ids; "
            "edited, reordered or copied from another run?): its ids would name other items"
        )
    if changed:
        raise ArtifactError(
            f"{config_path}: the model section differs from the one the weights were trained with: {', '.join(changed)}"
        )
    return metadata


def saved_fingerprint(metadata: dict[str, str], weights_path: Path) -> dict[str, Any] | None:
    """The training data's fingerprint saved in the weights file's metadata, if it was."""
    saved = metadata.get(DATASET_METADATA)
    if saved is None:
        return None
    try:
        fingerprint = json.loads(saved)
    except json.JSONDecodeError as err:
        raise ArtifactError(f"{weights_path}: unreadable saved dataset fingerprint ({err})") from None
    if not isinstance(fingerprint, dict):
        raise ArtifactError(f"{weights_path}: unreadable saved dataset fingerprint (not an object)")
    return fingerprint


RECORDED_DATA_FILE = "resolved_path"  # in metrics.json's dataset record: the training file's absolute path


def recorded_data_file(metrics: dict[str, Any] | None) -> Path | None:
    """The absolute path of the file a run trained on, as its metrics.json recorded it (None for
    runs trained from a frame or synthetic data, and for runs older than the record)."""
    dataset = (metrics or {}).get("dataset")
    path = dataset.get(RECORDED_DATA_FILE) if isinstance(dataset, dict) else None
    return Path(path) if isinstance(path, str) and path else None


def write_metrics(directory: str | Path, metrics: dict[str, Any]) -> None:
    """metrics.json, written atomically: its presence marks a finished run to other processes."""
    write_text_atomic(Path(directory) / METRICS_FILE, json.dumps(metrics, indent=2) + "\n")


def model_config_from_dict(values: dict[str, Any], source: str) -> ModelConfig:
    known = {f.name for f in fields(ModelConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ArtifactError(f"{source}: unknown model field(s) {', '.join(unknown)}")
    try:
        return ModelConfig(**values)
    except (AwrsrError, TypeError, ValueError) as err:  # TypeError: e.g. hidden_size: abc
        raise ArtifactError(f"{source}: invalid model section ({err})") from None


def load_artifact(directory: str | Path, max_len: int | None = None) -> LoadedArtifact:
    """Load config, vocabulary and weights; every inconsistency is an ``ArtifactError``.

    ``max_len`` is a check, not an override: a model's position embeddings (and any refinement
    matrices) fix its maximum length, so asking for another one is an error.
    """
    if not isinstance(directory, (str, Path)):
        raise TypeError(f"directory must be a path, got {type(directory).__name__}")
    if max_len is not None and not is_whole_number(max_len):
        raise ArtifactError(f"max_len must be an integer (a check of the saved model's), got {max_len!r}")
    max_len = None if max_len is None else int(max_len)  # numpy ints too
    directory = user_path(directory)
    if not directory.is_dir():
        raise ArtifactError(f"{directory} is a file, not a run directory" if directory.exists()
                            else f"artifact directory not found: {directory}")
    missing = missing_artifact_files(directory)
    if missing:
        # checkpoints/ (train.trainer.CHECKPOINT_DIR; not imported, to keep serving free of
        # Lightning) or Lightning's log, and no metrics.json: a run that has not written its model yet
        started = (directory / "checkpoints").is_dir() or (directory / "metrics.csv").is_file()
        if started and not (directory / METRICS_FILE).is_file():
            # how far it has come, from its log (an error path: Lightning's import is no cost here)
            from awrsr.experiments.runs import unfinished_run_state

            raise ArtifactError(
                f"{directory}: not a finished run yet (no {', '.join(missing)}): {unfinished_run_state(directory)}; "
                "the model is saved when training ends"
            )
        raise collection_error(directory) or ArtifactError(
            f"{directory}: incomplete artifact, missing {', '.join(missing)}"
        )

    config_path = directory / CONFIG_FILE
    try:
        config = yaml.safe_load(read_text(config_path, ArtifactError))
    except yaml.YAMLError as err:
        raise ArtifactError(f"{config_path}: not valid YAML ({err})") from None
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise ArtifactError(f"{config_path}: no 'model' section")
    model_config = model_config_from_dict(config["model"], str(config_path))
    if max_len is not None and max_len != model_config.max_len:
        raise ArtifactError(
            f"{directory}: the model was trained with max_len={model_config.max_len}; "
            f"it cannot be loaded with max_len={max_len}"
        )

    try:
        vocab = Vocabulary.load(directory / VOCAB_FILE)
    except DataError as err:  # the run's file, not the user's data
        raise ArtifactError(str(err)) from None
    try:
        model = build_model(model_config, len(vocab))
    except (AwrsrError, TypeError, ValueError) as err:
        raise ArtifactError(f"{config_path}: cannot build the model ({err})") from None
    weights_path = directory / WEIGHTS_FILE
    try:
        state = load_file(str(weights_path))
    except (SafetensorError, OSError) as err:
        raise ArtifactError(f"{weights_path}: cannot read weights ({err})") from None
    # the edited field by name first (max_len: 20 -> 50), before the tensor shapes it changes
    metadata = check_saved_copies(weights_path, model_config, config_path, vocab)
    check_state_matches(model, state, weights_path)
    model.load_state_dict(state)
    model.eval()

    metrics = None
    if (directory / METRICS_FILE).is_file():
        try:
            metrics = json.loads(read_text(directory / METRICS_FILE, ArtifactError))
        except json.JSONDecodeError as err:
            raise ArtifactError(f"{directory / METRICS_FILE}: not valid JSON ({err})") from None
        if not isinstance(metrics, dict):
            raise ArtifactError(f"{directory / METRICS_FILE}: expected a JSON object")
    return LoadedArtifact(directory, config, model_config, vocab, model, metrics, saved_fingerprint(metadata, weights_path))


def missing_artifact_files(directory: Path) -> list[str]:
    """The files a saved model needs (config, vocabulary, weights) that ``directory`` lacks: all of
    the model's for a run kept as records only (metrics, history, test ranks)."""
    return [name for name in REQUIRED_FILES if not (directory / name).is_file()]


def runs_inside(directory: Path) -> list[Path]:
    """Run directories (with a config.yaml) one level below ``directory`` (a tune's trial-*/) or
    two (a comparison's <variant>/seed-N/), finished ones (metrics.json) first, then by path."""
    found = [p.parent for p in (*directory.glob(f"*/{CONFIG_FILE}"), *directory.glob(f"*/*/{CONFIG_FILE}"))]
    return sorted(found, key=lambda run: (not (run / METRICS_FILE).is_file(), str(run)))


def is_seed_run(run: Path, directory: Path) -> bool:
    """Whether ``run`` (found by ``runs_inside(directory)``) is a comparison's <variant>/seed-N/."""
    return run.parent != directory and run.name.startswith("seed-")


def collection_kind(directory: Path, runs: list[Path] | None = None) -> str | None:
    """What kind of collection of runs ``directory`` is (a tune's, a comparison's output, or
    runs side by side), or None if it holds no runs. ``runs``: ``runs_inside(directory)``, if
    the caller has it already."""
    runs = runs_inside(directory) if runs is None else runs
    if (directory / "trials.csv").is_file() or (runs and runs[0].name.startswith("trial-")):
        return "a tune output directory (one run per trial-*)"
    if (directory / "runs.csv").is_file() or (runs and all(is_seed_run(run, directory) for run in runs)):
        return "a comparison output directory (one run per <variant>/seed-N)"
    return "a directory of runs" if runs else None


def collection_error(directory: Path) -> ArtifactError | None:
    """The error for a ``compare`` or ``tune`` output directory given where one run is expected,
    naming runs inside to pick from; None if ``directory`` holds no runs."""
    runs = runs_inside(directory)
    if not runs:
        return None
    examples = " or ".join(str(run) for run in runs[:2])
    return ArtifactError(f"{directory}: {collection_kind(directory, runs)}, not a single run; pick one of its runs, e.g. {examples}")


def check_state_matches(model: nn.Module, state: dict, source: Path) -> None:
    """An ArtifactError naming ``source`` if ``state`` (a state dict) has other tensors, or other
    shapes, than ``model``: loading it would fail deep inside torch."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ArtifactError(
            f"{source}: weights do not fit the configured model "
            f"(missing: {', '.join(missing[:5]) or 'none'}; unexpected: {', '.join(unexpected[:5]) or 'none'})"
        )
    for name, tensor in expected.items():
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise ArtifactError(
                f"{source}: tensor {name!r} has shape {tuple(state[name].shape)}, "
                f"but the configured model expects {tuple(tensor.shape)}"
            )

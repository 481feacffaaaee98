"""Shared fixtures and helpers for the test suite."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from awrsr.errors import ConfigError
from awrsr.models import ModelConfig, build_model, compatible_combinations

# Every test starts with subnormal floats kept, as torch starts. torch's CPU threads start now, in
# that mode, whatever the first test runs: a fit or a command that flushes (their default) must not
# start them flushing for the whole session (each keeps the mode it started with).
torch.set_flush_denormal(False)
_threads = torch.get_num_threads()
torch.set_num_threads(max(_threads, 4))  # as many as any test asks for, on a machine of fewer cores too
torch.ones(torch.get_num_threads() << 16) + 0
torch.set_num_threads(_threads)


@pytest.fixture(autouse=True)
def _subnormals_kept():
    yield
    torch.set_flush_denormal(False)  # awrsr evaluate, recommend and serve, run in this process, flush


# ../shared/data beside the repository root; tests that need it skip when it is absent.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_file(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


# A refinement acting on logits (model.refine_input) is named REFINE@logits in the shared tests.
ON_LOGITS = "@logits"


def registered_combinations() -> list[tuple[str, str, str]]:
    """Every (backbone, attention, refinement) triple the registries offer and the builders
    accept; a new part registered anywhere is picked up by every test parametrised with this.
    Each refinement comes a second time as ``REFINE@logits``, acting on the logits, wherever the
    attention has them. Rejected triples are tested to be configuration errors in
    tests/models/test_stosa.py."""
    on_logits = [(name, attention, refine + ON_LOGITS) for name, attention, refine in compatible_combinations("logits") if refine != "none"]
    return compatible_combinations() + on_logits


def split_refine(refine: str) -> tuple[str, str]:
    """(model.refine, model.refine_input) of a shared test's refinement name.

    >>> split_refine("simp@logits"), split_refine("simp")
    (('simp', 'logits'), ('simp', 'weights'))
    """
    return (refine[: -len(ON_LOGITS)], "logits") if refine.endswith(ON_LOGITS) else (refine, "weights")


def build_tiny(name: str, attention: str, refine: str, parameters: str = "initial", **overrides):
    """A small model of the given parts, or skip if the parts are declared incompatible.

    ``parameters="random"`` moves every parameter away from its initialisation (Gaussian noise,
    std 0.3): a part that starts at an identity or at zero (a refinement matrix at I, a bias at
    0) shows at initialisation nothing of what its trained parameters do, so an invariant checked
    only there could not catch a leak that opens as the part learns."""
    refine, refine_input = split_refine(refine)
    values = dict(
        name=name, attention=attention, refine=refine, refine_input=refine_input, max_len=8, hidden_size=16,
        num_heads=2, num_blocks=2, dropout=0.1,
    )
    values.update(overrides)
    try:
        cfg = ModelConfig(**values)
        torch.manual_seed(0)
        model = build_model(cfg, num_items=20)
    except ConfigError as err:
        pytest.skip(f"incompatible parts: {err}")
    if parameters == "random":
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    elif parameters != "initial":
        raise ValueError(f"parameters must be initial or random, got {parameters!r}")
    return model


# The invariant tests run at both: see build_tiny.
PARAMETERS = pytest.mark.parametrize("parameters", ["initial", "random"])


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str, atol: float = 1e-5) -> None:
    """``actual`` equals ``expected`` within ``atol``, or an AssertionError that says what differs,
    by how much and where (indices of the worst entry), rather than a bare ``assert False``."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if torch.allclose(actual, expected, atol=atol, rtol=1e-5):
        return
    difference = (actual - expected).abs().nan_to_num(float("inf"))
    worst = [int(i) for i in torch.unravel_index(difference.argmax(), difference.shape)]
    count = int((difference > atol).sum())
    raise AssertionError(
        f"{what}: {count} of {difference.numel()} entries differ, the most by {difference.max().item():.3g} "
        f"at index {worst} ({actual[tuple(worst)].item():.9g} != {expected[tuple(worst)].item():.9g})"
    )


COMBINATIONS = pytest.mark.parametrize(
    "name,attention,refine", registered_combinations(), ids=lambda v: str(v)
)


def tiny_run_config(output_dir, **train_overrides):
    """Keyword arguments of ``workflows.fit`` for a small synthetic run (a few seconds)."""
    from awrsr.data import DataConfig, SyntheticConfig
    from awrsr.eval import EvalConfig
    from awrsr.train import TrainConfig

    train = dict(max_epochs=8, patience=3, batch_size=64, lr=3e-3, progress_bar=False, seed=7)
    train.update(train_overrides)
    return dict(
        data=DataConfig(synthetic=SyntheticConfig(num_users=300, num_items=50, min_length=8, max_length=20)),
        model=ModelConfig(max_len=20, hidden_size=32, num_heads=2, num_blocks=2, dropout=0.1),
        train=TrainConfig(**train),
        evaluation=EvalConfig(),
        output_dir=output_dir,
    )


def fit_and_reload(model: ModelConfig, output_dir: Path, monkeypatch) -> tuple:
    """Fit ``model`` for two epochs on the tiny synthetic data and check its artifact: it loads,
    recommends five unseen items for a history, and refuses another max_len by name. Returns the
    loaded artifact and the state the model had when fit built it (to see what training moved)."""
    from rich.console import Console

    import awrsr.workflows
    from awrsr.errors import ArtifactError
    from awrsr.infer import Recommender, load_artifact

    built = []  # (num_items, initial weights) of every model fit builds (the popularity baseline too)

    def build_and_keep(config, num_items):
        built_model = build_model(config, num_items)
        built.append((num_items, {k: v.clone() for k, v in built_model.state_dict().items()}))
        return built_model

    monkeypatch.setattr(awrsr.workflows, "build_model", build_and_keep)
    cfg = tiny_run_config(output_dir, max_epochs=2)
    cfg["model"] = model
    result = awrsr.workflows.fit(**cfg, console=Console(quiet=True))
    top = Recommender.load(result.run_dir).recommend([1, 2, 3], k=5)
    assert len(top) == 5 and not {r.item for r in top} & {1, 2, 3}
    loaded = load_artifact(result.run_dir)
    assert loaded.model_config == model
    with pytest.raises(ArtifactError, match=f"max_len={model.max_len}"):
        load_artifact(result.run_dir, max_len=model.max_len + 8)
    (initial,) = [state for items, state in built if items == loaded.model.num_items]
    return loaded, initial


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """One small SASRec fit shared by the artifact, recommender, evaluation and CLI tests."""
    from rich.console import Console

    from awrsr.workflows import fit

    run_dir = tmp_path_factory.mktemp("run") / "sasrec"
    return fit(**tiny_run_config(run_dir), console=Console(quiet=True))


def copy_run_with_data(run_dir: Path, copy: Path, **data) -> Path:
    """A copy of the run at ``run_dir`` (without checkpoints) whose config.yaml's data section has
    the ``data`` options: a model as if trained from another file or format."""
    import shutil

    import yaml

    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("checkpoints"))
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["data"].update(data)
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def run_cli(capsys, *argv):
    """Run ``awrsr argv``; return (exit code, stdout, stderr). No user error may show a traceback."""
    from awrsr.cli import main

    try:
        main(list(argv))
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def dropout_calls(model: torch.nn.Module, input_ids: torch.Tensor) -> list[tuple[str, float]]:
    """(name, p) of each ``Dropout`` module, in the order one training-mode forward pass of
    ``model`` on ``input_ids`` calls them (attention dropout is a function of the attention, not
    a module, and is not listed)."""
    from awrsr.nn.dropout import Dropout

    calls = []
    hooks = [
        module.register_forward_hook(lambda module, args, out, name=name: calls.append((name, module.p)))
        for name, module in model.named_modules() if isinstance(module, Dropout)
    ]
    try:
        model.train()(input_ids)
    finally:
        for hook in hooks:
            hook.remove()
    return calls

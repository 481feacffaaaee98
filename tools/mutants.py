"""Check that the tests can fail: plant known, plausible bugs one at a time and see each caught.

Each mutant below is a one-line (or one-block) change to the library that a test must catch. They
come from three reviews by mutation (session 22) that found tests which passed on broken code; the
test files that now catch them are named in each mutant's ``test``. The script works on a
temporary ``git clone`` of the last commit (uncommitted changes are not seen), never on the
working tree, and runs only each mutant's test file.

    python tools/mutants.py              # every mutant; exit status 1 if one survives
    python tools/mutants.py M4 M7        # some of them
    python tools/mutants.py --list

A mutant whose ``old`` text is no longer in its file is reported as "stale" (the code moved on):
update the mutant rather than delete it, so the guarantee it stands for is kept.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to the repository root
    old: str
    new: str
    test: str  # pytest target that must fail
    why: str


MUTANTS = [
    Mutant("M1", "src/awrsr/nn/attention/wasserstein.py", "mean_out = (dropped @ v_mu)", "mean_out = (base @ v_mu)",
           "tests/models/test_stosa.py", "STOSA's mean stream must use the refined weights"),
    Mutant("M2", "src/awrsr/nn/attention/wasserstein.py", "cov_out = ((dropped * refined) @ v_cov)",
           "cov_out = ((dropped * dropped) @ v_cov)", "tests/models/test_stosa.py",
           "the dropout mask falls once on the covariance path's B * B"),
    Mutant("M3", "src/awrsr/nn/attention/wasserstein.py", "-distances / math.sqrt(self.head_size)",
           "-distances / math.sqrt(self.head_size * self.num_heads)", "tests/models/test_stosa.py",
           "Wasserstein logits are scaled by the head width"),
    Mutant("M4", "src/awrsr/models/stosa.py", "return gaussian_vectors(mean, positive(cov))  # (B, n, 2d)",
           "return __import__('torch').cat([mean, positive(cov)], -1)", "tests/models/test_stosa.py",
           "STOSA's output is [mu, sqrt(Sigma)], so that distances are W2"),
    Mutant("M5", "src/awrsr/nn/losses.py", "return F.cross_entropy(model.score_all(h), pos - 1)",
           "return F.cross_entropy(model.score_all(h), (pos - 2).clamp_min(0))", "tests/nn/test_losses.py",
           "ce through score_all (STOSA) takes column j for item j + 1"),
    Mutant("M6", "src/awrsr/nn/losses.py",
           "bpr = (F.softplus(distances[:, :1] - distances[:, 1:]) * valid).sum(1)",
           "bpr = (F.softplus(distances[:, :1] - distances[:, 1:])).sum(1)", "tests/models/test_stosa.py",
           "a negative equal to its positive adds nothing to STOSA's loss"),
    Mutant("M7", "src/awrsr/eval/evaluator.py", "inputs = torch.from_numpy(history.to_padded(max_len))",
           "inputs = torch.from_numpy(history.to_padded(max_len - 1))", "tests/eval/test_metrics.py",
           "the evaluator gives the model each user's last max_len items"),
    Mutant("M8", "src/awrsr/nn/refine/stoc.py", "cov = F.elu(self.project(weights, self.cov)) + 1.0",
           "cov = F.elu(self.project(weights, self.mean)) + 1.0", "tests/models/test_stosa.py",
           "M_stoc projects the covariance with its own matrix"),
    Mutant("M9", "src/awrsr/nn/attention/positional.py",
           "self.scale = 1.0 / math.sqrt(self.head_size * self.num_heads)",
           "self.scale = 1.0 / math.sqrt(self.head_size)", "tests/models/test_positional.py",
           "PARec scales by the model width, as the paper does"),
    Mutant("M10", "src/awrsr/nn/refine/matrices.py", "head_size=cfg.hidden_size // cfg.num_heads",
           "head_size=cfg.hidden_size", "tests/nn/test_refine.py", "refinements scale by the head width"),
    Mutant("M11", "src/awrsr/data/dataset.py", '        h.update(np.ascontiguousarray(offsets, dtype="<i8").tobytes())\n',
           "", "tests/data/test_data_dataset.py", "where one user ends is part of the data's fingerprint"),
    Mutant("M12", "src/awrsr/data/preprocess.py",
           "    before = frame.height\n    frame = drop_duplicates(frame, config.duplicates)\n"
           "    duplicates_removed = before - frame.height\n"
           "    frame, report = kcore(frame, config.min_user_interactions, config.min_item_interactions)\n",
           "    frame, report = kcore(frame, config.min_user_interactions, config.min_item_interactions)\n"
           "    before = frame.height\n    frame = drop_duplicates(frame, config.duplicates)\n"
           "    duplicates_removed = before - frame.height\n",
           "tests/data/test_data_preprocess.py", "duplicates are dropped before the k-core counts"),
    Mutant("M13", "src/awrsr/models/bert4rec.py", "masked[:, -1] |= ~masked.any(dim=1) & real[:, -1]",
           "masked[:, -1] |= real[:, -1]", "tests/models/test_bert4rec.py",
           "Cloze masks the last item at its own rate, not always"),
    Mutant("M14", "src/awrsr/models/bert4rec.py", "self.mask_id = self.num_items + 1", "self.mask_id = self.num_items",
           "tests/models/test_bert4rec.py", "[mask] is a token of its own, not the last item's"),
    Mutant("M15", "src/awrsr/infer/batch.py",
           "frame = drop_duplicates(sort_chronologically(read_interactions(source, data)), data.duplicates)",
           "frame = sort_chronologically(read_interactions(source, data))", "tests/infer/test_batch.py",
           "a log to score is read with the training duplicates policy"),
    Mutant("M16", "src/awrsr/train/callbacks.py", "optimizer is not trainer.optimizers[-1]",
           "optimizer is not trainer.optimizers[0]", "tests/nn/test_calibrated.py",
           "AC-TSR's gradient norm is the recommender's, not the perturbation network's"),
    Mutant("M17", "src/awrsr/train/callbacks.py", 'pl_module.log("train/grad_norm", global_norm(grads)',
           'pl_module.log("train/grad_norm", global_norm(grads) ** 2', "tests/nn/test_calibrated.py",
           "the logged gradient norm is the L2 norm (the paper's Figure 5)"),
    Mutant("M18", "src/awrsr/train/batches.py", "for i in torch.randperm(len(batches), generator=generator).tolist():",
           "for i in range(len(batches)):", "tests/train/test_batches.py",
           "batches grouped by length come in a shuffled order"),
    Mutant("M19", "src/awrsr/experiments/compare.py", 'p = f"{c.p_value:.3f}" if c.pairs > 1 else "n/a"',
           'p = f"{c.p_value:.3f}"', "tests/experiments/test_compare_statistics.py",
           "one pair has no p-value in the table"),
    Mutant("M20", "src/awrsr/nn/embedding.py", "self.scale = math.sqrt(hidden_size)", "self.scale = float(hidden_size)",
           "tests/models/test_sasrec.py", "item embeddings are scaled by sqrt(d)"),
    Mutant("M21", "src/awrsr/nn/block.py",
           "        attended, weights = self.attention(self.attention_norm(x), mask, need_weights=need_weights)\n"
           "        x = x + self.dropout(attended)  # (B, n, d)\n"
           "        x = x + self.dropout(self.feed_forward(self.feed_forward_norm(x)))\n",
           "        attended, weights = self.attention(x, mask, need_weights=need_weights)\n"
           "        x = self.attention_norm(x + self.dropout(attended))\n"
           "        x = self.feed_forward_norm(x + self.dropout(self.feed_forward(x)))\n",
           "tests/models/test_sasrec.py", "the block normalises before each part (pre-norm)"),
    Mutant("M22", "src/awrsr/models/sasrec.py", 'causal: bool, activation: str = "relu"', 'causal: bool, activation: str = "gelu"',
           "tests/models/test_sasrec.py", "SASRec's feed-forward is ReLU"),
    Mutant("M23", "src/awrsr/models/popularity.py", "minlength=num_items + 1)[1:]", "minlength=num_items + 1)[:-1]",
           "tests/models/test_popularity.py", "popularity's column j is item j + 1"),
    Mutant("M24", "src/awrsr/workflows.py", "PopularityModel(split.train.items,", "PopularityModel(dataset.sequences.items,",
           "tests/models/test_popularity.py", "popularity counts the training items only"),
    Mutant("M25", "src/awrsr/workflows.py", "evaluator.ranks(artifact.model), cases.history.lengths",
           "evaluator.ranks(artifact.model), cases.history.lengths + 1", "tests/test_end_to_end.py",
           "a history's length counts the items before the held-out one"),
    Mutant("M26", "src/awrsr/nn/refine/value.py",
           "((self.key @ weights).transpose(-2, -1) @ (self.query @ weights))",
           "((self.query @ weights).transpose(-2, -1) @ (self.key @ weights))", "tests/nn/test_refine.py",
           "the literal M_value puts W_RK and W_RQ in their places"),
    Mutant("M27", "src/awrsr/nn/refine/value.py", "(self.value @ weights) @ inner", "(weights @ self.value) @ inner",
           "tests/nn/test_refine.py", "the literal M_value multiplies W_RV from the left"),
    Mutant("M28", "src/awrsr/experiments/by_length.py", "np.where(hit, 1.0 / np.log2(ranks + 1.0), 0.0)",
           "np.where(hit, 1.0 / np.log2(ranks + 2.0), 0.0)", "tests/experiments/test_compare_statistics.py",
           "a user's NDCG in the by-length tables is 1 / log2(rank + 1)"),
]


def run(mutant: Mutant, root: Path) -> str:
    """'caught', 'SURVIVED' or 'stale' for ``mutant`` applied to the copy at ``root``."""
    path = root / mutant.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        return "stale"
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    try:
        env = {**os.environ, "PYTHONPATH": str(root / "src")}
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", mutant.test],
            cwd=root, env=env, capture_output=True, text=True,
        )
        return "caught" if result.returncode == 1 else "SURVIVED" if result.returncode == 0 else f"error {result.returncode}"
    finally:
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    if args.list or not chosen:
        for m in MUTANTS:
            print(f"{m.name:4} {m.file}: {m.why}")
        return 0 if args.list else 2
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="awrsr-mutants-") as tmp:
        copy = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(repo), str(copy)], check=True)
        outcomes = {}
        for m in chosen:
            outcomes[m.name] = run(m, copy)
            print(f"{m.name:4} {outcomes[m.name]:9} {m.why}", flush=True)
    bad = [name for name, outcome in outcomes.items() if outcome != "caught"]
    print(f"{len(chosen) - len(bad)} of {len(chosen)} mutants caught" + (f"; not caught: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

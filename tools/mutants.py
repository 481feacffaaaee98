"""Check that the tests can fail: plant known, plausible bugs one at a time and see each caught.

Each mutant below is a one-line (or one-block) change to the library that a test must catch. They
come from six reviews by mutation (sessions 22 and 23) that found tests which passed on broken
code; the test files that now catch them are named in each mutant's ``test``. The script works on a
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
    Mutant("M29", "src/awrsr/infer/recommender.py",
           "self.model.score_next(torch.from_numpy(batch.to_padded(self.max_len))",
           "self.model.score_next(torch.from_numpy(batch.to_padded(self.max_len - 1))", "tests/infer/test_recommender.py",
           "the Recommender gives the model each history's last max_len items"),
    Mutant("M30", "src/awrsr/infer/recommender.py", " or torch.isposinf(best_scores).any()", "",
           "tests/infer/test_recommender.py", "an item scored +inf is a broken model, not the best recommendation"),
    Mutant("M31", "src/awrsr/infer/recommender.py", "(resolved.index or 0) >= torch.cuda.device_count()",
           "(resolved.index or 0) > torch.cuda.device_count()", "tests/infer/test_recommender.py",
           "cuda:N needs N below the number of CUDA devices (cuda on a machine without one is an error)"),
    Mutant("M32", "src/awrsr/infer/server.py", "if len(histories) * options.k > MAX_ANSWERS:",
           "if len(histories) * options.k >= MAX_ANSWERS:", "tests/infer/test_server.py",
           "k x histories may be exactly MAX_ANSWERS"),
    Mutant("M33", "src/awrsr/infer/server.py",
           "too_long = [i for i, history in enumerate(histories) if len(history) > MAX_HISTORY]", "too_long = []",
           "tests/infer/test_server.py", "a batch's history longer than MAX_HISTORY ids is a 422 naming it"),
    Mutant("M34", "src/awrsr/infer/server.py", "k: StrictInt = Field(10, ge=1, le=MAX_K,", "k: StrictInt = Field(10, ge=1,",
           "tests/infer/test_server.py", "k is at most MAX_K"),
    Mutant("M35", "src/awrsr/infer/server.py",
           "histories: list[list[ItemId]] = Field(..., min_length=1, max_length=MAX_BATCH)",
           "histories: list[list[ItemId]] = Field(..., max_length=MAX_BATCH)", "tests/infer/test_server.py",
           "an empty batch is a 422, not an empty answer"),
    Mutant("M36", "src/awrsr/infer/artifact.py",
           'started = (directory / "checkpoints").is_dir() or (directory / "metrics.csv").is_file()',
           'started = (directory / "checkpoints").is_dir()', "tests/test_end_to_end.py",
           "a directory with Lightning's metrics.csv and no model is an unfinished run"),
    Mutant("M37", "src/awrsr/infer/artifact.py",
           "return sorted(found, key=lambda run: (not (run / METRICS_FILE).is_file(), str(run)))",
           "return sorted(found, key=lambda run: str(run))", "tests/test_end_to_end.py",
           "runs inside a collection: finished ones first (the examples an error names)"),
    Mutant("M38", "src/awrsr/infer/artifact.py", "    model.load_state_dict(state)\n    model.eval()\n",
           "    model.load_state_dict(state)\n", "tests/test_end_to_end.py", "load_artifact's model is in eval mode"),
    Mutant("M39", "src/awrsr/infer/artifact.py", 'return run.parent != directory and run.name.startswith("seed-")',
           'return run.name.startswith("seed-")', "tests/test_end_to_end.py",
           "a seed run is a comparison's <variant>/seed-N, not a run named seed-N"),
    Mutant("M40", "src/awrsr/infer/batch.py",
           '        users, Sequences(offsets, known.get_column("index").to_numpy()), skipped, unknown_rows.height, unknown_items,',
           '        users, Sequences(offsets, known.get_column("index").to_numpy()), skipped, len(unknown_items), unknown_items,',
           "tests/infer/test_batch.py", "unknown_interactions counts rows, not distinct unknown items"),
    Mutant("M41", "src/awrsr/infer/batch.py", 'f"{where}{unknown_rows.height} interaction(s) name',
           'f"{where}{len(unknown_items)} interaction(s) name', "tests/infer/test_batch.py",
           "the unknown-items error counts the interactions, then the distinct ids"),
    Mutant("M42", "src/awrsr/infer/batch.py",
           'examples = ", ".join(repr(x) for x in unknown_items[:5]) + (", ..." if len(unknown_items) > 5 else "")',
           'examples = ", ".join(repr(x) for x in unknown_items[:5])', "tests/infer/test_batch.py",
           "more than five unknown ids end the examples with ..."),
    Mutant("M43", "src/awrsr/experiments/tune.py",
           '                    console.print(f"[yellow]skipped {params}: {err}[/yellow]")\n                    done.add(run_dir.name)\n',
           '                    console.print(f"[yellow]skipped {params}: {err}[/yellow]")\n',
           "tests/experiments/test_tune_selection.py", "a skipped trial is not trained again in tune's second pass"),
    Mutant("M44", "src/awrsr/experiments/tune.py", "trials = random.Random(sample_seed).sample(trials, max_trials)",
           "trials = random.Random(0).sample(trials, max_trials)", "tests/experiments/test_tune_selection.py",
           "sample_seed decides which trials max_trials runs"),
    Mutant("M45", "src/awrsr/experiments/tune.py",
           '        if key in extra:\n            raise ConfigError(f"--set {key}: the search space',
           '        if False:\n            raise ConfigError(f"--set {key}: the search space',
           "tests/experiments/test_tune_selection.py", "a key both in the grid and in --set is refused"),
    Mutant("M46", "src/awrsr/experiments/tune.py", '"best_epoch": metrics["selection"]["best_epoch"],',
           '"best_epoch": metrics["selection"].get("epochs_trained"),', "tests/experiments/test_tune_selection.py",
           "trials.csv's best_epoch is the selected epoch"),
    Mutant("M47", "src/awrsr/experiments/stats.py", "    if len(variant) != len(base):\n        raise ValueError",
           "    if False:\n        raise ValueError", "tests/experiments/test_compare_statistics.py",
           "the paired test refuses sides of different lengths rather than truncating them"),
    Mutant("M48", "src/awrsr/data/vocab.py",
           'return "int" if all(isinstance(x, int) and not isinstance(x, bool) for x in ids) else "str"',
           'return "int" if all(isinstance(x, int) for x in ids) else "str"', "tests/data/test_data_vocab.py",
           "boolean item ids make a text vocabulary (one that saves and loads)"),
    Mutant("M49", "src/awrsr/data/vocab.py", "        vocab.id_type = id_type  # only matters", "        # only matters",
           "tests/data/test_data_vocab.py", "an empty vocabulary keeps its stored id type"),
    Mutant("M50", "src/awrsr/data/vocab.py",
           "return isinstance(other, Vocabulary) and self.id_type == other.id_type and self._ids == other._ids",
           "return isinstance(other, Vocabulary) and len(self) == len(other)", "tests/data/test_data_vocab.py",
           "vocabularies are equal only with the same ids, order and type"),
    Mutant("M51", "src/awrsr/nn/masks.py", "torch.finfo(torch.float32).min, torch.float32)", "-30.0, torch.float32)",
           "tests/nn/test_masks.py", "masked keys get exactly 0 weight, even against a much larger logit"),
    Mutant("M52", "src/awrsr/nn/masks.py", "allowed = real[:, None, :, None] & real[:, None, None, :]",
           "allowed = real[:, None, None, :].expand(-1, -1, real.shape[1], -1)", "tests/nn/test_masks.py",
           "padded queries attend to nothing, in a bidirectional mask too"),
    Mutant("M53", "src/awrsr/nn/attention/calibrated.py", "out = dropout(refined, self.attn_dropout, self.training) @ v",
           "out = dropout(refined, self.attn_dropout) @ v", "tests/nn/test_calibrated.py",
           "AC-TSR drops no attention weights in eval mode"),
    Mutant("M54", "src/awrsr/nn/attention/fixed.py", "return mask.real.cumsum(dim=1).clamp(min=1)",
           "return mask.real.cumsum(dim=1)", "tests/models/test_positional.py",
           "an empty history's fixed-pattern weights are 0, not NaN from log(0)"),
    Mutant("M55", "src/awrsr/nn/attention/fixed.py", "if n > self.max_len:", "if n > self.max_len + 1:",
           "tests/models/test_positional.py", "window positions refuse a window wider than max_len"),
    Mutant("M56", "src/awrsr/nn/attention/dot.py", "p_drop = self.attn_dropout if self.training else 0.0",
           "p_drop = self.attn_dropout", "tests/models/test_sasrec.py", "dot-product attention drops nothing in eval mode"),
    Mutant("M57", "src/awrsr/nn/attention/dot.py", "logits = (q / math.sqrt(self.head_size)) @ k.transpose(-2, -1)",
           "logits = (q / math.sqrt(self.head_size * self.num_heads)) @ k.transpose(-2, -1)", "tests/models/test_sasrec.py",
           "the explicit attention path scales by sqrt(d_h), as the fused kernel does"),
    Mutant("M58", "src/awrsr/nn/attention/dot.py",
           "if self.fused and fusable and self.refinement.is_identity and not need_weights:",
           "if self.fused and fusable and not need_weights:", "tests/nn/test_refine.py",
           "a refined model never takes the fused kernel, which cannot refine"),
    Mutant("M59", "src/awrsr/data/readers.py", "            if line.strip():\n", "            if True:\n",
           "tests/data/test_data_text_formats.py", "format auto looks at the first non-blank line"),
    Mutant("M60", "src/awrsr/data/readers.py", "by_suffix = _BY_SUFFIX.get(path.suffix.lower())",
           "by_suffix = _BY_SUFFIX.get(path.suffix)", "tests/data/test_data_text_formats.py",
           "format auto reads a suffix in any case (RATINGS.CSV)"),
    Mutant("M61", "src/awrsr/data/text_formats.py", "    if width < 3 or counts.max() != width:\n", "    if width < 3:\n",
           "tests/data/test_data_text_formats.py", "only lines of one width with a repeated user look like a table"),
    Mutant("M62", "src/awrsr/data/sequences.py", "if not -n <= i < n:", "if not -n < i < n:",
           "tests/data/test_data_sequences.py", "sequences take negative rows down to -len, as a list does"),
    Mutant("M63", "src/awrsr/data/tabular.py",
           "    return any(map(_is_number, fields)) or len(set(fields)) < len(fields)",
           "    return any(map(_is_number, fields))", "tests/data/test_data_tabular.py",
           "a first line with a repeated field is data, not a header (column names never repeat)"),
    Mutant("M64", "src/awrsr/data/tabular.py", "        return numbers if ints.null_count() else ints",
           "        return numbers", "tests/data/test_data_tabular.py",
           "integer times written as text stay exact integers, not float64"),
    Mutant("M65", "src/awrsr/train/batches.py", "self.pool_size = pool * batch_size", "self.pool_size = len(self.lengths)",
           "tests/train/test_batches.py", "grouped batches are cut within pools of the given number of batches, not over the epoch"),
    Mutant("M66", "src/awrsr/train/batches.py", 'parts) / parts, side="right")', 'parts) / parts, side="left")',
           "tests/train/test_batches.py", "position cuts split a run into equal real positions (4 4 | 4 2 2 is not 8 | 12 vs 4)"),
    Mutant("M67", "src/awrsr/train/batches.py", "plain_largest = int(lengths[0]) * -(-len(lengths) // parts)",
           "plain_largest = int(lengths[0]) * (len(lengths) // parts)", "tests/train/test_batches.py",
           "a plain batch has ceil(rows / parts) rows: equal positions that fit it need no fallback"),
    Mutant("M68", "src/awrsr/train/batches.py", "widest = int(np.argmax(np.diff(bounds)))",
           "widest = int(np.argmin(np.diff(bounds)))", "tests/train/test_batches.py",
           "padded cuts halve the widest batch, never leaving an empty one"),
    Mutant("M69", "src/awrsr/train/batches.py", "    def __len__(self) -> int:\n        return self.size\n",
           "    def __len__(self) -> int:\n        return self.size - 1\n", "tests/train/test_batches.py",
           "a loader's len() counts its last partial batch (Lightning takes len() batches an epoch)"),
    Mutant("M70", "src/awrsr/train/callbacks.py", 'self._earlier_sessions_s = float(state_dict["elapsed_seconds"])',
           "self._earlier_sessions_s = 0.0", "tests/train/test_resume.py",
           "a resumed run's training time includes the earlier sessions'"),
    Mutant("M71", "src/awrsr/train/callbacks.py", "        if not self._started:  # an epoch end",
           "        if False:  # an epoch end", "tests/train/test_resume.py",
           "an epoch end replayed on resume adds no epoch time"),
    Mutant("M72", "src/awrsr/train/callbacks.py", '        if not trainer.sanity_checking:\n            pl_module.log("time/validation_s"',
           '        if True:\n            pl_module.log("time/validation_s"', "tests/train/test_resume.py",
           "the sanity check's validation is not logged as a validation time"),
    Mutant("M73", "src/awrsr/train/callbacks.py", "        if value > self._best:", "        if value >= self._best:",
           "tests/train/test_selection.py", "the epoch lines count a tie with the best as no gain, as early stopping does"),
    Mutant("M74", "src/awrsr/train/callbacks.py", "int(self.early_stopping.wait_count)", "0",
           "tests/train/test_selection.py", "the epoch lines go on from early stopping's restored count on resume"),
    Mutant("M75", "src/awrsr/train/callbacks.py",
           "    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:\n        self._fit_started = time.perf_counter()\n",
           "", "tests/train/test_resume.py", "training time counts from the fit's start, not from the timer's creation"),
    Mutant("M76", "src/awrsr/train/callbacks.py", 'self.train_seconds = list(state_dict["train_seconds"])',
           "self.train_seconds = []", "tests/train/test_resume.py", "a resumed run keeps the earlier sessions' epoch times"),
    Mutant("M77", "src/awrsr/data/tabular.py", "return row + 1 + int(self.has_header)", "return row + 1",
           "tests/data/test_data_tabular.py", "a line worked out from the row number counts the header line"),
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

"""Check that the tests can fail: plant known, plausible bugs one at a time and see each caught.

Each mutant below is a one-line (or one-block) change to the library that a test must catch. They
come from eight reviews by mutation (sessions 22 to 24) that found tests which passed on broken
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
    Mutant("M78", "src/awrsr/models/config.py", '            if value < 1:\n', '            if value < 0:\n', "tests/models/test_model_config.py", "sizes below 1 are refused"),
    Mutant("M79", "src/awrsr/models/config.py", 'if value is not None and not 0.0 <= value < 1.0:', 'if value is not None and not 0.0 <= value <= 1.0:', "tests/models/test_model_config.py", "dropout 1.0 is refused"),
    Mutant("M80", "src/awrsr/models/config.py", 'for field_name in ("dropout", "attn_dropout"):', 'for field_name in ("dropout",):', "tests/models/test_model_config.py", "attn_dropout is range-checked too"),
    Mutant("M81", "src/awrsr/models/config.py", 'if not self.norm_eps > 0:', 'if self.norm_eps < 0:', "tests/models/test_model_config.py", "norm_eps 0 is refused"),
    Mutant("M82", "src/awrsr/models/config.py", 'if self.refine_init_std < 0:', 'if self.refine_init_std < -1:', "tests/models/test_model_config.py", "a negative refine_init_std is refused"),
    Mutant("M83", "src/awrsr/models/config.py", 'if not 0 <= b < self.num_blocks]', 'if not b < self.num_blocks]', "tests/models/test_model_config.py", "a negative refine_blocks index is refused"),
    Mutant("M84", "src/awrsr/models/config.py", 'if not 0.0 < self.mask_prob < 1.0:', 'if not 0.0 < self.mask_prob <= 1.0:', "tests/models/test_model_config.py", "mask_prob 1.0 is refused"),
    Mutant("M85", "src/awrsr/models/config.py", 'if self.inner_size is not None and self.inner_size < 1:', 'if self.inner_size is not None and self.inner_size < 0:', "tests/models/test_model_config.py", "inner_size 0 is refused"),
    Mutant("M86", "src/awrsr/models/config.py", 'return self.dropout if self.attn_dropout is None else self.attn_dropout', 'return self.attn_dropout or self.dropout', "tests/models/test_model_config.py", "attn_dropout 0.0 is a setting, not unset"),
    Mutant("M87", "src/awrsr/models/config.py", 'return self.hidden_size if self.inner_size is None else self.inner_size', 'return self.hidden_size', "tests/models/test_model_config.py", "inner_size sets the feed-forward width"),
    Mutant("M88", "src/awrsr/config_types.py", 'if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):', 'if isinstance(value, numbers.Real) and math.isfinite(value):', "tests/test_config_types.py", "true is no float setting"),
    Mutant("M89", "src/awrsr/registry.py", '            if name in self._entries:\n                raise ValueError(f"{self.kind} {name!r} is registered twice")\n', '', "tests/test_registry.py", "a name registered twice is refused"),
    Mutant("M90", "src/awrsr/registry.py", '        return name in self._entries', '        return name.lower() in self._entries', "tests/test_registry.py", "registry names are exact (membership)"),
    Mutant("M91", "src/awrsr/registry.py", '            return self._entries[name]', '            return self._entries[name.lower()]', "tests/test_registry.py", "registry names are exact (lookup)"),
    Mutant("M92", "src/awrsr/strict_yaml.py", 'path = args[i + 1] if arg == "--config" and i + 1 < len(args) else', 'path = args[i + 1] if arg == "--config" else', "tests/test_strict_yaml.py", "a trailing --config is the parser's error, not an IndexError"),
    Mutant("M93", "src/awrsr/strict_yaml.py", ' and not (isinstance(value, yaml.ScalarNode) and value.tag.endswith(":str")):', ':', "tests/test_strict_yaml.py", "a section may name a file of its settings"),
    Mutant("M94", "src/awrsr/strict_yaml.py", '        if err.context_mark and mark and mark.index >= len(text.rstrip()):', '        if False:', "tests/test_strict_yaml.py", "an unclosed bracket is named where it opened"),
    Mutant("M95", "src/awrsr/strict_yaml.py", '        if fit:\n', '        if True:\n', "tests/test_strict_yaml.py", "only fit configs are held to the fit sections"),
    Mutant("M96", "src/awrsr/run_config.py", 'reference = before[key] if key in before else defaults.get(key)', 'reference = before.get(key)', "tests/test_run_config.py", "a field missing from the stored config counts as its default"),
    Mutant("M97", "src/awrsr/run_config.py", '("model.refine_value_form", "model.refine \'value\'", lambda model, train: model.refine == "value"),', '("model.refine_value_form", "model.refine \'value\'", lambda model, train: model.refine != "none"),', "tests/test_run_config.py", "refine_value_form is read by M_value alone"),
    Mutant("M98", "src/awrsr/run_config.py", 'lambda model, train: train.loss != "ce"),', 'lambda model, train: train.loss == "bce"),', "tests/test_run_config.py", "every loss but ce reads num_negatives"),
    Mutant("M99", "src/awrsr/run_directory.py", '            if folder == created:\n                break\n', '', "tests/test_run_directory.py", "a failed fit removes no folder above the ones it made"),
    Mutant("M100", "src/awrsr/run_directory.py", '    if created is None:\n        return\n', '', "tests/test_run_directory.py", "a failed fit removes no folder it did not make"),
    Mutant("M101", "src/awrsr/run_directory.py", 'RUN_FILES = (METRICS_FILE, *REQUIRED_FILES, TEST_RANKS_FILE, LOG_FILE,', 'RUN_FILES = (METRICS_FILE, *REQUIRED_FILES, LOG_FILE,', "tests/test_run_directory.py", "a user's test_ranks.npy is never replaced"),
    Mutant("M102", "src/awrsr/files.py", '        write(temporary)\n        os.replace(temporary, path)\n', '        write(path)\n', "tests/test_files.py", "results are written through a temporary and renamed"),
    Mutant("M103", "src/awrsr/files.py", '    finally:\n        temporary.unlink(missing_ok=True)\n', '    except BaseException:\n        raise\n', "tests/test_files.py", "a failed write leaves no temporary"),
    Mutant("M104", "src/awrsr/files.py", 'csv.writer(buffer, lineterminator="\\n")', 'csv.writer(buffer)', "tests/test_files.py", "CSV rows end with a bare newline"),
    Mutant("M105", "src/awrsr/files.py", 'where = "is a file" if existing == path else f"lies inside the file {existing}"', 'where = "is a file"', "tests/test_files.py", "an output_dir under a file names that file"),
    Mutant("M106", "src/awrsr/data/report.py", 'f"{stats.removed_users:,} / {stats.removed_items:,} / {stats.removed_interactions:,}"', 'f"{stats.removed_items:,} / {stats.removed_users:,} / {stats.removed_interactions:,}"', "tests/data/test_data_dataset.py", "the k-core row gives users / items / interactions in order"),
    Mutant("M107", "src/awrsr/data/report.py", '("density", f"{stats.density:.4%}"),', '("density", f"{stats.density:.4f}"),', "tests/data/test_data_dataset.py", "density is shown as a percentage"),
    Mutant("M108", "src/awrsr/data/report.py", 'f"{stats.min_length} / {stats.median_length:g} / {stats.mean_length:.2f} / {stats.max_length}"', 'f"{stats.min_length} / {stats.mean_length:g} / {stats.median_length:.2f} / {stats.max_length}"', "tests/data/test_data_dataset.py", "the length row gives min / median / mean / max in order"),
    Mutant("M109", "src/awrsr/data/report.py", '("duplicates", f"{stats.duplicates} ({stats.duplicates_removed:,} removed)"),', '("duplicates", f"{stats.duplicates} ({stats.removed_interactions:,} removed)"),', "tests/data/test_data_dataset.py", "the duplicates row counts the duplicates removed"),
    Mutant("M110", "src/awrsr/data/synthetic.py", '    weights = 1.0 / np.arange(1, num_items + 1)\n', '    weights = np.ones(num_items)\n', "tests/data/test_data_synthetic.py", "popularity is 1 / rank"),
    Mutant("M111", "src/awrsr/data/synthetic.py", 'walk[:, 0] = rng.integers(0, cfg.num_items, size=cfg.num_users)', 'walk[:, 0] = rng.integers(1, cfg.num_items, size=cfg.num_users)', "tests/data/test_data_synthetic.py", "any item can start a history"),
    Mutant("M112", "src/awrsr/data/synthetic.py", '        jump = rng.choice(cfg.num_items, size=cfg.num_users, p=pop)', '        jump = rng.choice(cfg.num_items, size=cfg.num_users)', "tests/data/test_data_synthetic.py", "jumps follow the popularity"),
    Mutant("M113", "src/awrsr/experiments/compare.py", "len(runs), 0, is_reference=variant == reference)",
           "len(runs), 0, is_reference=True)", "tests/experiments/test_compare_statistics.py", "a variant with no seed shared with the base is not a reference"),
    Mutant("M114", "src/awrsr/experiments/compare.py", "cell = f\"{c.mean:.4f} ± {c.std:.4f}\" if c.runs > 1 else f\"{c.mean:.4f}\"",
           "cell = f\"{c.mean:.4f} ± {c.std:.4f}\"", "tests/experiments/test_compare_statistics.py", "one run shows no ± spread"),
    Mutant("M115", "src/awrsr/experiments/compare.py", "rows.append([variant, first.runs, first.pairs,",
           "rows.append([variant, first.pairs, first.runs,", "tests/experiments/test_compare_statistics.py", "table.csv's runs and pairs columns hold runs and pairs"),
    Mutant("M116", "src/awrsr/experiments/compare.py", "r[\"variant\"], r[\"seed\"], m[\"selection\"][\"best_epoch\"], m[\"selection\"][\"epochs_trained\"],",
           "r[\"variant\"], r[\"seed\"], m[\"selection\"][\"epochs_trained\"], m[\"selection\"][\"best_epoch\"],", "tests/experiments/test_compare_statistics.py", "runs.csv's best_epoch and epochs columns are not swapped"),
    Mutant("M117", "src/awrsr/experiments/compare.py", "*[f\"test_{m}\" for m in metric_names]",
           "*[f\"test_{m}\" for m in reversed(metric_names)]", "tests/experiments/test_compare_statistics.py", "runs.csv's metric values sit under their own headers"),
    Mutant("M118", "src/awrsr/experiments/compare.py", "seen = \"seen items filtered\" if switches == {True} else \"seen items NOT filtered\" if switches == {False}",
           "seen = \"seen items NOT filtered\" if switches == {True} else \"seen items filtered\" if switches == {False}", "tests/experiments/test_compare_statistics.py", "table.md says whether seen items were filtered"),
    Mutant("M119", "src/awrsr/experiments/compare.py", "counted = str(first.runs) if first.is_reference or first.pairs == first.runs else",
           "counted = str(first.runs) if first.pairs == first.runs else", "tests/experiments/test_compare_statistics.py", "the base's seeds column is its plain run count"),
    Mutant("M120", "src/awrsr/experiments/compare.py", "seconds = sum(epoch_seconds[variant]) / len(epoch_seconds[variant])",
           "seconds = max(epoch_seconds[variant])", "tests/experiments/test_compare_statistics.py", "s / epoch is the mean over a variant's runs"),
    Mutant("M121", "src/awrsr/experiments/compare.py", "if not 0 <= seed < 2**32:",
           "if not 0 <= seed <= 2**32:", "tests/experiments/test_compare_statistics.py", "seeds stop at 2**32 - 1, numpy's range"),
    Mutant("M122", "src/awrsr/experiments/compare.py", "_UNSAFE_NAME = re.compile(r\"[/\\\\\\x00]|^\\.\\.?$|^$\")",
           "_UNSAFE_NAME = re.compile(r\"[/\\\\\\x00]|^\\.\\.$|^$\")", "tests/experiments/test_compare_statistics.py", "'.' is no variant directory name"),
    Mutant("M123", "src/awrsr/experiments/compare.py", "        if all(c in inert for c in changed):",
           "        if any(c in inert for c in changed):", "tests/experiments/test_experiments.py", "only a variant whose every change is inert is refused"),
    Mutant("M124", "src/awrsr/experiments/compare.py", "        for stale in (output_dir / \"by_length.md\", output_dir / \"by_length.csv\"):  # never beside a newer table\n            stale.unlink(missing_ok=True)\n",
           "", "tests/experiments/test_compare_statistics.py", "a stale by-length table is removed when none can be made"),
    Mutant("M125", "src/awrsr/experiments/compare.py", "return json.dumps(value) if isinstance(value, bool) or value is None else str(value)",
           "return json.dumps(value) if isinstance(value, bool) else str(value)", "tests/experiments/test_compare_statistics.py", "a None value is named null, as YAML writes it"),
    Mutant("M126", "src/awrsr/experiments/runs.py", "RESOLVED_SECTIONS = (\"data\", \"model\", \"train\", \"evaluation\")",
           "RESOLVED_SECTIONS = (\"data\", \"model\", \"train\")", "tests/experiments/test_experiments.py", "a finished run is reused only with the same evaluation settings"),
    Mutant("M127", "src/awrsr/experiments/runs.py", "    if (run_dir / CHECKPOINT_DIR / LAST_CHECKPOINT).is_file():\n        return \"interrupted; it resumes\"\n",
           "", "tests/experiments/test_experiments.py", "a run with a last checkpoint is reported as resuming"),
    Mutant("M128", "src/awrsr/experiments/runs.py", "if not sep or not key:",
           "if not sep:", "tests/experiments/test_experiments.py", "--set with an empty key is refused"),
    Mutant("M129", "src/awrsr/experiments/runs.py", "json.dumps(value) if isinstance(value, (list, dict, bool)) or value is None else str(value)",
           "json.dumps(value) if isinstance(value, (list, dict, bool)) else str(value)", "tests/experiments/test_experiments.py", "None options reach the config as null, not the path 'None'"),
    Mutant("M130", "src/awrsr/experiments/by_length.py", "if not edges or any(b <= a for a, b in zip(edges, edges[1:])) or edges[0] < 1:",
           "if not edges or any(b < a for a, b in zip(edges, edges[1:])) or edges[0] < 1:", "tests/experiments/test_compare_statistics.py", "length edges must increase strictly"),
    Mutant("M131", "src/awrsr/experiments/by_length.py", "    if stored is not None and stored != fingerprint:",
           "    if False:", "tests/experiments/test_experiments.py", "by_length refuses data other than the run's fingerprint"),
    Mutant("M132", "src/awrsr/experiments/by_length.py", "        reference = references.get(variant, base)\n        seeds: list[int] = []",
           "        reference = base\n        seeds: list[int] = []", "tests/experiments/test_compare_statistics.py", "by_length compares a variant with its own compare_to reference"),
    Mutant("M133", "src/awrsr/experiments/by_length.py", "text += f\" ({gain}, p={c['p_value']:.2f})\" if c[\"pairs\"] > 1 else f\" ({gain})\"",
           "text += f\" ({gain}, p={c['p_value']:.2f})\"", "tests/experiments/test_compare_statistics.py", "one pair shows no p-value in by_length.md"),
    Mutant("M134", "src/awrsr/experiments/by_length.py", "seeds = str(runs) if not pairs or pairs == runs else f\"{runs} ({pairs} paired)\"",
           "seeds = str(runs)", "tests/experiments/test_compare_statistics.py", "by_length.md counts the paired seeds apart"),
    Mutant("M135", "src/awrsr/experiments/by_length.py", "shown = [b for b in range(len(labels)) if any(row.counts[b] for row in rows.values())]",
           "shown = [b for b in range(len(labels)) if header.counts[b]]", "tests/experiments/test_compare_statistics.py", "a bucket only another variant's data has is shown"),
    Mutant("M136", "src/awrsr/experiments/by_length.py", "\"runs\": len(runs), \"pairs\": len(seeds)}",
           "\"runs\": len(runs), \"pairs\": len(runs) if seeds else 0}", "tests/experiments/test_compare_statistics.py", "by_length pairs are the shared seeds, not all runs"),
    Mutant("M137", "src/awrsr/experiments/figures.py", "image = ax.imshow(matrix[0, 0, -k:, -k:].numpy(), cmap=\"viridis\", vmin=0)",
           "image = ax.imshow(matrix[0, 0, :k, :k].numpy(), cmap=\"viridis\", vmin=0)", "tests/experiments/test_figures.py", "the heatmap shows the last k positions, not the padding"),
    Mutant("M138", "src/awrsr/experiments/figures.py", "k = min(last, int(cases.history.lengths[index]), max_len)",
           "k = min(last, max_len)", "tests/experiments/test_figures.py", "a short history draws only its own positions"),
    Mutant("M139", "src/awrsr/experiments/figures.py", "inputs = torch.from_numpy(cases.history.select(np.array([index])).to_padded(max_len))",
           "inputs = torch.from_numpy(cases.history.select(np.array([0])).to_padded(max_len))", "tests/experiments/test_figures.py", "the attention case holds the chosen user's history"),
    Mutant("M140", "src/awrsr/experiments/figures.py", "long_enough = np.flatnonzero(lengths >= last)",
           "long_enough = np.flatnonzero(lengths > last)", "tests/experiments/test_figures.py", "the default user has at least `last` items"),
    Mutant("M141", "src/awrsr/experiments/figures.py", "if not 0 <= user < len(lengths):",
           "if not 0 <= user <= len(lengths):", "tests/experiments/test_figures.py", "--user equal to the number of test users is out of range"),
    Mutant("M142", "src/awrsr/experiments/figures.py", "ax.fill_between(ns, curves.min(axis=0), curves.max(axis=0),",
           "ax.fill_between(ns, curves.mean(axis=0) - curves.std(axis=0), curves.mean(axis=0) + curves.std(axis=0),", "tests/experiments/test_figures.py", "the NDCG@N band spans the lowest to the highest seed"),
    Mutant("M143", "src/awrsr/experiments/figures.py", "plot_curves(runs, \"val/ndcg@5\", \"validation NDCG@5\", out / \"valid_ndcg5.png\"),",
           "plot_curves(runs, \"val/ndcg@10\", \"validation NDCG@5\", out / \"valid_ndcg5.png\"),", "tests/experiments/test_figures.py", "valid_ndcg5.png draws val/ndcg@5"),
    Mutant("M144", "src/awrsr/experiments/figures.py", "ax.bar(x, [means.get(b, np.nan) for b in buckets], width, yerr=[stds.get(b, 0.0) for b in buckets],",
           "ax.bar(x, [means.get(b, np.nan) for b in buckets], width, yerr=[means.get(b, 0.0) for b in buckets],", "tests/experiments/test_figures.py", "the error bars are the std, not the mean"),
    Mutant("M145", "src/awrsr/experiments/figures.py", "return int(long_enough[0]) if len(long_enough) else int(lengths.argmax())",
           "return int(long_enough[0]) if len(long_enough) else 0", "tests/experiments/test_figures.py", "without a long enough user the longest is drawn"),
    Mutant("M146", "src/awrsr/experiments/figures.py", "data = history.select(\"epoch\", column).drop_nulls()",
           "data = history.select(\"epoch\", column).drop_nulls().sort(column)", "tests/experiments/test_figures.py", "curves are drawn in epoch order"),
    Mutant("M147", "src/awrsr/experiments/runs.py", "    ignore = REUSABLE_CHANGES if now is not None else MACHINE_OPTIONS",
           "    ignore = REUSABLE_CHANGES if trained_on is not None else MACHINE_OPTIONS", "tests/experiments/test_experiments.py", "data.path may differ only where the data's fingerprint is checked now"),
    Mutant("M148", "src/awrsr/experiments/figures.py", "            run = directory / variant / f\"seed-{seed}\"\n            if (run / METRICS_FILE).is_file():\n                runs.setdefault(variant, []).append(run)",
           "            run = directory / variant / f\"seed-{seed}\"\n            runs.setdefault(variant, []).append(run)", "tests/experiments/test_figures.py", "a run in runs.csv that is training again is not drawn"),
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

"""What compare tabulates, from hand-made run records (no training): runs paired by seed, the
sample std, improvements over the shared seeds, the paired p-value, a named base, each seed reaching
its run, table.csv columns, and the by-length table paired by seed."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from awrsr.experiments import by_length
from awrsr.experiments.compare import run_compare, tabulate, write_outputs

QUIET = Console(quiet=True)
METRICS = ("hr@1", "hr@5", "ndcg@5", "ndcg@10")


def run_record(variant, seed, values, best_epoch=1, epochs=1, filter_seen=True):
    """A finished run with its own value per metric (``values``: metric -> value)."""
    return {"variant": variant, "seed": seed, "run_dir": f"/nowhere/{variant}/seed-{seed}", "metrics": {
        "test": dict(values), "selection": {"best_epoch": best_epoch, "epochs_trained": epochs},
        "time": {"mean_epoch_s": 1.0}, "protocol": {"filter_seen": filter_seen}, "machine": {"device": "cpu"}}}


def rec(variant, seed, value):
    """A finished run whose four table metrics all equal ``value``."""
    return run_record(variant, seed, {m: value for m in METRICS})


# base has seeds 1, 2, 3; the variant only 2 and 3 (a partial comparison)
PARTIAL = [rec("none", 1, 0.10), rec("none", 2, 0.20), rec("none", 3, 0.40), rec("add", 2, 0.22), rec("add", 3, 0.43)]


def test_pairs_by_seed_not_by_position_and_reports_sample_std():
    cell = tabulate(PARTIAL, base="none")["add"]["ndcg@5"]
    assert (cell.runs, cell.pairs) == (2, 2)
    assert cell.mean == pytest.approx(0.325)
    assert cell.std == pytest.approx(0.14849242, abs=1e-7)  # sample std (n-1): |0.43-0.22|/sqrt(2); ddof=0 gives 0.105
    # vs the base on seeds 2 and 3 (mean 0.30), not on its first two seeds (mean 0.15)
    assert cell.improvement == pytest.approx((0.325 - 0.30) / 0.30 * 100)  # 8.333 %
    # paired differences 0.02, 0.03: t = 5 with 1 df, two-sided p = 1 - 2 atan(5) / pi
    assert cell.p_value == pytest.approx(1 - 2 * math.atan(5) / math.pi, abs=1e-6)  # 0.12567
    base = tabulate(PARTIAL, base="none")["none"]["ndcg@5"]
    assert base.is_reference and base.mean == pytest.approx(0.70 / 3) and base.std == pytest.approx(0.15275252, abs=1e-7)


def test_mean_and_std_cover_all_of_a_variants_runs_improvement_only_the_shared_seeds():
    records = [rec("none", 1, 0.10), rec("none", 2, 0.20), rec("add", 2, 0.30), rec("add", 3, 0.50)]
    cell = tabulate(records, base="none")["add"]["ndcg@5"]
    assert (cell.runs, cell.pairs) == (2, 1)
    assert cell.mean == pytest.approx(0.40) and cell.std == pytest.approx(math.sqrt(0.02))  # both runs
    assert cell.improvement == pytest.approx(50.0)  # seed 2 only: 0.30 vs 0.20
    assert math.isnan(cell.p_value)


def test_one_pair_is_written_without_a_p_value(tmp_path):
    records = [rec("none", 1, 0.10), rec("none", 2, 0.20), rec("add", 2, 0.30), rec("add", 3, 0.50)]
    write_outputs(records, tabulate(records, base="none"), tmp_path, "model.refine", "none")
    md = (tmp_path / "table.md").read_text()
    assert "| add | 0.4000 ± 0.1414 (+50.00%, p=n/a)" in md and "nan" not in md.lower(), md


def test_table_csv_columns_hold_what_their_headers_say(tmp_path):
    table = tabulate(PARTIAL, base="none")
    write_outputs(PARTIAL, table, tmp_path, "model.refine", "none")
    rows = {r["variant"]: r for r in csv.DictReader((tmp_path / "table.csv").read_text().splitlines())}
    add = rows["add"]
    assert float(add["ndcg@5_mean"]) == pytest.approx(0.325)
    assert float(add["ndcg@5_std"]) == pytest.approx(0.14849242, abs=1e-7)
    assert float(add["ndcg@5_improvement_pct"]) == pytest.approx(25 / 3)
    assert float(add["ndcg@5_p_value"]) == pytest.approx(1 - 2 * math.atan(5) / math.pi, abs=1e-6)
    assert (add["runs"], add["pairs"]) == ("2", "2")
    md = (tmp_path / "table.md").read_text()
    assert "| add | 0.3250 ± 0.1485 (+8.33%, p=0.126)" in md


def fake_runs(monkeypatch, calls):
    """compare's run_or_reuse replaced: each run 'scores' seed / 8, plus 1 / 16 with refine add
    (binary fractions, so that differences are exact)."""
    def run_or_reuse(config, options, run_dir, console, wait=True, fingerprints=None):
        calls.append((run_dir.parent.name, run_dir.name, options["train.seed"]))
        value = 0.125 * options["train.seed"] + (0.0625 if options.get("model.refine") == "add" else 0.0)
        return rec("x", 0, value)["metrics"]

    monkeypatch.setattr("awrsr.experiments.compare.run_or_reuse", run_or_reuse)


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "base.yaml"
    path.write_text("train: {max_epochs: 1}\n")
    return str(path)


def test_each_run_trains_with_its_own_seed(monkeypatch, tmp_path, config):
    calls = []
    fake_runs(monkeypatch, calls)
    table = run_compare(config, ["add"], [1, 2], tmp_path / "c", console=QUIET)
    assert sorted(calls) == [("add", "seed-1", 1), ("add", "seed-2", 2), ("none", "seed-1", 1), ("none", "seed-2", 2)]
    none, add = table["none"]["ndcg@5"], table["add"]["ndcg@5"]
    assert none.mean == 0.1875 and none.std == pytest.approx(0.125 / math.sqrt(2))
    assert add.mean == 0.25 and add.improvement == pytest.approx(100 / 3)
    assert math.isnan(add.p_value)  # both differences exactly 1/16: no variance, an undefined t statistic


def test_a_named_base_that_is_not_the_first_entry_is_the_base(monkeypatch, tmp_path, config):
    fake_runs(monkeypatch, [])
    variants = {"with-add": {"model.refine": "add"}, "plain": {}}
    table = run_compare(config, variants, [1, 2], tmp_path / "c", base="plain", console=QUIET)
    assert list(table) == ["plain", "with-add"]
    assert table["plain"]["ndcg@5"].is_reference and math.isnan(table["plain"]["ndcg@5"].improvement)
    assert table["with-add"]["ndcg@5"].improvement == pytest.approx(100 / 3)
    lines = (tmp_path / "c" / "table.md").read_text().splitlines()
    assert lines[4].startswith("| plain | 0.1875 ± 0.0884 |") and lines[5].startswith("| with-add | 0.2500 ± 0.0884 (+33.33%")


def test_by_length_pairs_buckets_by_seed(monkeypatch):
    """Two test users, history lengths 3 and 8 (buckets 1-5 and >5 with edges [5]); HR@1 per user
    from scripted ranks. The base has seeds 1-3, the variant seeds 2-3."""
    ranks = {("none", 1): [2, 2], ("none", 2): [2, 1], ("none", 3): [1, 1], ("add", 2): [1, 1], ("add", 3): [1, 1]}
    monkeypatch.setattr(by_length, "held_out_history_lengths", lambda run_dir, cache=None, data=None: ("fp", np.array([3, 8])))
    monkeypatch.setattr(by_length, "held_out_ranks",
                        lambda run_dir, recompute=True: np.array(ranks[Path(run_dir).parent.name, int(Path(run_dir).name[5:])]))
    records = [{"variant": v, "seed": s, "run_dir": f"/x/{v}/seed-{s}"} for v, s in ranks]
    labels, rows, _ = by_length.length_table(records, {"none": "none", "add": "none"}, "none", edges=[5], metric="hr@1")
    assert labels == ["1-5", ">5"] and rows["add"].counts == [1, 1]
    short, long_ = rows["add"].cells
    # bucket 1-5: variant [1, 1] vs base seeds 2, 3 [0, 1]: +100 %, differences [1, 0]: t = 1, 1 df, p = 0.5
    assert short["mean"] == 1.0 and short["improvement"] == pytest.approx(100.0) and short["p_value"] == pytest.approx(0.5)
    # bucket >5: variant [1, 1] vs base [1, 1]: +0 %, identical pairs: p = 1
    assert long_["improvement"] == pytest.approx(0.0) and long_["p_value"] == 1.0
    assert rows["none"].cells[0]["mean"] == pytest.approx(1 / 3)  # base over all its seeds


def test_by_length_edges_are_inclusive_upper_bounds():
    assert by_length.assign_buckets(np.array([1, 5, 6, 10, 11, 200, 201]), [5, 10, 200]).tolist() == [0, 0, 1, 1, 2, 2, 3]
    assert by_length.bucket_labels([1, 5]) == ["1", "2-5", ">5"]


def test_an_improvement_over_a_reference_mean_of_zero_is_not_a_number(tmp_path):
    records = [rec("none", 1, 0.0), rec("none", 2, 0.0), rec("add", 1, 0.01), rec("add", 2, 0.03)]
    write_outputs(records, tabulate(records, base="none"), tmp_path, "model.refine", "none")
    md = (tmp_path / "table.md").read_text()
    assert "| add | 0.0200 ± 0.0141 (n/a, p=0.295)" in md and "nan" not in md


def test_a_cell_is_summed_up_over_all_its_seeds_and_paired_over_the_shared_ones():
    from awrsr.experiments.stats import summary_against

    # differences 0.1 and 0.2 on seeds 1, 2: t = 0.15 / (0.0707 / sqrt 2) = 3 on 1 degree of freedom
    mean, std, gain, p = summary_against({1: 0.2, 2: 0.4, 3: 0.9}, {1: 0.1, 2: 0.2})
    assert (mean, std) == pytest.approx((0.5, math.sqrt(0.13)))  # seed 3 counts here
    assert gain == pytest.approx(100.0)  # 0.3 against 0.15 on the shared seeds only
    assert p == pytest.approx(0.2048, abs=1e-4)
    assert all(math.isnan(x) for x in summary_against({1: 0.2}, {})[2:])


def test_the_paired_test_needs_one_value_per_seed_on_both_sides():
    from awrsr.experiments.stats import paired_p_value

    # not truncated to the first two pairs, whose equal differences would give p = 1 silently
    with pytest.raises(ValueError, match="one value per seed on both sides"):
        paired_p_value([0.1, 0.2, 0.5], [0.1, 0.2])


def test_runs_csv_puts_each_value_under_its_own_header(tmp_path):
    values = {"hr@1": 0.1, "hr@5": 0.5, "ndcg@5": 0.3, "ndcg@10": 0.4, "mrr": 0.2}
    records = [run_record("none", 1, values, best_epoch=2, epochs=5), run_record("add", 1, values, best_epoch=3, epochs=7)]
    write_outputs(records, tabulate(records, base="none"), tmp_path, "model.refine", "none")
    rows = list(csv.DictReader((tmp_path / "runs.csv").read_text().splitlines()))
    assert [(r["variant"], r["seed"], r["best_epoch"], r["epochs"]) for r in rows] == [
        ("none", "1", "2", "5"), ("add", "1", "3", "7")]
    assert {m: float(rows[0][f"test_{m}"]) for m in values} == values


def test_table_md_rows_by_hand(tmp_path):
    """The base (3 runs) shows its plain count and no improvement; a variant with one run shows no
    spread; s / epoch is the mean over a variant's runs."""
    records = [rec("none", 1, 0.10), rec("none", 2, 0.20), rec("none", 3, 0.40), rec("add", 2, 0.22)]
    for r, seconds in zip(records, (1.0, 2.0, 6.0, 4.0)):
        r["metrics"]["time"]["mean_epoch_s"] = seconds
    table = tabulate(records, base="none")
    write_outputs(records, table, tmp_path, "model.refine", "none")
    md = (tmp_path / "table.md").read_text()
    assert "(full ranking, seen items filtered)" in md
    lines = md.splitlines()
    assert lines[4] == "| none | " + " | ".join(["0.2333 ± 0.1528"] * 4) + " | 3 | 3.0 |"
    assert lines[5] == "| add | " + " | ".join(["0.2200 (+10.00%, p=n/a)"] * 4) + " | 1 | 4.0 |"
    rows = {r["variant"]: r for r in csv.DictReader((tmp_path / "table.csv").read_text().splitlines())}
    assert (rows["none"]["runs"], rows["none"]["pairs"]) == ("3", "0")
    assert (rows["add"]["runs"], rows["add"]["pairs"]) == ("1", "1")


def test_table_md_names_the_pairs_trained_on_different_machines(tmp_path):
    """A CPU run paired with a GPU run of the same seed: its improvement and p-value compare the
    machines too. Pairs against the base and against a ``compare_to`` reference are both checked;
    a run without a recorded device is not counted, and same-device pairs are not named."""
    records = [rec(v, s, 0.1 + s / 100) for v in ("none", "simp", "simp-logits", "add") for s in (1, 2, 3)]
    device = {("none", 1): "gpu", ("none", 2): "gpu", ("simp", 2): "gpu", ("simp", 3): "gpu",
              ("simp-logits", 3): "gpu", ("add", 1): None}
    for r in records:
        if (r["variant"], r["seed"]) in device:
            r["metrics"]["machine"]["device"] = device[r["variant"], r["seed"]]
    del records[-1]["metrics"]["machine"]  # add seed 3: recorded before runs named their machine
    table = tabulate(records, base="none", references={"simp-logits": "simp"})
    write_outputs(records, table, tmp_path, "model.refine", "none", {"simp-logits": "simp"})
    md = (tmp_path / "table.md").read_text()
    # simp vs none: seed 1 (cpu / gpu) and seed 3 (gpu / cpu) cross, seed 2 is gpu on both;
    # simp-logits vs simp: seed 2 crosses, seed 3 is gpu on both; add: seed 1 and 3 unrecorded, seed 2 crosses
    assert ("Pairs trained on different machines (their improvement and p-value compare the machines as well as "
            "the models): simp against none, 2 of 3 pairs (seeds 1, 3); simp-logits against simp, 1 of 3 pairs "
            "(seed 2); add against none, 1 of 1 pairs (seed 2; 2 more without a recorded device).") in md, md
    same = [rec("none", 1, 0.1), rec("add", 1, 0.2)]
    write_outputs(same, tabulate(same, base="none"), tmp_path, "model.refine", "none")
    assert "different machines" not in (tmp_path / "table.md").read_text()


def test_pairs_across_machines_are_checked_against_the_base_named_not_another_self_reference(tmp_path):
    """Table 3's layout: each depth is its own reference. With the base (2 blocks) not finished
    yet, a variant compared with it has no pair, even beside another self-referenced variant (1
    block) whose run trained elsewhere."""
    records = [rec("blocks1", 1, 0.1), rec("add", 1, 0.2)]
    records[0]["metrics"]["machine"]["device"] = "gpu"
    references = {"blocks1": "blocks1", "blocks2": "blocks2", "add": "blocks2"}
    table = tabulate(records, base="blocks2", references=references)
    write_outputs(records, table, tmp_path, "model.num_blocks", "blocks2")
    assert "different machines" not in (tmp_path / "table.md").read_text()


def test_table_md_says_whether_seen_items_were_filtered(tmp_path):
    for switches, said in (((False, False), "seen items NOT filtered"), ((True, False), "MIXED seen-item filtering")):
        records = [run_record(v, 1, {m: 0.1 for m in METRICS}, filter_seen=f) for v, f in zip(("none", "add"), switches)]
        write_outputs(records, tabulate(records, base="none"), tmp_path, "model.refine", "none")
        assert f"(full ranking, {said})" in (tmp_path / "table.md").read_text()


def test_a_variant_without_a_seed_shared_with_the_base_is_no_reference(tmp_path):
    records = [rec("none", 1, 0.10), rec("add", 2, 0.22)]
    table = tabulate(records, base="none")
    add = table["add"]["ndcg@5"]
    assert not add.is_reference and (add.runs, add.pairs) == (1, 0) and math.isnan(add.improvement)
    assert table["none"]["ndcg@5"].is_reference
    write_outputs(records, table, tmp_path, "model.refine", "none")
    assert "| add | 0.2200 (no seed shared with the base) |" in (tmp_path / "table.md").read_text()


def test_seeds_are_numpys_range_and_names_are_directory_names():
    from awrsr.errors import ConfigError
    from awrsr.experiments.compare import check_seeds, check_variant_names, value_name

    check_seeds([0, 2**32 - 1], {}, {})
    with pytest.raises(ConfigError, match=r"got 4294967296"):
        check_seeds([2**32], {}, {})
    for name in (".", "..", "", "a/b"):
        with pytest.raises(ConfigError, match="cannot be a directory name"):
            check_variant_names([name])
    check_variant_names(["...", ".5", "1e-05", "x" * 255])
    for name in ("x" * 256, "é" * 128):  # bytes, not characters, are what a file system counts
        with pytest.raises(ConfigError, match="is 256 bytes; a directory name under output_dir holds at most 255"):
            check_variant_names([name])
    assert [value_name(v) for v in (None, True, False, 0.1, "simp")] == ["null", "true", "false", "0.1", "simp"]


def test_a_stale_table_by_length_is_removed_when_none_can_be_made(monkeypatch, tmp_path, config):
    fake_runs(monkeypatch, [])
    out = tmp_path / "c"
    (out / "none" / "seed-1").mkdir(parents=True)  # an older comparison's run (beside it, its tables are its own)
    (out / "none" / "seed-1" / "config.yaml").write_text("model: {}\n")
    for name in ("by_length.md", "by_length.csv"):
        (out / name).write_text("an older comparison's table")
    run_compare(config, ["add"], [1], out, console=QUIET)  # the runs' records lie nowhere: no breakdown
    assert (out / "table.md").is_file()
    assert not (out / "by_length.md").exists() and not (out / "by_length.csv").exists()


def scripted_length_runs(monkeypatch, ranks, lengths, fingerprints=None, devices=None):
    """by_length's inputs replaced: ``ranks[(variant, seed)]`` per test user, ``lengths[variant]``
    (default ``lengths["*"]``), each variant's data fingerprint (default "fp") and each run's
    device (``devices[(variant, seed)]``, default "cpu")."""
    fingerprints, devices = fingerprints or {}, devices or {}

    def variant_seed(run_dir):
        return Path(run_dir).parent.name, int(Path(run_dir).name[5:])

    monkeypatch.setattr(by_length, "held_out_history_lengths", lambda run_dir, cache=None, data=None: (
        fingerprints.get(variant_seed(run_dir)[0], "fp"), np.array(lengths.get(variant_seed(run_dir)[0], lengths["*"]))))
    monkeypatch.setattr(by_length, "held_out_ranks", lambda run_dir, recompute=True: (  # None: no stored ranks
        None if ranks[variant_seed(run_dir)] is None else np.array(ranks[variant_seed(run_dir)])))
    return [{"variant": v, "seed": s, "run_dir": f"/x/{v}/seed-{s}",
             "metrics": {"machine": {"device": devices.get((v, s), "cpu")}}} for v, s in ranks]


def test_by_length_compares_a_variant_with_its_own_reference(monkeypatch):
    # HR@1 of two users (lengths 3 and 8, one per bucket): L1 scores 0, L2 1/2, L2+add 1
    ranks = {("L1", 1): [2, 2], ("L1", 2): [2, 2], ("L2", 1): [1, 2], ("L2", 2): [2, 1],
             ("L2+add", 1): [1, 1], ("L2+add", 2): [1, 1]}
    records = scripted_length_runs(monkeypatch, ranks, {"*": [3, 8]})
    references = {"L1": "L1", "L2": "L2", "L2+add": "L2"}
    _, rows, _ = by_length.length_table(records, references, "L1", edges=[5], metric="hr@1")
    short = rows["L2+add"].cells[0]
    # bucket 1-5: [1, 1] vs L2's [1, 0]: +100 %, not an improvement over L1's 0 (n/a)
    assert short["improvement"] == pytest.approx(100.0) and short["pairs"] == 2
    assert math.isnan(rows["L2"].cells[0]["improvement"]) and rows["L2"].note == ""


def test_by_length_markdown_by_hand(monkeypatch, tmp_path):
    """One user per bucket (lengths 3 and 8, edges [5]); HR@1. The base has seeds 1-3, 'add' seeds
    2-4 (two shared), 'one' seed 1 only (one pair: no p-value), 'other' ran on other data, whose
    user lies in a bucket no other variant has."""
    ranks = {("none", 1): [2, 1], ("none", 2): [2, 1], ("none", 3): [1, 1],
             ("add", 2): [1, 1], ("add", 3): [1, 1], ("add", 4): [2, 1],
             ("one", 1): [1, 1], ("other", 1): [1, 1]}
    records = scripted_length_runs(monkeypatch, ranks, {"*": [3, 8], "other": [3, 30]}, {"other": "fp2"}, {("add", 3): "gpu"})
    references = {"none": "none", "add": "none", "one": "none", "other": "none"}
    md = by_length.write_length_tables(records, references, "none", tmp_path, edges=[5, 10], metric="hr@1").read_text()
    assert md.splitlines()[-1].endswith("compare the machines as well as the models): add against none, 1 of 2 pairs (seed 3).")
    lines = md.splitlines()
    assert lines[2] == "| model | 1-5 (1 user) | 6-10 (1 user) | >10 (0 users) | seeds |"
    # add, bucket 1-5: mean of [1, 1, 0]; on seeds 2, 3: [1, 1] vs [0, 1]: +100 %, differences [1, 0]: p = 0.5
    assert lines[5] == "| add | 0.6667 (+100.0%, p=0.50) | 1.0000 (+0.0%, p=1.00) | - | 3 (2 paired) |"
    assert lines[6] == "| one | 1.0000 (n/a) | 1.0000 (+0.0%) | - | 1 |"  # base seed 1 scores 0 in 1-5
    assert lines[7] == "| other (other data than none) | 1.0000 | - | 1.0000 | 1 |"
    rows = list(csv.DictReader((tmp_path / "by_length.csv").read_text().splitlines()))
    assert [(r["variant"], r["bucket"], r["users"]) for r in rows if r["variant"] == "other"] == [
        ("other", "1-5", "1"), ("other", ">10", "1")]
    add = [r for r in rows if r["variant"] == "add"][0]
    assert (add["runs"], add["pairs"]) == ("3", "2")


def test_by_length_names_only_the_pairs_across_machines_that_it_tabulates(monkeypatch, tmp_path):
    """A run without stored test ranks is left out of by_length.md, and a variant trained on other
    data than its reference is shown unpaired, so neither has a pair there to name: 'add' seed 2
    trained on the GPU, the base on the CPU."""
    ranks = {("none", 1): [2, 1], ("none", 2): [1, 1], ("add", 1): [1, 1], ("add", 2): None}
    records = scripted_length_runs(monkeypatch, ranks, {"*": [3, 8]}, devices={("add", 2): "gpu"})
    md = by_length.write_length_tables(records, {}, "none", tmp_path, edges=[5], metric="hr@1").read_text()
    assert "Partial table, without these runs. No stored test ranks: add seed 2." in md, md
    assert "different machines" not in md, md
    ranks[("add", 2)] = [1, 1]  # with its ranks stored, the pair is tabulated and named
    md = by_length.write_length_tables(records, {}, "none", tmp_path, edges=[5], metric="hr@1").read_text()
    assert "add against none, 1 of 2 pairs (seed 2)." in md, md
    records = scripted_length_runs(monkeypatch, ranks, {"*": [3, 8]}, {"add": "fp2"}, {("add", 2): "gpu"})
    md = by_length.write_length_tables(records, {}, "none", tmp_path, edges=[5], metric="hr@1").read_text()
    assert "| add (other data than none) |" in md and "different machines" not in md, md


def test_length_edges_must_increase_strictly():
    for edges in ([5, 5], [10, 5], [0, 5], []):
        with pytest.raises(ValueError, match="positive and increasing"):
            by_length.bucket_labels(edges)


def test_the_same_gain_on_every_seed_has_no_p_value_in_the_table(tmp_path):
    # a test set of 300 users moves a recall in steps of 1/300: +3/300 on both seeds is no certainty
    records = [rec("none", 1, 23 / 300), rec("none", 2, 38 / 300), rec("add", 1, 26 / 300), rec("add", 2, 41 / 300)]
    table = tabulate(records, base="none")
    assert all(math.isnan(cell.p_value) for cell in table["add"].values())
    write_outputs(records, table, tmp_path, "model.refine", "none")
    line = next(x for x in (tmp_path / "table.md").read_text().splitlines() if x.startswith("| add |"))
    assert "p=n/a" in line and "p=0.000" not in line, line

"""The analysis stage (brorl.analysis): equal-time checkpoint choice, units from score files, the significance test on
synthetic per-instance data with a known effect and with none, Tables 1 and 3-5 rendered from the paper's own numbers,
figures, the summary, and the analysis rules run by Snakemake on synthetic evaluation outputs with `--report`.

The core t-test against scipy, its edge cases and its false-positive rate on raw arrays are in
tests/stats/test_stats.py;
here the same properties are checked through this stage's own path (score files -> units -> compare_checkpoints).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
from brorl.analysis.checkpoints import (
    SelectionError,
    benchmark_pass1,
    equal_point,
    family_pass1,
    hours_by_step,
    reasoning_gym_averages,
    select_checkpoints,
    startup_hours,
    task_pass1,
    unequal_compute,
)
from brorl.analysis.load import AnalysisInputError, load_units, parse_scores_path
from brorl.analysis.paper import (
    BY_GAIN,
    NOT_APPLICABLE,
    NOT_GIVEN,
    NOT_RUN,
    TINY_SCALE,
    PaperDataError,
    _check,
    checkpoint_rows,
    column_mean,
    load_paper,
)
from brorl.analysis.significance import compare_checkpoints, learning_effects
from brorl.analysis.summary import first_beating
from brorl.analysis.tables import (
    OURS,
    RG_CATEGORY,
    RG_ITEM,
    RG_TASK,
    SAMPLES,
    as_number,
    benchmark_table,
    display,
    table1,
    table1_long,
)
from brorl.analysis.tasks import classify_tasks, pattern_of, pattern_shares
from brorl.benchmarks.records import write_records
from brorl.reporting.tables import MAX_PRINTED_COLUMNS, plus_minus
from brorl.stats.agreement import NO_NOISE
from brorl.training.metrics import FIELDS
from helpers import copy_workflow

ROOT = Path(__file__).resolve().parents[2]
PAPER = load_paper()
PAPER_ARMS = [  # the paper config's two arms (config.yaml), as the workflow passes them in --spec
    {
        "name": "prorl_n16",
        "label": "ProRL",
        "n": 16,
        "prompts_per_step": 512,
        "continued_steps": 535,
        "report_steps": [225, 535],
    },
    {
        "name": "brorl_n512",
        "label": "BroRL",
        "n": 512,
        "prompts_per_step": 128,
        "continued_steps": 191,
        "report_steps": [107, 134, 191],
    },
]
PAPER_ROLES = {"control": "prorl_n16", "treatment": "brorl_n512"}
ROLE_ARM = {"base": "base", **PAPER_ROLES}


# ------------------------------------------------------------------------------------------- synthetic inputs
def write_benchmark(folder: Path, name: str, family: str, tasks: dict[str, int]) -> Path:
    """A valid records file: ``tasks`` maps task -> items (a math benchmark uses one task, its name)."""
    recs = []
    for task, count in tasks.items():
        for i in range(count):
            rid = f"{name}/{task}/{i}"
            if family == "reasoning_gym":
                recs.append(
                    {
                        "id": rid,
                        "benchmark": name,
                        "family": family,
                        "prompt": "q",
                        "answer": "1",
                        "scorer": family,
                        "metadata": {"task": task, "entry": {"answer": "1"}},
                    }
                )
            else:
                recs.append(
                    {
                        "id": rid,
                        "benchmark": name,
                        "family": family,
                        "prompt": "q",
                        "answer": "1",
                        "scorer": family,
                        "metadata": {},
                    }
                )
    path = folder / f"{name}.jsonl"
    write_records(path, recs)
    return path


def write_scores(path: Path, ids: list[str], rates: np.ndarray, rng: np.random.Generator, n: int = 16) -> Path:
    """Bernoulli(rate) scores, n samples per id, in brorl.evaluation's scores schema."""
    score = (rng.random((len(ids), n)) < rates[:, None]).astype(float)
    df = pd.DataFrame(
        {
            "id": np.repeat(ids, n),
            "sample_idx": np.tile(np.arange(n), len(ids)),
            "score": score.ravel(),
            "correct": score.ravel() == 1.0,
            "error": pd.array([None] * score.size, dtype="string"),
            # the math verifier's second verdict (here the same); null outside math, as brorl.evaluation writes it
            "correct_math_verify": pd.array(
                [pd.NA] * score.size if path.name.startswith("rg_") else score.ravel() == 1.0, dtype="boolean"
            ),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)
    return path


def write_metrics(path: Path, hours: list[float]) -> Path:
    """A schema-valid metrics.jsonl whose step k ends at hours[k-1] training hours."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for step, h in enumerate(hours, 1):
            rec = {k: None for k in FIELDS}
            step_s = (h - (hours[step - 2] if step > 1 else 0.0)) * 3600.0
            rec.update(
                step=step, segment=0, wall_s=h * 3600.0, step_s=step_s, prompts=4, samples=16, generated_samples=32
            )
            handle.write(json.dumps(rec) + "\n")
    return path


def units_frame(rates: dict[tuple[str, int], np.ndarray], rng, n=16, family="math", bench="b") -> pd.DataFrame:
    """Units straight from Bernoulli draws (no files): arm, step, benchmark, family, task, id, n_samples, score."""
    frames = []
    for (arm, step), p in rates.items():
        score = (rng.random((len(p), n)) < p[:, None]).mean(axis=1)
        frames.append(
            pd.DataFrame(
                {
                    "arm": arm,
                    "step": step,
                    "benchmark": bench,
                    "family": family,
                    "task": bench,
                    "id": [f"{bench}/{i}" for i in range(len(p))],
                    "n_samples": n,
                    "score": score,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


# -------------------------------------------------------------------------------------------- the paper as data
def test_paper_values_hold_every_published_cell():
    rows = {(r["method"], r["continued_steps"]): r for r in PAPER["table1"]}
    assert len(rows) == 6 and rows[("BroRL", 191)]["code"] == 54.20 and rows[("ProRL", 535)]["time_h"] == 133.8
    assert rows[("Baseline", 0)]["time_h"] is None  # "-" in the paper: not given, not invented
    assert [r["samples_k"] for r in PAPER["table1"]] == [None, 4390, 10439, 11226, 14059, 20039]
    assert (
        PAPER["statistics"]["delta"] == 0.0033
        and PAPER["statistics"]["t"] == 4.84
        and PAPER["statistics"]["p"] == 6.5e-7
    )
    tables = PAPER["benchmark_tables"]
    assert [len(t["benchmarks"]) for t in tables.values()] == [6, 4, 11]
    assert all(len(cells) == 6 for t in tables.values() for cells in t["benchmarks"].values())  # 126 cells, all given
    math = tables["math"]["benchmarks"]
    assert math["amc"]["treatment@134"] == 80.12 and math["aime24"]["treatment@134"] == 57.71
    assert tables["reasoning_gym"]["benchmarks"]["rg_logic"]["control@225"] == 85.26


def test_the_papers_own_averages_math_and_code_are_column_means_reasoning_gym_is_not():
    for key, row in ((f"{r['role']}@{r['continued_steps']}", r) for r in PAPER["table1"]):
        for family in ("math", "code"):
            assert column_mean(PAPER, family, key) == pytest.approx(row[family], abs=0.01)
            assert PAPER["benchmark_tables"][family]["printed_avg"][key] == row[family]
        assert column_mean(PAPER, "reasoning_gym", key) - row["reasoning_gym"] > 0.6  # 62.49 vs 61.29 at baseline
    assert column_mean(PAPER, "reasoning_gym", "base@0") == pytest.approx(62.49, abs=0.005)
    # the paper's ProRL regression (+225 -> +535) exists only under its printed average
    assert column_mean(PAPER, "reasoning_gym", "control@535") == pytest.approx(62.96, abs=0.005)


def test_samples_per_step_match_the_papers_pass_rates():
    """Samples are counted before the dynamic-sampling filter: per step = kept prompts x N / pass rate (Table 2)."""
    rows = {(r["role"], r["continued_steps"]): r for r in PAPER["table1"]}
    prorl = rows[("control", 535)]["samples_k"] * 1000 / 535
    brorl = rows[("treatment", 191)]["samples_k"] * 1000 / 191
    assert prorl == pytest.approx(16 * 512 / PAPER["table2"]["dynamic_sampling_pass_rate"]["control"], rel=0.03)
    assert brorl == pytest.approx(512 * 128 / PAPER["table2"]["dynamic_sampling_pass_rate"]["treatment"], rel=0.03)


def test_malformed_paper_values_name_the_key():
    bad = json.loads(json.dumps(PAPER))
    bad["benchmark_tables"]["math"]["benchmarks"]["aime24"] = {"treatment@999": 1.0}
    with pytest.raises(PaperDataError, match="aime24: treatment@999 is no Table 1 checkpoint"):
        _check(bad)


# ------------------------------------------------------------------------------------------- equal training time
def test_equal_time_picks_the_checkpoint_nearest_the_target_hours():
    hours = {"a": {25: 50.0, 50: 100.0, 75: 150.0}, "b": {10: 60.0, 20: 120.0, 30: 180.0}}
    evaluated = {"a": [0, 25, 50, 75], "b": [10, 20, 30]}
    assert select_checkpoints(evaluated, hours, 140) == {"a": 75, "b": 20}
    assert select_checkpoints(evaluated, hours, 125) == {"a": 50, "b": 20}  # a: 100 and 150 tie -> earlier step
    assert select_checkpoints(evaluated, {}, None) == {"a": 75, "b": 30}  # null: final checkpoints, no hours needed


def test_equal_time_errors_name_the_arm():
    with pytest.raises(SelectionError, match="'a' has no evaluated checkpoint"):
        select_checkpoints({"a": [0]}, {}, None)
    with pytest.raises(SelectionError, match=r"'a': no training metrics .* \[50\]"):
        select_checkpoints({"a": [25, 50]}, {"a": {25: 1.0}}, 10)
    with pytest.raises(SelectionError, match="wall_s is None"):
        hours_by_step([{"step": 1, "wall_s": None}])
    assert hours_by_step([{"step": 2, "wall_s": 7200}]) == {2: 2.0}


def test_the_training_clock_keeps_start_ups_apart_and_equal_time_is_what_every_arm_reached():
    # two segments: each first step starts after a start-up (1,800 s, then a relaunch of 3,600 s); a save of 600 s
    # between steps 1 and 2 counts, as steps do
    records = [
        {"step": 1, "segment": 0, "wall_s": 1800 + 3600, "step_s": 3600, "overhead_s": 1800},
        {"step": 2, "segment": 0, "wall_s": 5400 + 600 + 3600, "step_s": 3600, "overhead_s": 600},
        {"step": 3, "segment": 1, "wall_s": 9600 + 3600 + 3600, "step_s": 3600, "overhead_s": 3600},
    ]
    assert hours_by_step(records) == {1: 1.0, 2: pytest.approx(2 + 1 / 6), 3: pytest.approx(3 + 1 / 6)}
    assert startup_hours(records) == 1.5
    # a relaunch inside segment 1 (a job that met its time limit, then its retry): step 4's start-up of 1,200 s
    # (launch 2) is kept apart too; a record without `launch` (schema 6) counts as one launch per segment
    relaunched = [
        *({**r, "launch": 1} for r in records),
        {"step": 4, "segment": 1, "launch": 2, "wall_s": 16800 + 1200 + 3600, "step_s": 3600, "overhead_s": 1200},
    ]
    assert hours_by_step(relaunched)[4] == pytest.approx(4 + 1 / 6) and startup_hours(relaunched) == pytest.approx(
        1.5 + 1 / 3
    )
    # ProRL reached 105 h, BroRL 150 h: t* is 105 h, not 140 h, and BroRL's checkpoint is the one nearest 105 h
    evaluated, hours = (
        {"prorl": [100, 200], "brorl": [50, 100]},
        {"prorl": {100: 50, 200: 105}, "brorl": {50: 100, 100: 150}},
    )
    assert equal_point(evaluated, hours, 140) == 105
    assert select_checkpoints(evaluated, hours, 140) == {"prorl": 200, "brorl": 50}
    assert unequal_compute({"prorl": 105, "brorl": 100}) is None  # within 10%
    assert "differ by 50%" in unequal_compute({"prorl": 100, "brorl": 150})


# ---------------------------------------------------------------------------------------------------- units
def test_units_from_score_files_carry_family_and_task(tmp_path):
    rng = np.random.default_rng(0)
    m = write_benchmark(tmp_path, "synthetic_math", "math", {"synthetic_math": 3})
    rg = write_benchmark(tmp_path, "rg_arithmetic", "reasoning_gym", {"basic_arithmetic": 2, "countdown": 2})
    s1 = write_scores(
        tmp_path / "eval/base/step0/synthetic_math.scores.parquet",
        [f"synthetic_math/synthetic_math/{i}" for i in range(3)],
        np.array([0.0, 1.0, 0.5]),
        rng,
    )
    ids = [f"rg_arithmetic/{t}/{i}" for t in ("basic_arithmetic", "countdown") for i in range(2)]
    s2 = write_scores(tmp_path / "eval/arm_x/step12/rg_arithmetic.scores.parquet", ids, np.ones(4), rng)
    assert parse_scores_path(s2) == ("arm_x", 12, "rg_arithmetic")
    units = load_units([s1, s2], [m, rg], expected_samples=16)
    assert len(units) == 7 and set(units["task"]) == {"synthetic_math", "basic_arithmetic", "countdown"}
    assert units.loc[units["id"] == "synthetic_math/synthetic_math/0", "score"].item() == 0.0
    assert units.loc[units["id"] == "synthetic_math/synthetic_math/1", "score"].item() == 1.0
    assert (units.loc[units["arm"] == "arm_x", "family"] == "reasoning_gym").all()
    with pytest.raises(AnalysisInputError, match="do not have 8 samples"):
        load_units([s1], [m], expected_samples=8)
    stray = write_scores(
        tmp_path / "eval/base/step0/rg_arithmetic.scores.parquet", ["rg_arithmetic/zzz/0"], np.ones(1), rng
    )
    with pytest.raises(AnalysisInputError, match="not in the rg_arithmetic records"):
        load_units([stray], [rg])


# ----------------------------------------------------------------------------------------------- significance
def test_a_known_effect_is_recovered_pooled_per_family_and_per_benchmark():
    rng = np.random.default_rng(1)
    frames = []
    for bench, family, n in (("m1", "math", 300), ("m2", "math", 300), ("r1", "reasoning_gym", 400)):
        p = rng.beta(0.5, 0.5, n)
        rates = {("ctl", 5): p, ("trt", 3): np.clip(p + 0.10, 0, 1)}
        frames.append(units_frame(rates, rng, family=family, bench=bench))
    units = pd.concat(frames, ignore_index=True)
    res = compare_checkpoints(units, ("ctl", 5), ("trt", 3), resamples=2000, seed=0)
    b = units[units.arm == "ctl"].sort_values(["benchmark", "id"])["score"].to_numpy()
    t = units[units.arm == "trt"].sort_values(["benchmark", "id"])["score"].to_numpy()
    ref = sps.ttest_rel(t, b, alternative="greater")
    pooled = res["pooled"]
    assert (
        pooled["n"] == 1000 and pooled["t"] == pytest.approx(ref.statistic) and pooled["p"] == pytest.approx(ref.pvalue)
    )
    true_delta = np.mean(np.clip(np.concatenate([f[f.arm == "ctl"].score for f in frames]) * 0 + 0.1, 0, 1))
    assert pooled["ci_low"] < pooled["delta"] < pooled["ci_high"] and pooled["reject"]
    assert abs(pooled["delta"] - 0.1) < 0.03 and pooled["ci_low"] > 0.0 and true_delta == pytest.approx(0.1)
    assert {r["group"] for r in res["family"]} == {"math", "reasoning_gym"} and all(r["reject"] for r in res["family"])
    assert [r["group"] for r in res["benchmark"]] == ["m1", "m2", "r1"]
    for r in res["benchmark"]:
        assert r["p_holm"] >= r["p"] and r["reject_holm"] and r["family"] in ("math", "reasoning_gym")


def test_no_effect_rejects_at_about_alpha_through_this_stage():
    rng = np.random.default_rng(2)
    draws, alpha, rejections = 200, 0.05, 0
    for _ in range(draws):
        p = rng.beta(0.5, 0.5, 150)
        units = units_frame({("ctl", 1): p, ("trt", 1): p}, rng)
        rejections += compare_checkpoints(units, ("ctl", 1), ("trt", 1), resamples=20, seed=0)["pooled"]["reject"]
    lo, hi = sps.binom.ppf([0.0005, 0.9995], draws, alpha)  # a 99.9 % band around 10 of 200
    assert lo <= rejections <= hi, rejections


def test_the_learning_effect_is_each_arms_last_checkpoint_against_the_start_on_the_same_problems():
    rng = np.random.default_rng(6)
    p = rng.beta(1, 4, 256)
    rates = {("base", 0): p, ("up", 3): p, ("up", 6): np.clip(p + 0.08, 0, 1), ("flat", 6): p}
    units = pd.concat(
        [units_frame(rates, rng), units_frame({("base", 0): np.zeros(8), ("up", 6): np.zeros(8)}, rng, bench="z")]
    )
    rows = {r["arm"]: r for r in learning_effects(units, ("base", 0), ["up", "flat", "none"], resamples=200)}
    up = rows["up"]
    assert up["step"] == 6 and up["resolved"] and up["benchmarks_resolved"] == ["b"] and up["pooled"]["delta"] > 0
    pair = units[units.arm.isin(["base", "up"]) & units.step.isin([0, 6])].pivot(
        index=["benchmark", "id"], columns="arm", values="score"
    )
    ref = sps.ttest_rel(pair["up"], pair["base"], alternative="greater")  # the last step (6), not step 3
    assert up["pooled"]["p"] == pytest.approx(ref.pvalue) and up["pooled"]["n"] == 264
    assert [b["group"] for b in up["benchmark"]] == ["b", "z"] and not up["benchmark"][1]["reject"]
    assert rows["flat"]["status"] == "ok" and not rows["flat"]["resolved"]  # no effect: not resolved
    assert rows["none"]["status"] == "not run" and "no evaluated checkpoint" in rows["none"]["reason"]


def test_two_sided_and_corrections():
    rng = np.random.default_rng(3)
    p = rng.beta(0.5, 0.5, 200)
    units = pd.concat([units_frame({("c", 1): p, ("t", 1): np.clip(p - 0.1, 0, 1)}, rng, bench=b) for b in "xyz"])
    one = compare_checkpoints(units, ("c", 1), ("t", 1), resamples=50, correction="bonferroni")
    two = compare_checkpoints(units, ("c", 1), ("t", 1), resamples=50, alternative="two-sided", correction="none")
    assert one["pooled"]["p"] > 0.99 and not one["pooled"]["reject"]  # a drop is no evidence for "greater"
    assert two["pooled"]["p"] == pytest.approx(2 * (1 - one["pooled"]["p"])) and two["pooled"]["reject"]
    for r in one["benchmark"]:
        assert r["p_adjusted"] == pytest.approx(min(1.0, 3 * r["p"]))
    for r in two["benchmark"]:
        assert r["p_adjusted"] == r["p"]
    with pytest.raises(ValueError, match="no evaluated units for the treatment arm 'nope'"):
        compare_checkpoints(units, ("c", 1), ("nope", 1))


# --------------------------------------------------------------------------------- tables from the paper's numbers
def paper_as_reproduced() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The paper's Table 1 and Tables 3-5 cells as if this workflow had measured them (fractions, hours, samples):
    family, benchmark, hours, Reasoning Gym averages (category = the mean of Table 5's columns, task = the printed
    average) and samples frames."""
    fam, bench, hours, rg, samples = [], [], [], [], []
    for r in PAPER["table1"]:
        arm = ROLE_ARM[r["role"]]
        step = 3000 if r["role"] == "base" else r["continued_steps"]
        key = f"{r['role']}@{r['continued_steps']}"
        fam += [{"arm": arm, "step": step, "family": f, "pass1": r[f] / 100} for f in ("math", "code", "reasoning_gym")]
        rg.append(
            {
                "arm": arm,
                "step": step,
                "category_mean": column_mean(PAPER, "reasoning_gym", key) / 100,
                "task_mean": r["reasoning_gym"] / 100,
                "item_mean": r["reasoning_gym"] / 100,
            }
        )
        if r["time_h"] is not None:
            hours.append({"arm": arm, "step": step, "hours": r["time_h"]})
        if r["samples_k"] is not None:
            samples.append({"arm": arm, "step": step, "samples_k": r["samples_k"]})
    for family, table in PAPER["benchmark_tables"].items():
        for name, cells in table["benchmarks"].items():
            for key, value in cells.items():
                role, step = key.split("@")
                bench.append(
                    {
                        "arm": ROLE_ARM[role],
                        "step": 3000 if role == "base" else int(step),
                        "family": family,
                        "benchmark": name,
                        "pass1": value / 100,
                    }
                )
    return tuple(pd.DataFrame(x) for x in (fam, bench, hours, rg, samples))


def test_tables_rendered_from_the_paper_numbers_reproduce_its_cells_exactly():
    fam, bench, hours, rg, samples = paper_as_reproduced()
    evaluated = set(map(tuple, fam[["arm", "step"]].itertuples(index=False)))
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, evaluated)
    assert len(rows) == 6 and all(cp.paper_key and cp.evaluated for cp in rows)
    t1 = display(table1(PAPER, rows, fam, hours, 3000, rg, samples))
    assert list(t1["method"]) == ["Baseline (start)", "ProRL", "ProRL", "BroRL", "BroRL", "BroRL"]
    for shown, r in zip(t1.to_dict("records"), PAPER["table1"]):
        for label, key in (("Math", "math"), ("Code", "code"), (RG_TASK, "reasoning_gym")):
            assert shown[label] == shown[f"{label}, paper"] == f"{r[key]:.2f}", (label, r)
            assert shown[f"{label} diff"] == "+0.00"
        category = column_mean(PAPER, "reasoning_gym", f"{r['role']}@{r['continued_steps']}")
        assert shown[RG_CATEGORY] == shown[f"{RG_CATEGORY}, paper"] == f"{category:.2f}"  # the paper's own columns
        assert shown[RG_ITEM] == f"{r['reasoning_gym']:.2f}"  # no paper value to compare with
        assert shown["N"] == f"{r['n']:,}" or r["role"] == "base"
        if r["time_h"] is not None:
            assert shown["time (h)"] == shown["time (h), paper"] == f"{r['time_h']:.1f}"
            assert (
                shown[SAMPLES] == shown[f"{SAMPLES}, paper"] == f"{r['samples_k']:,}"
                and shown[f"{SAMPLES} diff"] == "+0"
            )
    assert t1.loc[0, "time (h), paper"] == "n/a" and t1.loc[5, "continued steps"] == "+191"
    for family, table in PAPER["benchmark_tables"].items():
        t = display(benchmark_table(PAPER, family, rows, bench))
        assert list(dict.fromkeys(t["benchmark"])) == list(table["benchmarks"])
        given = t[t["pass@1, paper"] != NOT_GIVEN]
        n_cells = sum(len(c) for c in table["benchmarks"].values())
        assert len(given) == n_cells and (given["pass@1"] == given["pass@1, paper"]).all()
        # no per-problem variances in this frame: the difference has no rerun se and no verdict
        assert (given["diff"] == "+0.00 ± n/a").all() and (given["vs paper"] == NO_NOISE).all()
        for name, cells in table["benchmarks"].items():
            for key, value in cells.items():
                role, step = key.split("@")
                hit = given[
                    (given["benchmark"] == name)
                    & (given["continued steps"] == f"+{0 if role == 'base' else step}")
                    & (given["arm"] == ROLE_ARM[role])
                ]
                assert hit["pass@1, paper"].tolist() == [f"{value:.2f}"], (name, key)
        # cells the paper does not give are marked, not blank: e.g. amc, every checkpoint
        assert (t[~t.index.isin(given.index)]["pass@1, paper"] == NOT_GIVEN).all()


def test_tiny_runs_and_partial_families_are_never_diffed_and_table1_prints_in_ten_columns():
    fam, bench, hours, rg, samples = paper_as_reproduced()
    fam["benchmarks"] = fam["family"].map(lambda f: ",".join(PAPER["benchmark_tables"][f]["benchmarks"]))
    evaluated = set(map(tuple, fam[["arm", "step"]].itertuples(index=False)))
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, evaluated)
    # a tiny run: the paper's values shown, every difference withheld
    t1 = table1(PAPER, rows, fam, hours, 3000, rg, samples, tiny=True)
    for label in ("Math", "Code", RG_CATEGORY, RG_TASK):
        assert (t1[f"{label} diff"] == TINY_SCALE).all() and t1[f"{label}, paper"].map(float).notna().all()
    assert (t1.loc[1:, "time (h) diff"] == TINY_SCALE).all() and (t1.loc[1:, f"{SAMPLES} diff"] == TINY_SCALE).all()
    for family in PAPER["benchmark_tables"]:
        t = benchmark_table(PAPER, family, rows, bench, tiny=True)
        assert set(t["diff"]) <= {TINY_SCALE, "n/a"} and (t["diff"] == TINY_SCALE).any()
        assert (t["vs paper"] == t["diff"]).all()  # no verdict where there is no difference
    # at paper scale a family average over part of the paper's benchmarks is flagged, never diffed
    partial = fam.copy()
    partial.loc[partial["family"] == "math", "benchmarks"] = "aime24,math500"
    t1 = table1(PAPER, rows, partial, hours, 3000, rg, samples)
    assert (t1["Math diff"] == "n/a (partial: 2 of 6 benchmarks)").all() and (t1["Code diff"].abs() < 1e-9).all()
    # printed: one row per checkpoint x measure, our N beside the paper's row
    long = table1_long(display(t1))
    assert len(long.columns) <= 12 and list(long.columns[:3]) == ["checkpoint", "arm", OURS]
    assert set(long["measure"]) == {"Math", "Code", RG_CATEGORY, RG_TASK, RG_ITEM, SAMPLES, "time (h)"}
    brorl = long[(long["arm"] == "brorl_n512") & (long["measure"] == "Math")]
    assert list(brorl[OURS]) == ["512 x 128"] * 3 and brorl["paper row"].str.contains("N=512").all()
    assert len(long[(long["arm"] == "base") & (long["measure"] == "time (h)")]) == 0  # nothing to show


def test_tables_mark_checkpoints_and_benchmarks_not_run():
    fam, bench, hours, _, _ = paper_as_reproduced()
    only_base = fam[fam.arm == "base"]
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, {("base", 3000)})
    t1 = table1(PAPER, rows, only_base, hours, 3000)
    assert len(t1) == 6 and (t1.loc[1:, "Math"] == NOT_RUN).all() and (t1.loc[1:, "Math, paper"] != NOT_RUN).all()
    t3 = benchmark_table(PAPER, "math", rows, bench[bench.arm == "base"], configured=["synthetic_math"])
    extra = t3[t3.benchmark == "synthetic_math"]
    assert len(extra) == 6 and (extra["pass@1"] == NOT_RUN).all() and (extra["pass@1, paper"] == NOT_GIVEN).all()
    # a tiny config: its arms' steps match no paper row; the paper's rows stay, marked not run
    tiny = [
        {
            "name": "p4",
            "label": "ProRL (tiny)",
            "n": 4,
            "prompts_per_step": 8,
            "continued_steps": 2,
            "report_steps": [1, 2],
        }
    ]
    rows = checkpoint_rows(PAPER, tiny, {"control": "p4", "treatment": "b16"}, 0, {("base", 0), ("p4", 2)})
    assert [(cp.arm, cp.step, cp.paper_key) for cp in rows if cp.arm == "p4"] == [
        ("p4", 1, None),
        ("p4", 2, None),
        ("p4", None, "control@225"),
        ("p4", None, "control@535"),
    ]
    assert sum(cp.arm is None for cp in rows) == 3  # the BroRL rows: treatment arm b16 is not enabled


def test_evaluated_models_are_rows_beside_the_paper_row_they_name():
    """evaluation.models: a row each after the arms, not trained here (no samples, hours or N of ours), with the
    paper's values of the row it names and their difference; a model without a paper row has none."""
    fam, bench, hours, _, _ = paper_as_reproduced()
    released = fam[(fam.arm == "brorl_n512") & (fam.step == 191)].assign(arm="released", step=0)
    fam = pd.concat([fam[fam.arm == "base"], released], ignore_index=True)
    bench = pd.concat(
        [
            bench[bench.arm == "base"],
            bench[(bench.arm == "brorl_n512") & (bench.step == 191)].assign(arm="released", step=0),
        ]
    )
    models = [
        {
            "name": "released",
            "label": "BroRL (released)",
            "step": 0,
            "continued_steps": None,
            "paper_row": "treatment@191",
        },
        {"name": "other", "label": None, "step": 0, "continued_steps": 50, "paper_row": None},
    ]
    evaluated = {("base", 3000), ("released", 0)}
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, evaluated, models=models)
    mine = [cp for cp in rows if cp.model]
    assert [(cp.method, cp.arm, cp.step, cp.paper_key, cp.evaluated) for cp in mine] == [
        ("BroRL (released)", "released", 0, "treatment@191", True),
        ("other", "other", 0, None, False),
    ]
    t1 = table1(PAPER, rows, fam, hours, 3000).set_index("arm")
    # steps not known (continued_steps null): beside the paper row, but no level difference (compared by gain)
    assert t1.loc["released", "Math, paper"] == 63.03 and t1.loc["released", "Math diff"] == BY_GAIN
    assert (
        t1.loc["released", "time (h)"] == NOT_APPLICABLE and t1.loc["released", OURS] == "evaluated, not trained here"
    )
    assert t1.loc["released", "continued steps"] == "model" and t1.loc["other", "continued steps"] == "+50 (model)"
    assert t1.loc["other", "Math"] == NOT_RUN and t1.loc["other", "Math, paper"] == NOT_GIVEN
    t3 = benchmark_table(PAPER, "math", rows, bench)
    cell = t3[(t3.benchmark == "aime24") & (t3.arm == "released")].iloc[0]
    assert cell["pass@1, paper"] == 57.50 and cell["diff"] == BY_GAIN
    known = [{**models[0], "continued_steps": 191}]  # a card that states the row's step: levels compare
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, evaluated, models=known)
    assert table1(PAPER, rows, fam, hours, 3000).set_index("arm").loc["released", "Math diff"] == pytest.approx(0.0)
    start = [{**models[0], "paper_row": "base@0"}]  # the start model evaluated as a model: 0 steps, levels compare
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, evaluated, models=start)
    assert as_number(table1(PAPER, rows, fam, hours, 3000).set_index("arm").loc["released", "Math diff"]) is not None


def test_tables_show_plus_minus_and_n_beside_every_reproduced_score():
    units = units_frame({("base", 3000): np.array([0.2, 0.5, 0.9, 0.4])}, np.random.default_rng(3), n=16)
    units = pd.concat([units, units.assign(benchmark="aime24", id=units["id"] + "x")], ignore_index=True)
    fam, bench = family_pass1(units), benchmark_pass1(units)
    one = bench[bench.benchmark == "aime24"].iloc[0]
    assert one["se"] == pytest.approx(sps.sem(units[units.benchmark == "aime24"]["score"]))
    assert fam.iloc[0]["se"] == pytest.approx(np.sqrt(2) * one["se"] / 2)  # two benchmarks with equal scores
    rows = checkpoint_rows(PAPER, PAPER_ARMS, PAPER_ROLES, 3000, {("base", 3000)})
    t1 = table1(PAPER, rows, fam, pd.DataFrame(columns=["arm", "step", "hours"]), 3000)
    shown = display(t1)
    value, se = 100 * fam.iloc[0]["pass1"], 100 * fam.iloc[0]["se"]
    assert shown.loc[0, "Math"] == f"{value:.2f} ± {se:.2f}" and shown.loc[0, "Math n"] == "8 x 16"
    assert "Math se" not in shown and t1.loc[0, "Math se"] == pytest.approx(se)  # the CSV frame keeps the number
    assert shown.loc[1, "Math"] == NOT_RUN and shown.loc[1, "Math n"] == NOT_RUN
    assert shown.loc[0, "Math, paper"] == f"{PAPER['table1'][0]['math']:.2f}"  # the paper's value, as published
    t3 = display(benchmark_table(PAPER, "math", rows, bench))
    cell = t3[(t3.benchmark == "aime24") & (t3.arm == "base")].iloc[0]
    assert cell["pass@1"] == f"{100 * one['pass1']:.2f} ± {100 * one['se']:.2f}" and cell["pass@1 n"] == "4 x 16"
    assert plus_minus(61.0, float("nan")) == "61.00 ± n/a"  # one problem: no spread estimate


def test_figures_draw_the_interval_bands(monkeypatch):
    from brorl.analysis import figures

    drawn = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, png, pdf, note: drawn.append(fig))
    rng = np.random.default_rng(6)
    units = units_frame({(a, s): rng.random(5) for a, s in (("base", 0), ("c", 1), ("t", 1))}, rng)
    fam = family_pass1(units).assign(hours=[0.0, 1.0, 1.2])
    figures.plot_figure1(fam, ["c", "t"], {}, "base", 0, "x.png", "x.pdf")
    assert len(drawn[0].axes[0].collections) == 2  # one band per arm
    tasks = task_pass1(units).assign(hours=[0.0, 1.0, 1.2])
    figures.plot_figure4(tasks, {1: ["b"]}, {1: 1.0}, 1, ["c", "t"], {}, "base", 0, "y.png", "y.pdf")
    assert len(drawn[1].axes[0].collections) == 2
    # the equal-compute point as a dashed line on both figures (a reference line: not counted as data)
    figures.plot_figure1(fam, ["c", "t"], {}, "base", 0, "x.png", "x.pdf", equal_time_hours=1.1)
    figures.plot_figure4(tasks, {1: ["b"]}, {1: 1.0}, 1, ["c", "t"], {}, "base", 0, "y.png", "y.pdf", "", None, 1.1)
    for without, fig in zip(drawn[:2], drawn[2:]):
        (line,) = [x for x in fig.axes[0].get_lines() if x.get_label() == "equal compute (1.1 h)"]
        assert list(line.get_xdata()) == [1.1, 1.1] and line.get_linestyle() == "--"
        assert figures.plotted_points(fig) == figures.plotted_points(without) > 0


def test_figure1_draws_the_papers_published_points_apart_at_paper_scale(tmp_path):
    from brorl.analysis import figures
    from brorl.analysis.paper import load_paper

    table1 = load_paper()["table1"]
    pts = figures.paper_points(table1, "math")
    assert pts["control"] == [(0.0, 61.69), (56.3, 62.08), (133.8, 62.02)]
    assert pts["treatment"][-1] == (173.8, 63.03) and len(pts["treatment"]) == 4
    rng = np.random.default_rng(8)
    units = units_frame({(a, s): rng.random(5) for a, s in (("base", 0), ("c", 1), ("t", 1))}, rng)
    fam = family_pass1(units).assign(hours=[0.0, 1.0, 1.2])
    drawn = []
    real_save = figures.save_figure
    figures.save_figure = lambda fig, p, q, n: drawn.append(fig) or real_save(fig, p, q, n)
    try:
        ours = figures.plot_figure1(fam, ["c", "t"], {}, "base", 0, tmp_path / "a.png", tmp_path / "a.pdf")
        both = figures.plot_figure1(
            fam, ["c", "t"], {}, "base", 0, tmp_path / "b.png", tmp_path / "b.pdf", paper_table1=table1
        )
    finally:
        figures.save_figure = real_save
    labels = [line.get_label() for line in drawn[1].axes[0].get_lines()]
    assert "paper: ProRL (N=16)" in labels and "paper: BroRL (N=512)" in labels
    assert not any(str(x).startswith("paper:") for x in (line.get_label() for line in drawn[0].axes[0].get_lines()))
    assert ours == both == 4  # the paper's markers are not counted as this run's data
    paper_line = next(line for line in drawn[1].axes[0].get_lines() if line.get_label() == "paper: BroRL (N=512)")
    assert paper_line.get_marker() == "s" and paper_line.get_markerfacecolor() == "none"


def test_figure4_and_the_n_sweep_draw_the_papers_published_points_only_where_given(monkeypatch):
    from brorl.analysis import figures

    paper = load_paper()
    apps = figures.paper_task_points(paper, "apps")  # Table 4's apps column at Table 1's hours
    cells = paper["benchmark_tables"]["code"]["benchmarks"]["apps"]
    assert apps["control"][0] == (0.0, cells["base@0"]) and apps["control"][-1] == (133.8, cells["control@535"])
    assert apps["treatment"][-1] == (173.8, cells["treatment@191"])
    assert figures.paper_task_points(paper, "rg_basic_arithmetic") == {"control": [], "treatment": []}
    assert figures.paper_final_points(paper["table1"], "math") == [(16, 62.02, 535), (512, 63.03, 191)]
    drawn = []
    monkeypatch.setattr(
        figures, "save_figure", lambda fig, png, pdf, note: drawn.append(fig) or figures.plotted_points(fig)
    )
    rng = np.random.default_rng(9)
    units = units_frame({(a, s): rng.random(5) for a, s in (("base", 0), ("c", 1), ("t", 1))}, rng, bench="apps")
    tasks = task_pass1(units).assign(hours=[0.0, 1.0, 1.2])
    args = (tasks, {1: ["apps"]}, {1: 1.0}, 1, ["c", "t"], {}, "base", 0, "y.png", "y.pdf", "")
    tiny, paper_scale = figures.plot_figure4(*args), figures.plot_figure4(*args, paper)
    labels = [line.get_label() for line in drawn[1].axes[0].get_lines()]
    assert {"paper: ProRL (N=16)", "paper: BroRL (N=512)"} <= set(labels) and tiny == paper_scale == 4
    assert not any(line.get_label().startswith("paper:") for line in drawn[0].axes[0].get_lines())
    fam = family_pass1(units)
    sweep = [{"name": "c", "n": 16}, {"name": "t", "n": 512}]
    ours = figures.plot_n_sweep(fam, sweep, 1, "z.png", "z.pdf", "")
    assert figures.plot_n_sweep(fam, sweep, 1, "z.png", "z.pdf", "", paper["table1"]) == ours > 0  # ours only
    marks = [line for line in drawn[3].axes[0].get_lines() if line.get_label().startswith("paper: Math")]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [16, 512] and "+535" in marks[0].get_label()


def test_pass_rate_axes_stay_within_0_and_100_and_every_figure_names_its_scale(tmp_path):
    from brorl.analysis import figures

    rng = np.random.default_rng(7)
    zeros = units_frame({(a, s): np.zeros(5) for a, s in (("base", 0), ("c", 1), ("t", 1))}, rng)
    zeros["score"] = 0.0
    fam = family_pass1(zeros).assign(hours=[0.0, 1.0, 1.2])
    note = figures.scale_note("embedded")
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    captured = []
    real_save = figures.save_figure
    figures.save_figure = lambda fig, p, q, n: captured.append((fig.axes[0].get_ylim(), n)) or real_save(fig, p, q, n)
    try:
        points = figures.plot_figure1(fam, ["c", "t"], {}, "base", 0, png, pdf, note=note)
    finally:
        figures.save_figure = real_save
    (low, high), shown = captured[0]
    assert points == 4 and low == 0 and 0 < high <= 100  # all-zero scores: 0..5 %, never -0.04..0.04
    assert shown.startswith("tiny CPU run") and png.stat().st_size > 1000 and pdf.stat().st_size > 1000
    empty = figures.plot_n_sweep(fam.iloc[:0], [{"name": "c", "n": 4}], 9, tmp_path / "s.png", tmp_path / "s.pdf")
    assert empty == 0  # nothing at that step: the CLI warns and figures.json shows 0
    assert figures.scale_note("cluster").startswith("paper-scale")


def test_reasoning_gym_averages_differ_when_categories_hold_different_numbers_of_tasks():
    units = pd.DataFrame(
        {
            "arm": "a",
            "step": 1,
            "family": "reasoning_gym",
            "benchmark": ["rg_x", "rg_x", "rg_x", "rg_x", "rg_y", "rg_y"],
            "task": ["t1", "t1", "t2", "t2", "t3", "t3"],
            "score": [1.0, 1.0, 0.0, 0.0, 1.0, 0.5],
        }
    )
    row = reasoning_gym_averages(units).iloc[0]
    assert row["category_mean"] == pytest.approx((0.5 + 0.75) / 2)  # rg_x 0.5, rg_y 0.75
    assert row["task_mean"] == pytest.approx((1.0 + 0.0 + 0.75) / 3)
    assert row["item_mean"] == pytest.approx(3.5 / 6) and (row["n_tasks"], row["n_items"]) == (3, 6)


def test_tasks_are_classified_into_the_three_patterns_by_the_documented_rule():
    assert [pattern_of(c, t) for c, t in ((2, 3), (-2, 3), (0.5, 3), (3, 0.5), (-2, -2))] == [1, 2, 2, 3, 3]
    rows = []
    for task, (s, c, t) in {
        "apps": (50, 55, 60),
        "aiw": (50, 45, 56),
        "countdown": (50, 49, 50),
        "behind": (50, 60, 52),
        "flat": (50, 60, 50.5),
    }.items():
        rows += [
            {"arm": "base", "step": 0, "task": task, "pass1": s / 100},
            {"arm": "c", "step": 5, "task": task, "pass1": c / 100},
            {"arm": "t", "step": 3, "task": task, "pass1": t / 100},
        ]
    rows.append({"arm": "c", "step": 5, "task": "only_control", "pass1": 0.5})  # no start, no treatment: left out
    out = classify_tasks(pd.DataFrame(rows), "c", "t", "base", 0, {1: ["apps"], 2: ["aiw"], 3: ["countdown"]})
    assert dict(zip(out["task"], out["pattern"])) == {"aiw": 2, "apps": 1, "behind": 1, "countdown": 3, "flat": 3}
    assert dict(zip(out["task"], out["ahead"]))["behind"] == False and dict(zip(out["task"], out["ahead"]))["apps"]  # noqa: E712
    assert (
        out.dropna(subset=["paper_pattern"])["pattern"] == out.dropna(subset=["paper_pattern"])["paper_pattern"]
    ).all()
    assert pattern_shares(out) == {1: 0.4, 2: 0.2, 3: 0.4}
    # at the equal-time point: the control's earlier checkpoint (step 2, where it had not improved yet) is compared
    rows += [{"arm": "c", "step": 2, "task": task, "pass1": 0.5} for task in ("apps", "behind")]
    at = classify_tasks(pd.DataFrame(rows), "c", "t", "base", 0, steps={"c": 2, "t": 3})
    assert dict(zip(at["task"], at["pattern"])) == {"apps": 2, "behind": 2}  # tasks without a step-2 control: left out
    assert set(at["control_step"]) == {2} and set(at["treatment_step"]) == {3}
    assert set(out["control_step"]) == {5}  # without steps: each arm's last checkpoint


def test_the_earliest_treatment_checkpoint_that_beats_the_controls_final_one():
    final = {"Math": 62.02, "Code": 52.74, "RG": 61.45}
    rows = [
        ("+107", 98.1, {"Math": 62.62, "Code": 53.31, "RG": 62.71}),
        ("+191", 173.8, {"Math": 63.0, "Code": 54.2, "RG": 63.1}),
    ]
    assert first_beating(final, rows, ("Math", "Code", "RG")) == ("+107", 98.1)
    assert first_beating(final, [("+1", 1.0, {"Math": 70, "Code": 40, "RG": 70})], ("Math", "Code", "RG")) is None


# ------------------------------------------------------------------------------------------- figures and the CLI
def synthetic_evaluation(root: Path, rng: np.random.Generator, effect: float = 0.15) -> dict:
    """Benchmarks, score files and metrics under ``root`` for base (step 0), ctl (steps 1, 2), trt (step 2)."""
    benches = {
        "synthetic_math": ("math", {"synthetic_math": 6}),
        "rg_arithmetic": ("reasoning_gym", {"basic_arithmetic": 3, "countdown": 3}),
    }
    files = {"benchmarks": [], "scores": [], "metrics": []}
    for name, (family, tasks) in benches.items():
        files["benchmarks"].append(write_benchmark(root / "resources/benchmarks", name, family, tasks))
        ids = [f"{name}/{t}/{i}" for t, k in tasks.items() for i in range(k)]
        p = rng.uniform(0.1, 0.6, len(ids))
        for arm, step, shift in (("base", 0, 0.0), ("ctl", 1, 0.02), ("ctl", 2, 0.03), ("trt", 2, effect)):
            path = root / f"results/eval/{arm}/step{step}/{name}.scores.parquet"
            files["scores"].append(write_scores(path, ids, np.clip(p + shift, 0, 1), rng))
    files["metrics"] = [
        write_metrics(root / "results/train/ctl/metrics.jsonl", [0.5, 1.0]),
        write_metrics(root / "results/train/trt/metrics.jsonl", [0.7, 1.4]),
    ]
    return files


def spec(**analysis) -> dict:
    arms = [
        {
            "name": "ctl",
            "label": "ProRL (tiny)",
            "n": 4,
            "prompts_per_step": 8,
            "continued_steps": 2,
            "report_steps": [1, 2],
        },
        {
            "name": "trt",
            "label": "BroRL (tiny)",
            "n": 16,
            "prompts_per_step": 4,
            "continued_steps": 2,
            "report_steps": [2],
        },
    ]
    cfg = {
        "equal_time_hours": None,
        "alpha": 0.05,
        "practical_margin": 1.0,
        "alternative": "greater",
        "correction": "holm",
        "comparison": {"treatment": "trt", "control": "ctl"},
        "n_sweep": {"arms": ["ctl", "trt"], "step": 2},
        "bootstrap": {"resamples": 200, "seed": 0},
        **analysis,
    }
    return {
        "engine": "embedded",
        "base_arm": "base",
        "start_step": 0,
        "arms": arms,
        "analysis": cfg,
        "evaluation": {
            "benchmarks": ["synthetic_math", "rg_arithmetic", "rg_geometry"],
            "n_samples": 16,
            "max_items": 6,
        },
        "benchmark_families": {
            "synthetic_math": "math",
            "rg_arithmetic": "reasoning_gym",
            "rg_geometry": "reasoning_gym",
        },
    }


def analysis_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    return subprocess.run(
        [sys.executable, "-m", "brorl.analysis", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_from_score_files_to_summary(tmp_path):
    files = synthetic_evaluation(tmp_path, np.random.default_rng(4))
    units, sp = tmp_path / "units.parquet", json.dumps(spec(equal_time_hours=0.6))
    proc = analysis_cli(
        "units",
        "--scores",
        *files["scores"],
        "--benchmarks",
        *files["benchmarks"],
        "--n",
        "16",
        "--out",
        units,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    common = ("--units", units, "--metrics", *files["metrics"], "--spec", sp)
    out = {k: tmp_path / f"stats/significance.{k}" for k in ("json", "md", "csv", "tex")}
    proc = analysis_cli("significance", *common, *[x for k, p in out.items() for x in (f"--out-{k}", p)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    sig = json.loads(out["json"].read_text())
    assert (
        sig["status"] == "ok" and sig["control"]["step"] == 1 and sig["treatment"]["step"] == 2
    )  # nearest 0.6 h (trt has only step 2)
    assert sig["pooled"]["n"] == 12 and sig["versus_paper"]["t"]["paper"] == 4.84
    figs = {
        f"--{k}": tmp_path / f"figures/{k.replace('-', '.')}"
        for k in (
            "figure1-png",
            "figure1-pdf",
            "families-png",
            "families-pdf",
            "figure4-png",
            "figure4-pdf",
            "sweep-png",
            "sweep-pdf",
        )
    }
    patterns = tmp_path / "tables/task_patterns.csv"
    proc = analysis_cli(
        "figures", *common, *[x for kv in figs.items() for x in kv], "--patterns-csv", patterns, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert all(p.stat().st_size > 1000 for p in figs.values())
    classified = pd.read_csv(patterns)
    assert sorted(classified["task"]) == ["basic_arithmetic", "countdown", "synthetic_math"]  # every evaluated task
    assert classified.set_index("task").loc["countdown", "paper_pattern"] == 3  # one of the paper's Figure 4 tasks
    # the patterns are decided at the equal-time point, where the significance test compared the arms (not at ctl's last)
    assert set(classified["control_step"]) == {1} and set(classified["treatment_step"]) == {2}
    assert "3 tasks classified" in proc.stdout
    proc = analysis_cli("tables", *common, "--out-dir", tmp_path / "tables", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    t1 = pd.read_csv(tmp_path / "tables/table1.csv", keep_default_na=False)
    assert len(t1) == 9 and t1.loc[0, "Code"] == NOT_RUN  # base, ctl 1-2, trt 2, five paper rows marked not run
    trt = t1[(t1.arm == "trt") & (t1["continued steps"] == "+2")]
    assert float(trt["time (h)"].item()) == pytest.approx(1.4)
    assert float(trt[SAMPLES].item()) == pytest.approx(0.064)  # 2 steps x 32 generated samples, in thousands
    assert {RG_CATEGORY, RG_TASK, RG_ITEM} <= set(t1.columns) and t1.loc[0, f"{RG_TASK}, paper"] == "61.29"
    assert "booktabs" in (tmp_path / "tables/table5.tex").read_text()
    # every reproduced score has its standard error and n (problems x samples); the paper's values stay as published
    base = t1.iloc[0]
    assert base["Math n"] == "6 x 16" and float(base["Math se"]) > 0 and base[f"{RG_TASK} n"] == "6 x 16"
    shown = (tmp_path / "tables/table1.md").read_text()
    assert f"{float(base['Math']):.2f} ± {float(base['Math se']):.2f}" in shown and "| 6 x 16 |" in shown
    assert "| 61.29 |" in shown  # the paper's printed Reasoning Gym average, as published
    t3 = pd.read_csv(tmp_path / "tables/table3.csv", keep_default_na=False)
    row = t3[(t3.benchmark == "synthetic_math") & (t3.arm == "trt")].iloc[0]
    assert (
        row["pass@1 n"] == "6 x 16" and f"{float(row['pass@1']):.2f} ± " in (tmp_path / "tables/table3.md").read_text()
    )
    t5 = pd.read_csv(tmp_path / "tables/table5.csv", keep_default_na=False)
    assert (t5[t5.benchmark == "rg_geometry"]["pass@1"] == NOT_RUN).all()  # configured, not evaluated: kept
    tables = [tmp_path / f"tables/table{i}.csv" for i in (3, 4, 5)]
    proc = analysis_cli(
        "summary",
        "--spec",
        sp,
        "--significance",
        out["json"],
        "--table1",
        tmp_path / "tables/table1.csv",
        "--benchmark-tables",
        *tables,
        "--patterns",
        patterns,
        "--out",
        tmp_path / "SUMMARY.md",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "SUMMARY.md").read_text()
    assert "category mean of Reasoning Gym" in text and "pattern 3 (BroRL does not improve)" in text
    assert "with the printed average: BroRL +107 (98.1 h), 35.7 h before ProRL's +535 (133.8 h)" in text
    assert "tiny preset" in text and "delta 0.0033" in text and "over n = 12 instances" in text
    # ctl's step 1 (0.5 h) against trt's only checkpoint (1.4 h): unequal compute, flagged here and in the table
    assert sig["selection"]["t_star_hours"] == 0.6 and "differ by 180%" in sig["selection"]["flag"]
    assert "**Warning: unequal compute: the compared checkpoints' training hours differ by 180%" in text
    assert "ProRL +535 10,439k and BroRL +191 20,039k; the comparable BroRL row is +107 (11,226k)" in text
    assert "Resampling whole tasks instead of problems" in text and sig["pooled"]["tasks"] == 3
    assert "| flag | unequal compute: the compared checkpoints' training hours differ by 180%" in out["md"].read_text()
    assert "flag" in set(pd.read_csv(out["csv"])["level"])
    assert f"{float(base['Math']):.2f} ± {float(base['Math se']):.2f} (n 6 x 16) (" in text
    assert "Table 2" in text and "not run: the throughput stage" in text
    # the verdict comes from the paired test: never "does not hold" from differences it cannot tell from noise
    verdict = next(line for line in text.splitlines() if line.startswith("- Verdict here"))
    if sig["pooled"]["reject"]:
        assert "< alpha 0.05" in verdict and "**not resolved" not in verdict, verdict
    else:
        assert "**not resolved at this scale** (paired one-tailed test p" in verdict, verdict
        assert "does not hold" not in verdict


def test_the_summary_verdict_is_resolved_only_by_the_paired_test():
    from brorl.analysis.summary import resolved_by_test

    sig = {"status": "ok", "alpha": 0.05, "pooled": {"reject": False, "p": 0.31, "n": 48}}
    assert resolved_by_test(sig) == (False, "paired one-tailed test p 0.31 >= alpha 0.05 over n = 48")
    sig["pooled"].update(reject=True, p=0.004)
    assert resolved_by_test(sig) == (True, "paired one-tailed test p 0.004 < alpha 0.05")
    assert resolved_by_test({"status": "not run", "reason": "one arm"}) == (False, "no paired test (one arm)")


def test_an_embedded_table_keeps_the_summary_to_one_heading_outline():
    from brorl.analysis.summary import demote_headings

    table2 = "# Table 2: throughput\n\nProduced by ...\n\n## notes\n| a |\n|---|"
    shown = demote_headings(table2, below=3)
    assert shown.splitlines()[0] == "#### Table 2: throughput" and "\n##### notes\n" in shown
    assert "| a |" in shown and demote_headings("no heading", 3) == "no heading"


def test_cli_says_not_run_when_the_arms_are_not_evaluated(tmp_path):
    files = synthetic_evaluation(tmp_path, np.random.default_rng(5))
    base_only = [p for p in files["scores"] if "/base/" in str(p)]
    units = tmp_path / "units.parquet"
    assert (
        analysis_cli(
            "units", "--scores", *base_only, "--benchmarks", *files["benchmarks"], "--out", units, cwd=tmp_path
        ).returncode
        == 0
    )
    out = [x for k in ("json", "md", "csv", "tex") for x in (f"--out-{k}", tmp_path / f"s.{k}")]
    proc = analysis_cli("significance", "--units", units, "--spec", json.dumps(spec()), *out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    sig = json.loads((tmp_path / "s.json").read_text())
    assert sig["status"] == "not run" and "has no evaluated checkpoint after the start" in sig["reason"]
    bad = analysis_cli(
        "units", "--scores", tmp_path / "x.parquet", "--benchmarks", *files["benchmarks"], "--out", units, cwd=tmp_path
    )
    assert bad.returncode == 2 and "not a path of the form" in bad.stderr


# --------------------------------------------------------------------------------------------- the workflow
TINY_POINTS = [("base", 0), ("prorl_n4", 3), ("prorl_n4", 6), ("brorl_n16", 6)]  # the evaluated steps of TINY_SHAPE
# The tiny preset's arms at 6 steps (the preset trains 20): the synthetic checkpoints and metrics below have this shape.
TINY_SHAPE = {
    "arms": [
        {"name": "prorl_n4", "n": 4, "prompts_per_step": 8, "continued_steps": 6, "report_steps": [3, 6], "seed": 1},
        {"name": "brorl_n16", "n": 16, "prompts_per_step": 4, "continued_steps": 6, "report_steps": [6], "seed": 1},
    ],
    "analysis": {"n_sweep": {"step": 6}},
    "probe": {"enabled": False},  # it samples every saved step of real training: the learning test runs it
}
# Training stood in for here: trained checkpoints in evaluation_points() and their folders as model inputs. Included by
# the private copy's Snakefile after every helper and before the rules (later definitions win).
OVERRIDES = f"""

def evaluation_points():
    return {TINY_POINTS!r}


def model_dir(arm, step):
    return f"synthetic_models/{{arm}}/step{{step}}"


def arm_segment_manifests(wildcards):  # training is faked: its metrics and summary exist, made by no job
    return []


def arm_checkpoints(wildcards):
    return []
"""
# The stage's outputs and the evaluation table (not `all`: the model and training stages' own targets stay out).
TARGETS = (
    ["results/SUMMARY.md", "results/tables/eval_summary.md", "results/tables/math_verify_agreement.md"]
    + [
        f"results/figures/{f}.{e}"
        for f in ("figure1", "figure1_families", "figure4", "n_sweep")
        for e in ("png", "pdf")
    ]
    + ["results/tables/task_patterns.csv"]
    + [
        f"results/tables/{t}.{e}"
        for t in ("table1", "table3", "table4", "table5", "significance")
        for e in ("md", "tex", "csv")
    ]
)


def _copy_of_the_workflow(dest: Path) -> Path:
    copy_workflow(dest)
    (dest / "workflow/rules/helpers/test_overrides.smk").write_text(OVERRIDES)
    snakefile = dest / "Snakefile"
    first_rules = 'include: "workflow/rules/simulation.smk"\n'
    text = snakefile.read_text()
    assert first_rules in text, "the Snakefile no longer includes the simulation rules first"
    snakefile.write_text(
        text.replace(first_rules, 'include: "workflow/rules/helpers/test_overrides.smk"\n' + first_rules)
    )
    return dest


def _touch_in_order(paths: list[Path], start: float) -> None:
    """Give ``paths`` increasing mtimes from ``start`` (inputs older than outputs: nothing upstream reruns)."""
    for i, path in enumerate(paths):
        os.utime(path, (start + i, start + i))


@pytest.mark.slow
@pytest.mark.workflow
def test_report_builds_from_the_tiny_preset_with_synthetic_checkpoints(tmp_path):
    from helpers import TINY, job_counts, output_of, snakemake, write_yaml

    repo = _copy_of_the_workflow(tmp_path / "repo")
    work = tmp_path / "work"
    work.mkdir()
    benches = ["synthetic_math", "rg_arithmetic", "rg_geometry"]
    override = write_yaml(
        tmp_path / "small.yaml",
        {
            **TINY_SHAPE,
            "simulation": {"enabled": False},
            "throughput": {"enabled": False},
            "evaluation": {"benchmarks": benches, "max_items": 4, "reasoning_gym": {"items_per_task": 2}},
            "decision": {"f1": {"step": 6}},  # the tiny preset's pipeline check, at these arms' last step
        },
    )
    args = ("--cores", "2", "--directory", work, "--configfile", TINY, override)
    env_data_root = os.environ.get("BRORL_DATA_ROOT")
    os.environ["BRORL_DATA_ROOT"] = str(tmp_path / "no-data")  # offline: no local data files needed
    try:
        proc = snakemake(*[f"resources/benchmarks/{b}.jsonl" for b in benches], *args, cwd=repo)  # the real data rules
        assert proc.returncode == 0, output_of(proc)[-6000:]

        rng = np.random.default_rng(7)
        older = [work / f"resources/benchmarks/{b}.{ext}" for b in benches for ext in ("jsonl", "manifest.json")]
        newer = []
        for arm, step in TINY_POINTS:  # stand-in model folders, produced by no rule
            (work / f"synthetic_models/{arm}/step{step}").mkdir(parents=True)
            older.append(work / f"synthetic_models/{arm}/step{step}")
        prorl_hours, brorl_hours = [0.004, 0.008, 0.012, 0.016, 0.018, 0.02], [0.005 * k for k in range(1, 7)]
        for arm, hours in (("prorl_n4", prorl_hours), ("brorl_n16", brorl_hours)):
            older.append(write_metrics(work / f"results/train/{arm}/metrics.jsonl", hours))
            (work / f"results/train/{arm}/train.json").write_text("{}")  # finish_training's other output
            older.append(work / f"results/train/{arm}/train.json")
        for bench in benches:
            items = [json.loads(line) for line in (work / f"resources/benchmarks/{bench}.jsonl").open()][:4]
            ids = [i["id"] for i in items]
            p = rng.uniform(0.2, 0.6, len(ids))
            for arm, step in TINY_POINTS:
                folder = work / f"results/eval/{arm}/step{step}"
                samples = folder / f"{bench}.samples.parquet"
                folder.mkdir(parents=True, exist_ok=True)
                n = 32 if arm == "base" else 16  # the start's two draws (evaluation.start_draws)
                pd.DataFrame(
                    {
                        "id": np.repeat(ids, n),
                        "sample_idx": np.tile(np.arange(n), len(ids)),
                        "response": "synthetic",
                        "n_tokens": 8,
                        "finish_reason": "stop",
                    }
                ).to_parquet(samples)
                shift = 0.2 if arm == "brorl_n16" else 0.0  # a known effect of the tiny "BroRL" arm
                scores = write_scores(folder / f"{bench}.scores.parquet", ids, np.clip(p + shift, 0, 1), rng, n=n)
                Path(f"{samples}.json").write_text("{}")  # the generation sidecar
                older += [samples, Path(f"{samples}.json")]
                newer.append(scores)
        _touch_in_order(older + newer, start=time.time() - 10_000)

        args = (*TARGETS, *args)
        dry = snakemake("-n", *args, cwd=repo)
        jobs = job_counts(dry)
        assert {"generate_samples", "score_samples", "build_tiny_model"}.isdisjoint(jobs), jobs  # synthetic kept
        assert {
            k: jobs[k] for k in ("collect_units", "test_significance", "make_tables", "plot_figures", "write_summary")
        } == dict.fromkeys(("collect_units", "test_significance", "make_tables", "plot_figures", "write_summary"), 1)
        proc = snakemake(*args, cwd=repo)
        assert proc.returncode == 0, output_of(proc)[-8000:]
        results = work / "results"
        sig = json.loads((results / "stats/significance.json").read_text())
        assert sig["status"] == "ok" and sig["treatment"] == {
            "arm": "brorl_n16",
            "step": 6,
            "hours": 0.03,
            "samples_k": 0.192,
            "startup_hours": 0.0,
            "refill": "not recorded",  # hand-made metrics of schema 8: no waves
        }
        assert "time h: the training clock" in (results / "SUMMARY.md").read_text()
        # both arms' hours and generated samples beside the final checkpoints (equal_time_hours null), and the
        # comparison at equal generated samples
        summary = (results / "SUMMARY.md").read_text()
        assert "`brorl_n16` step 6: 0.03 h, 0.192k generated samples" in summary, summary
        assert sig["equal_samples"]["status"] == "ok" and "At equal generated samples (" in summary
        assert sig["pooled"]["n"] == 12 and sig["pooled"]["delta"] > 0  # equal_time_hours null: final checkpoints
        for name in ("figure1", "figure1_families", "figure4", "n_sweep"):  # both tiny arms: the tiny N sweep
            assert (results / f"figures/{name}.png").stat().st_size > 1000
        drawn = json.loads((results / "figures/figures.json").read_text())  # every figure drew data points
        assert set(drawn["points"]) == {"figure1", "figure1_families", "figure4", "n_sweep"}, drawn
        assert all(n > 0 for n in drawn["points"].values()) and drawn["scale"].startswith("tiny CPU run"), drawn
        summary = (results / "SUMMARY.md").read_text()
        assert "tiny preset" in summary and "over n = 12 instances" in summary
        # the design's minimum detectable effect, and the decision experiment's rule as a pipeline check
        assert "minimum detectable effect" in summary and "compares two checkpoints, not the method" in summary
        decision = summary.split("## The decision experiment")[1].split("\n## ")[0]
        assert decision.count("pipeline check: rule outcome") == 2 and "SUPPORTED" not in decision, decision
        # every score shown has an error bar and n = problems x samples (4 problems per benchmark, 16 samples)
        for table in ("table1", "table3", "table5", "eval_summary"):
            text = (results / f"tables/{table}.md").read_text()
            assert " ± " in text and " x 16 |" in text, table
        t3 = pd.read_csv(results / "tables/table3.csv", keep_default_na=False)
        shown = t3[t3["pass@1"] != NOT_RUN]
        # synthetic_math's evaluated rows; the start's two draws are one cell of 32 samples
        assert len(shown) >= 1 and set(shown["pass@1 n"]) == {"4 x 16", "4 x 32"}
        assert (shown.loc[shown["method"].str.startswith("Baseline"), "pass@1 n"] == "4 x 32").all()
        assert all(float(x) > 0 for x in shown["pass@1 se"])
        agreement = pd.read_csv(results / "tables/math_verify_agreement.csv")
        assert set(agreement["benchmark"]) == {"synthetic_math", "Math avg"} and len(agreement) == 8
        assert (agreement["ProRL only"] == 0).all() and (
            agreement["math-verify only"] == 0
        ).all()  # the synthetic verdicts agree by construction
        for table in sorted((results / "tables").glob("*.md")):  # readable without sideways scrolling
            header = next(line for line in table.read_text().splitlines() if line.startswith("|"))
            assert header.count("|") - 1 <= MAX_PRINTED_COLUMNS, (table.name, header)
        again = snakemake(*args, cwd=repo)
        assert "Nothing to be done" in output_of(again), output_of(again)[-3000:]

        report = snakemake(*args, "--report", work / "report.html", cwd=repo)
        assert report.returncode == 0, output_of(report)[-6000:]
        html = (work / "report.html").read_text(errors="replace")
        for needle in (
            "figure1.png",
            "figure4.png",
            "n_sweep.png",
            "table1.md",
            "table5.md",
            "significance.md",
            "SUMMARY.md",
            "eval_summary.md",
        ):
            assert needle in html, needle
    finally:
        if env_data_root is None:
            os.environ.pop("BRORL_DATA_ROOT", None)
        else:
            os.environ["BRORL_DATA_ROOT"] = env_data_root


def test_an_evaluated_model_is_compared_with_its_paper_row_by_gain_and_says_what_its_card_states():
    """SUMMARY.md's model lines: the steps note from `make pin`'s record, and the gain over the start beside the paper
    row's gain over its Baseline (BroRL +191: Math +1.34, Code +2.20, printed Reasoning Gym +1.80)."""
    from brorl.analysis.tables import START_LEFT_OUT, model_lines

    table = pd.DataFrame(
        [
            {"arm": "base", "Math": 60.0, "Code": 50.0, RG_TASK: 61.0},
            {"arm": "released", "Math": 61.5, "Code": 49.0, RG_TASK: NOT_RUN},
        ]
    )
    model = {"name": "released", "paper_row": "treatment@191", "steps_note": "steps: not known (the card states none)"}
    spec = {"models": [model], "evaluation": {"include_start": True}}
    lines = model_lines(spec, table, ["- `released` step 0 vs start: ..."])
    assert lines[0] == "- `released` step 0 vs start: ..."
    assert lines[1].startswith("- `released`: steps: not known (the card states none). Its gain over the start here:")
    assert (
        "Math +1.50, Code -1.00;" in lines[1]
        and "BroRL N=512 +191 over its Baseline: Math +1.34, Code +2.20" in lines[1]
    )
    left_out = model_lines({**spec, "evaluation": {"include_start": False}}, table, [])
    assert left_out[0] == START_LEFT_OUT.format(names="`released`") and "steps: not known" in left_out[1]


def test_the_lr_ablation_arm_is_compared_with_the_control_at_equal_compute_when_enabled():
    from brorl.analysis.commands import lr_ablation
    from brorl.analysis.summary_sections import compute_lines

    rng = np.random.default_rng(8)
    p = rng.uniform(0.2, 0.6, 200)
    units = units_frame({("base", 0): p, ("ctl", 2): p + 0.01, ("abl", 1): p, ("abl", 2): p + 0.1}, rng)
    clocks = {"hours": {"ctl": {2: 2.0}, "abl": {1: 1.0, 2: 2.1}}, "samples": {}, "startup": {}}
    cfg = {"comparison": {"control": "ctl", "treatment": "trt"}, "lr_ablation": "abl", "equal_time_hours": 2.0}
    cfg |= {"alternative": "greater"}
    test = {"alpha": 0.05, "correction": "holm", "resamples": 200, "seed": 0}
    spec = {"analysis": cfg, "arms": [{"name": "ctl"}, {"name": "trt"}, {"name": "abl"}]}
    out = lr_ablation(units, spec, clocks, test)
    assert out["status"] == "ok" and out["treatment"]["step"] == 2 and out["pooled"]["reject"]
    assert out["pooled"]["delta"] == pytest.approx(0.09, abs=0.03)
    sig = {"selection": {}, "control": {"arm": "ctl", "step": 2}, "treatment": {"arm": "trt", "step": 2}}
    assert any("The lr-rule ablation (`abl`" in line for line in compute_lines(sig | {"lr_ablation": out}))
    off = lr_ablation(units, spec | {"arms": [{"name": "ctl"}]}, clocks, test)
    assert off == {"status": "off", "arm": "abl"}
    assert any("is not an enabled arm" in line for line in compute_lines(sig | {"lr_ablation": off}))
    missing = lr_ablation(units[units["arm"] != "abl"], spec, clocks, test)
    assert missing["status"] == "not run" and "'abl' has no evaluated checkpoint" in missing["reason"]


def test_the_task_clustered_interval_widens_when_tasks_move_together():
    from brorl.stats import bootstrap_ci
    from brorl.stats.cluster_bootstrap import cluster_bootstrap_ci

    rng = np.random.default_rng(0)
    tasks = np.repeat(np.arange(20), 50)  # 20 tasks x 50 problems
    together = rng.normal(0.02, 0.05, 20)[tasks] + rng.normal(0, 0.01, len(tasks))  # each task shifts as a whole
    by_task = cluster_bootstrap_ci(together, tasks, resamples=2000, rng=np.random.default_rng(1))
    by_problem = bootstrap_ci(together, resamples=2000, rng=np.random.default_rng(1))
    assert by_task.clusters == 20 and by_task.estimate == pytest.approx(together.mean())
    assert (by_task.high - by_task.low) > 3 * (by_problem.high - by_problem.low)
    with pytest.raises(ValueError, match="one length"):
        cluster_bootstrap_ci([0.1, 0.2], [1], rng=np.random.default_rng(0))


def test_the_start_checkpoint_has_two_draws_and_each_arms_test_takes_its_own(tmp_path):
    from brorl.analysis.tasks import task_tests
    from brorl.stats import paired_one_tailed

    rng = np.random.default_rng(12)
    bench = write_benchmark(tmp_path, "rg_arithmetic", "reasoning_gym", {"basic_arithmetic": 40})
    ids = [f"rg_arithmetic/basic_arithmetic/{i}" for i in range(40)]
    p = rng.uniform(0.2, 0.7, 40)
    files = [write_scores(tmp_path / "eval/base/step0/rg_arithmetic.scores.parquet", ids, p, rng, n=32)]
    for arm, shift in (("ctl", 0.05), ("trt", 0.1)):
        files.append(write_scores(tmp_path / f"eval/{arm}/step2/rg_arithmetic.scores.parquet", ids, p + shift, rng))
    units = load_units(files, [bench], expected_samples=16, start=("base", 0, 2))
    base = units[units["arm"] == "base"]
    assert (base["n_samples"] == 32).all() and base[["score_first", "score_second"]].notna().all().all()
    assert np.allclose((base["score_first"] + base["score_second"]) / 2, base["score"])  # two halves of 16
    assert units.loc[units["arm"] != "base", "score_first"].isna().all()
    with pytest.raises(AnalysisInputError, match="do not have 16 samples .e.g. base step 0"):
        load_units(files, [bench], expected_samples=16, start=("base", 0, 1))  # one draw configured: 32 is wrong
    # the treatment's test against the first draw, the control's against the second
    tests = task_tests(units, "ctl", "trt", "base", 0, {"ctl": 2, "trt": 2}).set_index("task")
    wide = units.pivot_table(index="id", columns="arm", values=["score", "score_first", "score_second"])
    first = paired_one_tailed(wide[("score_first", "base")].to_numpy(), wide[("score", "trt")].to_numpy())
    second = paired_one_tailed(wide[("score_second", "base")].to_numpy(), wide[("score", "ctl")].to_numpy())
    assert tests.loc["basic_arithmetic", "p_treatment"] == pytest.approx(first.p)
    assert tests.loc["basic_arithmetic", "p_control"] == pytest.approx(second.p)


def test_a_code_instance_whose_samples_lack_their_fraction_of_tests_passed_is_refused(tmp_path):
    rng = np.random.default_rng(3)
    # the loader reads the optional column wherever it is (a code benchmark's scores carry it)
    bench = write_benchmark(tmp_path, "synthetic_math", "math", {"synthetic_math": 2})
    ids = ["synthetic_math/synthetic_math/0", "synthetic_math/synthetic_math/1"]
    path = write_scores(tmp_path / "eval/base/step0/synthetic_math.scores.parquet", ids, np.array([0.3, 0.6]), rng)
    scores = pd.read_parquet(path).assign(tests_passed=0.5)
    scores.to_parquet(path, index=False)
    units = load_units([path], [bench], expected_samples=16)
    assert (units["tests_passed"] == 0.5).all()
    scores.loc[3, "tests_passed"] = None  # one sample of the first problem scored before the fraction was recorded
    scores.to_parquet(path, index=False)
    with pytest.raises(AnalysisInputError, match=r"scores \(tests_passed\): 1 instance\(s\) do not have 16 samples"):
        load_units([path], [bench], expected_samples=16)


def test_the_clock_names_each_arms_refill_and_the_summary_flags_a_clock_dependent_verdict():
    from brorl.analysis.checkpoints import clock_statement, refill_mode
    from brorl.analysis.summary_sections import compute_lines

    rounds = [{"refill": "rounds", "waves": [{"prompts": 4, "kept": 4, "s": 1.0}]}]
    assert refill_mode(rounds) == "rounds" and refill_mode([{"step": 1}]) == "not recorded"
    assert refill_mode([{"refill": None, "waves": [{"prompts": 4, "kept": 4, "s": 1.0}]}]) == "off"
    same = clock_statement({"ctl": "rounds", "trt": "rounds"})
    assert same["text"].endswith("refilled in rounds mode in every arm (the paper's refill is not published)")
    mixed = clock_statement({"ctl": "serial", "trt": "rounds"})
    assert "refill by arm: ctl: serial; trt: rounds" in mixed["text"]
    assert "refill not recorded in every arm" in clock_statement({"ctl": "not recorded"})["text"]
    pooled = {"delta": 0.02, "reject": True}
    sig = {
        "status": "ok",
        "clock": mixed,
        "selection": {},
        "pooled": pooled,
        "control": {"arm": "ctl", "step": 2, "refill": "serial"},
        "treatment": {"arm": "trt", "step": 2, "refill": "rounds"},
    }
    agree = sig | {
        "equal_samples": {
            "status": "ok",
            "samples_k": 1.0,
            **sig,
            "pooled": pooled | {"ci_low": 0, "ci_high": 1, "p": 0.01, "n": 9},
        }
    }
    lines = compute_lines(agree)
    assert "ctl: serial; trt: rounds" in lines[0] and not any("disagree" in line for line in lines)
    differ = agree | {
        "equal_samples": agree["equal_samples"] | {"pooled": agree["equal_samples"]["pooled"] | {"reject": False}}
    }
    (flag,) = [line for line in compute_lines(differ) if "disagree" in line]
    assert "refill: serial vs rounds" in flag and "not significant" in flag

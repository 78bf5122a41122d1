"""The mass-balance probe's arithmetic, command and cost (brorl.probe, brorl.ops.plan) on synthetic scores of the paper
config's size (128 probes x 64 samples); its run on the real tiny model is in tests/training/test_learning.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from brorl.probe.cli import build_parser
from brorl.probe.cli import main as probe_main
from brorl.probe.rates import arm_trajectory, pass_rates, rate_se
from brorl.probe.select import ProbeError, select_probes
from brorl.reporting.tables import MAX_PRINTED_COLUMNS

PROBES, SAMPLES = 128, 64


def scores_of(p: np.ndarray, rng: np.random.Generator, ids: list[str] | None = None) -> pd.DataFrame:
    """One checkpoint's score rows: SAMPLES Bernoulli draws per probe at its true pass rate."""
    ids = ids or [f"p{i}" for i in range(len(p))]
    correct = rng.random((len(p), SAMPLES)) < p[:, None]
    return pd.DataFrame(
        {
            "id": np.repeat(ids, SAMPLES),
            "sample_idx": np.tile(np.arange(SAMPLES), len(p)),
            "correct": correct.ravel(),
            "score": correct.ravel().astype(float),
        }
    )


def rates_of(p: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    ids = [f"p{i}" for i in range(len(p))]
    return pass_rates(scores_of(p, rng, ids), ids, SAMPLES, "synthetic")


def test_the_probe_set_is_the_first_distinct_problems_and_too_few_is_named():
    records = [{"id": str(i), "prompt": f"q{i % 3}"} for i in range(10)]
    assert [r["id"] for r in select_probes(records, 3, "sums.jsonl")] == ["0", "1", "2"]
    with pytest.raises(
        ProbeError, match=r"sums.jsonl holds 3 distinct problems \(10 records\); probe.problems asks for 4"
    ):
        select_probes(records, 4, "sums.jsonl")


def test_probes_chosen_by_the_start_pass_rate_keep_the_band_and_say_what_is_missing(tmp_path, capsys):
    from brorl.probe.select import select_by_start_rate

    records = [{"id": str(i), "prompt": f"q{i}"} for i in range(8)] + [{"id": "8", "prompt": "q1"}]  # 8 repeats q1
    rates = {"0": 1.0, "1": 0.5, "2": 0.0, "3": 0.2, "4": 0.8, "5": 0.81, "6": 0.6, "7": 0.19, "8": 0.5}
    chosen = select_by_start_rate(records, rates, 3, (0.2, 0.8), "math500.jsonl")
    assert [r["id"] for r in chosen] == ["1", "3", "4"]  # in file order, the band inclusive, at the ceiling out
    assert [r["id"] for r in select_by_start_rate(records, rates, 10, (0.2, 0.8), "m")] == ["1", "3", "4", "6"]
    unscored = {k: v for k, v in rates.items() if k != "3"}  # not evaluated (evaluation.max_items): no candidate
    assert [r["id"] for r in select_by_start_rate(records, unscored, 3, (0.2, 0.8), "m")] == ["1", "4", "6"]
    with pytest.raises(ProbeError, match="no problem has a start pass rate within 0.9-1"):
        select_by_start_rate(records, {k: 0.5 for k in rates}, 3, (0.9, 1.0), "m")
    # the command: the start's scores (16 samples per problem here) decide
    bench = tmp_path / "bench.jsonl"
    rec = {"benchmark": "math500", "family": "math", "scorer": "math", "metadata": {}, "answer": "1"}
    bench.write_text("".join(json.dumps({**rec, "id": str(i), "prompt": f"q{i}"}) + "\n" for i in range(6)))
    correct = {0: 16, 1: 8, 2: 0, 3: 4, 4: 12, 5: 15}  # of 16
    start = pd.DataFrame(
        [{"id": str(i), "sample_idx": j, "correct": j < k} for i, k in correct.items() for j in range(16)]
    )
    start.to_parquet(tmp_path / "start.parquet")
    out = tmp_path / "probes.jsonl"
    probe_main(["select", "--benchmark", str(bench), "--problems", "5", "--start-scores",
                str(tmp_path / "start.parquet"), "--out", str(out)])  # fmt: skip
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["1", "3", "4"]
    printed = capsys.readouterr().out
    assert "3 of the 5 probes asked for qualify" in printed and "start pass rate in 0.2-0.8 (3 qualify)" in printed


def test_a_probe_chosen_by_the_start_needs_the_start_to_evaluate_its_benchmark():
    from brorl.config import ConfigError, load_yaml_config, validate_config
    from helpers import ROOT

    config = load_yaml_config(ROOT / "config.yaml")
    config["probe"] |= {"enabled": True, "benchmark": "synthetic_sums"}
    with pytest.raises(ConfigError, match=r"'probe.benchmark': 'synthetic_sums' is not in evaluation.benchmarks"):
        validate_config(config)
    config["probe"]["select"] = "first"
    validate_config(config)


def test_pass_rates_count_every_probe_x_sample_and_refuse_gaps_duplicates_and_strangers():
    rng = np.random.default_rng(0)
    ids = ["a", "b"]
    scores = scores_of(np.array([0.0, 1.0]), rng, ids)
    rates = pass_rates(scores, ids, SAMPLES, "x")
    assert rates["correct"].tolist() == [0, SAMPLES] and rates["pass_rate"].tolist() == [0.0, 1.0]
    assert (rate_se(rates["correct"], rates["samples"]) > 0).all()  # a noise level at 0/n and n/n too
    with pytest.raises(ProbeError, match="1 missing"):
        pass_rates(scores.iloc[1:], ids, SAMPLES, "x")
    with pytest.raises(ProbeError, match="appear twice"):
        pass_rates(pd.concat([scores, scores.iloc[:1]]), ids, SAMPLES, "x")
    with pytest.raises(ProbeError, match="not in the probe set"):
        pass_rates(scores, ["a"], SAMPLES, "x")


def test_unchanged_probes_fall_by_chance_at_about_two_percent():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.9, PROBES)
    shares = []
    for _ in range(20):
        t = arm_trajectory(rates_of(p, rng), [(25, rates_of(p, rng)), (50, rates_of(p, rng))], "arm", z=2.0)
        shares += (
            t.loc[t["step"] > 0, ["fell_since_previous", "fell_since_start", "rose_since_start"]]
            .to_numpy()
            .ravel()
            .tolist()
        )
    assert 0.005 < np.mean(shares) < 0.04, np.mean(shares)


def test_a_known_shrinkage_is_found_with_its_worst_probe():
    rng = np.random.default_rng(2)
    p0 = rng.uniform(0.3, 0.7, PROBES)
    p1 = p0.copy()
    p1[:32] -= 0.25  # a quarter of the probes lose 25 points at step 25 ...
    p2 = p1.copy()
    p2[32:64] += 0.25  # ... another quarter gains them at step 50
    p2[5] = 0.0  # and one probe is forgotten entirely
    t = arm_trajectory(rates_of(p0, rng), [(50, rates_of(p2, rng)), (25, rates_of(p1, rng))], "prorl", z=2.0)
    assert t["step"].tolist() == [0, 25, 50]  # steps sorted, the start first
    start, s25, s50 = (t.iloc[i] for i in range(3))
    assert start["fell_since_start"] == 0 and start["worst_drop"] == 0 and start["mean_se"] > 0
    assert 0.18 <= s25["fell_since_start"] <= 0.27 and s25["fell_since_previous"] == s25["fell_since_start"]
    assert s50["fell_since_previous"] <= 0.05  # nothing new fell between 25 and 50 but the forgotten probe
    assert 0.18 <= s50["rose_since_start"] <= 0.27
    assert s50["worst_drop_id"] == "p5" and s50["worst_drop"] < -0.25
    assert abs(s25["mean_pass_rate"] - s50["mean_pass_rate"] + 0.0625) < 0.03  # +32 x 0.25 / 128, less p5's loss


def write_point(root: Path, arm: str, step: int, p: np.ndarray, rng: np.random.Generator, ids: list[str]) -> Path:
    path = root / f"results/probe/{arm}/step{step}.scores.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    scores_of(p, rng, ids).to_parquet(path)
    return path


def test_the_command_writes_rates_a_readable_table_and_a_figure_with_data(tmp_path, capsys):
    rng = np.random.default_rng(3)
    ids = [f"math500-{i}" for i in range(PROBES)]
    probes = tmp_path / "probe_set.jsonl"
    record = {"benchmark": "math500", "family": "math", "scorer": "math", "metadata": {}, "answer": "1"}
    probes.write_text("".join(json.dumps({**record, "id": i, "prompt": i}) + "\n" for i in ids))
    p0 = rng.uniform(0.2, 0.8, PROBES)
    paths = [write_point(tmp_path, "base", 3000, p0, rng, ids)]
    for arm, drift in (("prorl_n16", -0.2), ("brorl_n512", 0.2)):
        paths += [write_point(tmp_path, arm, s, np.clip(p0 + drift * s / 50, 0, 1), rng, ids) for s in (25, 50)]
    names = ("rates.csv", "probe.md", "probe.csv", "probe.png", "probe.pdf", "arms.png", "arms.pdf", "vs.md", "vs.csv")
    out = {k: tmp_path / f"out/{k}" for k in names}
    args = ["analyse", "--probes", str(probes), "--scores", *map(str, paths), "--samples", str(SAMPLES)]
    args += ["--start-step", "3000", "--engine", "cluster", "--labels", json.dumps({"prorl_n16": "ProRL (N=16)"})]
    args += ["--out-rates", str(out["rates.csv"]), "--out-md", str(out["probe.md"]), "--out-csv", str(out["probe.csv"])]
    args += ["--png", str(out["probe.png"]), "--pdf", str(out["probe.pdf"])]
    args += ["--arms-png", str(out["arms.png"]), "--arms-pdf", str(out["arms.pdf"])]
    args += ["--control", "prorl_n16", "--treatment", "brorl_n512", "--resamples", "500"]  # no hours: final steps
    args += ["--out-arms-md", str(out["vs.md"]), "--out-arms-csv", str(out["vs.csv"])]
    probe_main(args)
    printed = capsys.readouterr().out
    assert "probe: 24 data points" in printed  # 2 arms x 3 checkpoints x 4 panels
    assert "probe_arms: 774 data points" in printed  # per arm 128 probes x 3 checkpoints + the mean's 3
    rates = pd.read_csv(out["rates.csv"])
    assert len(rates) == 5 * PROBES and set(rates.loc[rates["arm"] == "base", "step"]) == {0}
    table = pd.read_csv(out["probe.csv"])
    final = table.set_index(["arm", "step"])
    assert final.loc[("prorl_n16", 50), "fell_since_start"] > 0.3 > final.loc[("brorl_n512", 50), "fell_since_start"]
    header = next(line for line in out["probe.md"].read_text().splitlines() if line.startswith("|"))
    assert header.count("|") - 1 <= MAX_PRINTED_COLUMNS and "ProRL (N=16)" in out["probe.md"].read_text()
    assert all(out[k].stat().st_size > 1000 for k in ("probe.png", "probe.pdf", "arms.png", "arms.pdf"))
    # the worst drop against its null, and the two arms against each other on the same probes
    assert final.loc[("prorl_n16", 50), "worst_drop_p"] < 0.01 < final.loc[("brorl_n512", 0), "worst_drop_p"]
    vs = pd.read_csv(out["vs.csv"]).set_index("basis")
    assert list(vs.index) == ["equal compute", "equal optimizer steps"]
    assert (vs["control_step"] == 50).all() and (vs["delta"] > 0.3).all() and (vs["p"] < 1e-6).all()
    assert (vs["fell_only_control"] > vs["fell_only_treatment"]).all() and (vs["p_fell"] < 1e-6).all()

    no_start = build_parser().parse_args([*args[:4], *map(str, paths[1:]), *args[4 + len(paths) :]])
    with pytest.raises(ProbeError, match="no score file of the start checkpoint"):  # no drop can be measured
        no_start.func(no_start)  # (main() would end the process: os._exit after the error line)


def test_an_unknown_probe_benchmark_is_refused_by_its_key():
    from brorl.config import ConfigError, load_yaml_config, validate_config
    from helpers import ROOT

    config = load_yaml_config(ROOT / "config.yaml")
    config["probe"] = {"enabled": True, "benchmark": "nosuch"}
    with pytest.raises(ConfigError, match=r"'probe.benchmark': unknown benchmark 'nosuch'"):
        validate_config(config)


@pytest.mark.workflow
def test_the_probe_dry_runs_at_paper_scale_sampled_like_a_rollout(tmp_path):
    from brorl.config import load_yaml_config
    from brorl.training.recipe import arm_plan
    from helpers import CONFIG, job_counts, output_of, snakemake, write_yaml

    override = write_yaml(tmp_path / "probe.yaml", {"probe": {"enabled": True}})
    config = load_yaml_config(CONFIG, override)
    targets = ("results/tables/probe.md", "results/tables/probe_in_batch.md")
    proc = snakemake("-n", "-p", *targets, "--directory", tmp_path / "dry", "--configfile", override)
    assert proc.returncode == 0, output_of(proc)[-3000:]
    saved = sum(len(arm_plan(config, a).regular_saves) for a in ("prorl_n16", "brorl_n512"))
    jobs = job_counts(proc)
    assert (jobs["select_probes"], jobs["generate_probe"], jobs["score_probe"], jobs["analyse_probe"]) == (
        1,
        1 + saved,
        1 + saved,
        1,
    )
    assert (jobs["in_batch_prompts"], jobs["generate_in_batch"], jobs["score_in_batch"], jobs["analyse_in_batch"]) == (
        6,
        12,
        12,
        1,
    )
    text = output_of(proc)
    train = config["training"]
    # the rollout's sampling and budget, the paper's 16K, never the evaluation's 0.6 / 0.95 / 32K
    probe_commands = [
        c for c in text.split("python -m brorl.generation generate")[1:] if "--out results/probe/" in c.split("2>&1")[0]
    ]
    # the probe's checkpoints, and the in-batch probe's two sides of steps 1, 96 and 191 in both arms
    assert len(probe_commands) == 1 + saved + 12
    assert all(
        f"--temperature {train['rollout_temperature']}" in c and "--max-tokens 16384" in c for c in probe_commands
    )
    assert not any("--temperature 0.6" in c for c in probe_commands) and "resources/benchmarks/math500.jsonl" in text
    # the probes are chosen by the start's own evaluation of math500 (select start_pass_rate, the paper config's)
    assert "--start-scores results/eval/base/step3000/math500.scores.parquet --band 0.2 0.8" in text, text[-3000:]
    # each side of a probed step samples the policy just before its update (the previous step's export, the start
    # for step 1) or just after it, on the step's own prompts
    sides = {c.split("--out ")[1].split()[0]: c.split("--model ")[1].split()[0] for c in probe_commands}
    assert sides["results/probe/in_batch/prorl_n16/step96.before.samples.parquet"] == "results/train/prorl_n16/step95"
    assert sides["results/probe/in_batch/prorl_n16/step96.after.samples.parquet"] == "results/train/prorl_n16/step96"
    assert sides["results/probe/in_batch/brorl_n512/step1.before.samples.parquet"].startswith("resources/models/")


def test_the_worst_drops_null_is_calibrated_and_finds_one_real_fall():
    """With no change the worst drop of one of 128 probes is -17 to -20 points; its p against the redrawn start is
    about uniform (5% of unchanged runs below 0.05), while one probe that fell 45 points is found."""
    from brorl.probe.compare import worst_drop_null, worst_drop_p

    rng = np.random.default_rng(8)
    p0 = rng.uniform(0.2, 0.8, PROBES)
    start = rates_of(p0, rng)
    null = worst_drop_null(start, 1000, rng)
    assert -0.25 < np.median(null) < -0.12  # chance alone: a "fall" of well over 10 points
    ps = []
    for _ in range(200):  # unchanged runs: a start and a later checkpoint drawn from the same rates
        first, again = rates_of(p0, rng), rates_of(p0, rng)
        null_of_first = worst_drop_null(first, 400, rng)
        ps.append(worst_drop_p(float((again["pass_rate"] - first["pass_rate"]).min()), null_of_first))
    assert 0.01 <= np.mean(np.array(ps) < 0.05) <= 0.10, np.mean(np.array(ps) < 0.05)
    fallen = p0.copy()
    fallen[7] = max(p0[7] - 0.45, 0.0)
    after = rates_of(fallen, rng)
    assert worst_drop_p(float((after["pass_rate"] - start["pass_rate"]).min()), null) < 0.01


def test_the_arms_are_compared_on_the_same_probes_at_equal_compute_and_equal_steps():
    from brorl.probe.compare import between_arms

    rng = np.random.default_rng(9)
    p0 = rng.uniform(0.2, 0.8, PROBES)
    start = rates_of(p0, rng)
    frames = {("ctl", s): rates_of(p0, rng) for s in (10, 20)}  # no change
    frames |= {("trt", s): rates_of(np.clip(p0 + 0.1 * s / 10, 0, 1), rng) for s in (5, 10)}
    hours = {"ctl": {10: 1.0, 20: 2.0}, "trt": {5: 1.0, 10: 2.0}}
    table = between_arms(frames, start, "ctl", "trt", hours, 1.0, 2.0, 300, 0).set_index("basis")
    compute, steps = table.loc["equal compute"], table.loc["equal optimizer steps"]
    assert (compute["control_step"], compute["treatment_step"]) == (10, 5)  # both at 1.0 h
    assert (steps["control_step"], steps["treatment_step"]) == (10, 10)  # the last step both probed
    assert compute["delta"] == pytest.approx(0.05, abs=0.025) and compute["p"] < 1e-3  # step 5: +5 points
    assert compute["ci_low"] < compute["delta"] < compute["ci_high"]
    assert steps["delta"] == pytest.approx(0.1, abs=0.025) and steps["p"] < 1e-6  # step 10: +10 points
    # the same arm against itself (two independent draws): no difference found
    null = between_arms({("ctl", 10): frames["ctl", 10], ("trt", 10): rates_of(p0, rng)}, start, "ctl", "trt",
                        {}, None, 2.0, 300, 0)  # fmt: skip
    assert (null["p"] > 0.01).all() and (null["p_fell"] > 0.01).all()
    # an arm that was never probed keeps its rows, with the reason
    missing = between_arms(frames, start, "ctl", "absent", hours, 1.0, 2.0, 300, 0)
    assert missing["probes"].isna().all() and missing["note"].str.startswith("not run").all()

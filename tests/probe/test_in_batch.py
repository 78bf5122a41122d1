"""The in-batch probe (brorl.probe.in_batch): each engine's record of a step's own prompts, the choice of the prompts
sampled again, the arithmetic against its null, the test between arms, the commands, the config and the plan. Its run
on the real tiny model, checked against transformers, is in tests/training/test_learning.py."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from brorl.probe.in_batch import between_arms, choose_prompts, fell_share_null, step_row
from brorl.probe.rates import pass_rates
from brorl.training import step_prompts

SAMPLES = 64


def rates(p: np.ndarray, rng: np.random.Generator, ids: list[str]) -> pd.DataFrame:
    """One side's pass rates: SAMPLES Bernoulli draws per prompt at its true rate, through pass_rates."""
    correct = rng.random((len(p), SAMPLES)) < p[:, None]
    scores = pd.DataFrame(
        {"id": np.repeat(ids, SAMPLES), "sample_idx": np.tile(np.arange(SAMPLES), len(p)), "correct": correct.ravel()}
    )
    return pass_rates(scores, ids, SAMPLES, "synthetic")


def record(prompt_id: str, prompt: str, answer: str) -> dict:
    """A math train-mix record as prepare_train_data writes them."""
    meta = {"generator": "test", "index": 0, "seed": 0, "source": "sums"}
    return {"id": prompt_id, "benchmark": "sums", "family": "math", "prompt": prompt, "answer": answer} | {
        "scorer": "math",
        "metadata": meta,
        "schema_version": 1,
    }


def drawn_of(ids: list[str], correct: list[int], n: int = 16) -> pd.DataFrame:
    return pd.DataFrame({"id": ids, "samples": n, "correct": correct})


def test_a_steps_prompts_are_counted_per_id_and_the_last_run_of_a_step_counts(tmp_path):
    counts = step_prompts.prompt_counts(["a", "a", "b", "b", None, "a"], [1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    assert counts == [{"id": "a", "samples": 3, "correct": 1}, {"id": "b", "samples": 2, "correct": 2}]
    assert step_prompts.mixed(counts[0]) and not step_prompts.mixed(counts[1])
    with pytest.raises(step_prompts.StepPromptsError, match="3 sample ids but 2 scores"):
        step_prompts.prompt_counts(["a", "b", "c"], [1.0, 0.0])
    path = tmp_path / step_prompts.FILE
    step_prompts.write_steps(path, [(1, counts), (2, counts[:1])])
    step_prompts.append_step(path, 2, counts[1:])  # step 2 rerun after a relaunch: the last line counts
    assert step_prompts.read_steps(path) == {1: counts, 2: counts[1:]}
    step_prompts.truncate_after(path, 1)  # a resume from the save of step 1
    assert list(step_prompts.read_steps(path)) == [1]
    path.write_text(path.read_text() + '{"step": 3, "prompts": [{"id": "x"}]}\n')
    with pytest.raises(step_prompts.StepPromptsError, match=r"step_prompts.jsonl:2: not a step prompts line"):
        step_prompts.read_steps(path)


def test_openrlhf_steps_get_the_prompt_ids_of_the_reward_calls_inside_their_interval(capsys):
    from brorl.training.openrlhf.logs import Launch, RewardCall, StepLog, step_prompts_of

    launches = [Launch(0, 100.0, 200.0, "killed"), Launch(0, 300.0, 500.0, "stopped")]
    logs = [StepLog(1, 150.0, {}), StepLog(2, 350.0, {}), StepLog(3, 450.0, {})]
    calls = [
        RewardCall(120.0, [1, 0], [1.0, 0.0], [None, None], ["a", "a"]),
        RewardCall(160.0, [1], [1.0], [None], ["late"]),  # after step 1's log, in the killed launch: nobody's
        RewardCall(320.0, [1, 1], [1.0, 1.0], [None, None], ["b", "c"]),  # the relaunch's step 2
        RewardCall(400.0, [0], [0.0], [None], None),  # a reward log line without ids (an older reward file)
    ]
    got = step_prompts_of(logs, launches, calls, offset=10)
    assert got == [
        (11, [{"id": "a", "samples": 2, "correct": 1}]),
        (12, [{"id": "b", "samples": 1, "correct": 1}, {"id": "c", "samples": 1, "correct": 1}]),
    ]
    assert "steps [13] have no prompt ids logged" in capsys.readouterr().out


def test_the_reward_file_logs_each_samples_prompt_id(tmp_path, monkeypatch):
    import importlib.util

    from brorl.benchmarks.records import dumps_record
    from helpers import ROOT

    monkeypatch.setenv("BRORL_REWARD_LOG_DIR", str(tmp_path))
    spec = importlib.util.spec_from_file_location("reward_file", ROOT / "workflow/scripts/openrlhf_reward.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    item = record("sums/7", "2+2?", "4")
    module.reward_func(["2+2? \\boxed{4}", "2+2? \\boxed{5}"], ["2+2?", "2+2?"], [dumps_record(item), "not json"])
    (line,) = [json.loads(x) for f in tmp_path.glob("*.jsonl") for x in f.read_text().splitlines()]
    assert line["ids"] == ["sums/7", None] and len(line["scores"]) == 2


def test_the_updated_prompts_are_sampled_first_up_to_the_cap():
    drawn = [
        {"id": "all-right", "samples": 4, "correct": 4},
        {"id": "m1", "samples": 4, "correct": 1},
        {"id": "all-wrong", "samples": 4, "correct": 0},
        {"id": "m2", "samples": 4, "correct": 3},
    ]
    assert [p["id"] for p in choose_prompts(drawn, 3)] == ["m1", "m2", "all-right"]
    assert [p["id"] for p in choose_prompts(drawn, 10)] == ["m1", "m2", "all-right", "all-wrong"]


def test_with_no_change_the_share_that_fell_is_significant_at_most_five_percent_of_the_time():
    """500 simulated unchanged steps of 128 updated prompts: p < 0.05 in at most ~5% of them (a little less: the
    counts are discrete), and the null's 95% point near the 2-3% that fall by chance at z = 2."""
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(128)]
    drawn = drawn_of(ids, [8] * 128)
    ps, q95 = [], []
    for _ in range(500):
        p = rng.uniform(0.1, 0.9, 128)
        row = step_row("arm", 1, drawn, rates(p, rng, ids), rates(p, rng, ids), 2.0, rng, replicates=400)
        ps.append(row["p_fell"])
        q95.append(row["null_q95"])
    share = float(np.mean(np.array(ps) < 0.05))
    print(f"\nno change: p < 0.05 in {100 * share:.1f}% of 500 steps; the null's 95% point {100 * np.mean(q95):.1f}%")
    assert 0.01 <= share <= 0.07
    assert 0.02 <= np.mean(q95) <= 0.06


def test_a_step_that_drains_its_updated_prompts_is_found_and_the_rest_are_told_apart():
    rng = np.random.default_rng(1)
    ids = [f"q{i}" for i in range(64)]
    p = rng.uniform(0.3, 0.7, 64)
    after = p.copy()
    after[:16] -= 0.25  # a quarter of the updated prompts lose 25 points of correct mass
    drawn = drawn_of(ids, [8] * 48 + [16] * 16)  # the last 16 were all right at the step: not updated
    row = step_row("arm", 5, drawn, rates(p, rng, ids), rates(after, rng, ids), 2.0, rng)
    assert row["prompts"] == 64 and row["updated"] == 48 and row["samples"] == SAMPLES
    assert row["fell_updated"] >= 8 and row["p_fell"] < 0.01 and row["change"] < -0.03
    assert row["step_pass_rate"] == pytest.approx((48 * 8 + 16 * 16) / (64 * 16))
    other = rates(p, rng, ids[::-1])
    with pytest.raises(ValueError, match="hold other prompts than the step's"):
        step_row("arm", 5, drawn, rates(p, rng, ids), other, 2.0, rng)


def test_the_arms_are_compared_by_fishers_exact_test_at_each_step_both_probed():
    rows = pd.DataFrame(
        [
            {"arm": "c", "step": 1, "updated": 20, "fell_updated": 8},
            {"arm": "t", "step": 1, "updated": 20, "fell_updated": 1},
            {"arm": "c", "step": 9, "updated": 10, "fell_updated": 0},
            {"arm": "t", "step": 9, "updated": 0, "fell_updated": 0},
            {"arm": "c", "step": 12, "updated": 5, "fell_updated": 1},
        ]
    )
    table = between_arms(rows, "c", "t").set_index("step")
    from scipy.stats import fisher_exact

    assert table.loc[1, "p"] == pytest.approx(fisher_exact([[8, 12], [1, 19]], alternative="greater")[1])
    assert table.loc[1, "p"] < 0.05 and table.loc[1, "control_fell"] == 8
    assert "updated none" in table.loc[9, "note"] and table.loc[12, "note"] == "not probed in t"


def test_an_empty_mask_gives_an_undefined_null():
    before = pd.DataFrame({"samples": [64, 64], "pass_rate": [0.5, 0.5]})
    assert np.isnan(fell_share_null(before, np.array([False, False]), 2.0, 10, np.random.default_rng(0))).all()


def test_the_commands_choose_a_steps_prompts_and_write_the_tables_and_figure(tmp_path, capsys):
    from brorl.probe.cli import build_parser
    from brorl.probe.cli import main as probe_main
    from brorl.probe.select import ProbeError

    rng = np.random.default_rng(2)
    mix = tmp_path / "mix.jsonl"
    items = [record(f"q{i}", f"What is {i}+1?", str(i + 1)) for i in range(12)]
    mix.write_text("".join(json.dumps(r) + "\n" for r in items))
    run = tmp_path / "run" / step_prompts.FILE
    run.parent.mkdir()
    for arm_correct in ([2] * 6 + [4] * 2, [1] * 6 + [0] * 2):
        step_prompts.append_step(
            run, 1, [{"id": f"q{i}", "samples": 4, "correct": c} for i, c in enumerate(arm_correct)]
        )
    root = tmp_path / "results/probe/in_batch"
    scores = []
    for arm, drop in (("ctrl", 0.3), ("treat", 0.0)):
        folder = root / arm
        probe_main(
            [
                "in-batch-prompts",
                "--step-prompts",
                str(run),
                "--train-data",
                str(mix),
                "--step",
                "1",
                "--prompts",
                "7",
                "--out",
                str(folder / "step1.prompts.jsonl"),
                "--out-rollouts",
                str(folder / "step1.rollouts.csv"),
            ]
        )
        ids = [json.loads(x)["id"] for x in (folder / "step1.prompts.jsonl").read_text().splitlines()]
        assert ids == [f"q{i}" for i in range(6)] + ["q6"]  # the 6 updated first, then one more, 7 at most
        p = np.full(len(ids), 0.6)
        for side, rate in (("before", p), ("after", p - drop)):
            correct = rng.random((len(ids), SAMPLES)) < rate[:, None]
            frame = pd.DataFrame(
                {
                    "id": np.repeat(ids, SAMPLES),
                    "sample_idx": np.tile(np.arange(SAMPLES), len(ids)),
                    "correct": correct.ravel(),
                    "score": correct.ravel().astype(float),
                }
            )
            path = folder / f"step1.{side}.scores.parquet"
            frame.to_parquet(path)
            scores.append(str(path))
    out = {name: tmp_path / "out" / name for name in ("rates.csv", "t.md", "t.csv", "a.md", "a.csv", "f.png", "f.pdf")}
    probe_main(
        ["in-batch", "--scores", *scores, "--samples", str(SAMPLES), "--engine", "embedded", "--control", "ctrl"]
        + ["--treatment", "treat", "--labels", json.dumps({"ctrl": "ProRL", "treat": "BroRL"})]
        + ["--out-rates", str(out["rates.csv"]), "--out-md", str(out["t.md"]), "--out-csv", str(out["t.csv"])]
        + ["--out-arms-md", str(out["a.md"]), "--out-arms-csv", str(out["a.csv"])]
        + ["--png", str(out["f.png"]), "--pdf", str(out["f.pdf"])]
    )
    table = pd.read_csv(out["t.csv"]).set_index("arm")
    assert table.loc["ctrl", "fell_updated"] >= 3 and table.loc["treat", "change"] > table.loc["ctrl", "change"]
    assert table.loc["ctrl", "updated"] == 6 and table.loc["ctrl", "prompts"] == 7
    assert len(pd.read_csv(out["rates.csv"])) == 2 * 2 * 7  # arms x sides x prompts
    assert "ProRL" in out["t.md"].read_text() and "Fisher" in out["a.md"].read_text()
    assert re.search(r"probe_in_batch: (1[4-9]|[2-9]\d) data points", capsys.readouterr().out)  # 14 prompts at least
    # a step the run folder holds no record of is refused by name (called in-process: main's error path hard-exits)
    args = build_parser().parse_args(
        ["in-batch-prompts", "--step-prompts", str(run), "--train-data", str(mix), "--step", "3", "--prompts", "4"]
        + ["--out", str(tmp_path / "x.jsonl"), "--out-rollouts", str(tmp_path / "x.csv")]
    )
    with pytest.raises(ProbeError, match="no record of step 3"):
        args.func(args)


def test_probed_steps_add_their_saves_and_a_step_beyond_an_arm_is_refused_by_its_key():
    from brorl.config import ConfigError, load_yaml_config, validate_config
    from brorl.training.recipe import arm_plan
    from helpers import CONFIG

    config = load_yaml_config(CONFIG)
    off = arm_plan(config, "brorl_n512")
    config["probe"] |= {"enabled": True}
    on = arm_plan(config, "brorl_n512")
    assert off.in_batch_saves == () and set(on.saved_steps) == set(off.saved_steps) | set(on.in_batch_saves)
    assert {1, 95, 96, 190} <= set(on.in_batch_saves) and on.regular_saves == off.saved_steps
    assert 191 in off.saved_steps and 191 not in on.in_batch_saves  # the last step is saved anyway
    config["probe"]["in_batch"]["steps"] = [1, 400]
    with pytest.raises(ConfigError, match=r"'probe.in_batch.steps': step 400 is beyond arm 'brorl_n512'"):
        validate_config(config)

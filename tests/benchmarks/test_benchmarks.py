"""The data stage: benchmark registry, record schema, preparation from real files, Reasoning Gym freezing and
scoring, the training mix, and the data rules' dry run. No hub access: the hub path is exercised with a local file
passed through the same code (only the download function is replaced)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from brorl.benchmarks import prepare as prep
from brorl.benchmarks.records import RecordError, read_records, write_records
from brorl.benchmarks.registry import MATH_SUFFIX, REGISTRY_DIR, RegistryError, load_entry, load_registry
from brorl.benchmarks.rg import CATEGORIES, decode, encode, generate_category
from brorl.benchmarks.synthetic import arithmetic
from brorl.benchmarks.train import prepare_train_data
from brorl.config import load_schema
from brorl.scoring.reasoning_gym import audit, score_reasoning_gym

ROOT = Path(__file__).resolve().parents[2]
DEEPSCALER = ROOT / "data" / "benchmarks" / "deepscaler"  # the repository's own copy of the real files
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "PYTHONHASHSEED": "0"}
# tasks whose scorer fails the audit in reasoning-gym 0.1.25, and tasks without a gold string (scored via metadata)
UNSOUND = {"game_of_life_halting"}
NO_GOLD = {"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"}


def deepscaler(name: str) -> Path:
    path = DEEPSCALER / name
    assert path.is_file(), f"the repository's data file {path} is missing"
    return path


def cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "brorl.benchmarks", *args], env=ENV, capture_output=True, text=True, timeout=300, **kw
    )


# --------------------------------------------------------------------------------------------------------- registry
def test_registry_has_one_valid_entry_per_config_benchmark():
    registry = load_registry()
    named = load_schema()["properties"]["evaluation"]["properties"]["benchmarks"]["default"]
    tiny = yaml.safe_load((ROOT / "workflow" / "presets" / "tiny.yaml").read_text())["evaluation"]["benchmarks"]
    assert set(named) | set(tiny) <= set(registry), sorted(set(named) | set(tiny) - set(registry))
    for spec in registry.values():
        assert spec.n_samples == 16 and spec.scorer == spec.family
        if spec.family == "math":
            assert spec.render_prompt("What is 1+1?") == f"What is 1+1? {MATH_SUFFIX}"
            assert spec.render_prompt("x").endswith(
                "Let's think step by step and output the final answer within \\boxed{}."
            )
        elif spec.family == "code":
            assert spec.render_prompt("Sum two ints.").endswith("```python\nYour code\n```\nat the end.")
        elif spec.family == "stem":
            assert spec.render_prompt("Q").startswith("Q\n\n") and "within \\boxed{}" in spec.render_prompt("Q")
        elif spec.family == "instruction_following":
            assert spec.render_prompt("Write a haiku.") == "Write a haiku."  # the request as written
        else:
            assert spec.category in CATEGORIES and "<answer>answer here</answer>" in spec.render_prompt("Q")


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda e: e.update(n_samples=0), "key 'n_samples'"),
        (lambda e: e.pop("scorer"), "'scorer' is a required property"),
        (lambda e: e.update(scorer="code"), "key 'scorer'"),
        (lambda e: e.update(prompt_template="{problem} Answer."), "key 'prompt_template'"),
        (lambda e: e["sources"][0]["fields"].pop("answer"), "key 'sources[0].fields.answer'"),
        (lambda e: e.update(shots=5), "'shots' was unexpected"),
    ],
)
def test_a_bad_registry_entry_names_the_file_and_key(tmp_path, mutate, words):
    entry = yaml.safe_load((REGISTRY_DIR / "amc.yaml").read_text())
    mutate(entry)
    path = tmp_path / "amc.yaml"
    path.write_text(yaml.safe_dump(entry))
    with pytest.raises(RegistryError) as err:
        load_registry(tmp_path)
    assert str(path) in str(err.value) and words in str(err.value)


def test_a_reasoning_gym_entry_without_its_task_count_is_refused(tmp_path):
    entry = yaml.safe_load((REGISTRY_DIR / "rg_code.yaml").read_text())
    entry.pop("tasks")
    (tmp_path / "rg_code.yaml").write_text(yaml.safe_dump(entry))
    with pytest.raises(RegistryError, match="key 'tasks': required for a reasoning_gym benchmark"):
        load_registry(tmp_path)


def test_entry_name_must_match_its_file(tmp_path):
    shutil.copy(REGISTRY_DIR / "amc.yaml", tmp_path / "amc2.yaml")
    with pytest.raises(RegistryError, match="differs from the file name"):
        load_entry(tmp_path / "amc2.yaml")


# ---------------------------------------------------------------------------------------------------------- records
def _rec(i=0, **kw):
    rec = {
        "id": f"b/{i}",
        "benchmark": "b",
        "family": "math",
        "prompt": "p",
        "answer": "1",
        "scorer": "math",
        "metadata": {},
    }
    rec.update(kw)
    return rec


def test_records_round_trip_and_are_versioned(tmp_path):
    path = tmp_path / "b.jsonl"
    code = _rec(1, family="code", scorer="code", tests={"inputs": ["1\n"], "outputs": ["2\n"]})
    del code["answer"]
    write_records(path, [_rec(0), code, _rec(2, answer=["a", "b"])])
    back = read_records(path)
    assert [r["id"] for r in back] == ["b/0", "b/1", "b/2"] and all(r["schema_version"] == 1 for r in back)


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty file"),
        (json.dumps(_rec()) + "\n{not json\n", ":2: malformed JSON"),
        (
            json.dumps(_rec()) + "\n" + json.dumps({k: v for k, v in _rec(1).items() if k != "prompt"}) + "\n",
            ":2: missing field 'prompt'",
        ),
        (json.dumps(_rec()) + "\n" + json.dumps(_rec()) + "\n", ":2: duplicate id"),
        (json.dumps(_rec(answer="")) + "\n", ":1: field 'answer'"),
        (json.dumps(_rec(family="code", scorer="code")) + "\n", ":1: field 'tests'"),
    ],
)
def test_bad_records_files_name_the_file_and_line(tmp_path, text, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(RecordError) as err:
        read_records(path)
    assert str(path) in str(err.value) and words in str(err.value)


# ---------------------------------------------------------------------------------------------------------- prepare
@pytest.mark.parametrize(
    "name, file, rows",
    [
        ("aime24", "aime.json", 30),
        ("amc", "amc.json", 83),
        ("math500", "math.json", 500),
        ("minerva", "minerva.json", 272),
        ("olympiadbench", "olympiad_bench.json", 675),
    ],
)
def test_prepare_real_deepscaler_files(tmp_path, name, file, rows):
    src = deepscaler(file)
    out = tmp_path / f"{name}.jsonl"
    manifest = prep.prepare(load_registry()[name], str(src), out)
    records = read_records(out)
    assert len(records) == rows == manifest["rows"]
    assert manifest["input_sha256"] == prep.sha256_file(src) and manifest["output_sha256"] == prep.sha256_file(out)
    assert json.loads(prep.manifest_path(out).read_text())["provenance"]["packages"]
    assert len({r["id"] for r in records}) == rows
    assert all(r["prompt"].endswith(MATH_SUFFIX) and r["metadata"]["problem"] in r["prompt"] for r in records)
    if name == "amc":
        assert records[0]["answer"] == "142" and records[0]["metadata"]["raw_answer"] == 142.0
    if name in ("minerva", "olympiadbench"):
        assert all(isinstance(r["answer"], list) and all(a == a.strip() for a in r["answer"]) for r in records)


def test_prepare_cli_reads_the_local_source_and_is_reproducible(tmp_path):
    deepscaler("aime.json")
    a, b = tmp_path / "a" / "aime24.jsonl", tmp_path / "b" / "aime24.jsonl"
    for out, source in ((a, "local"), (b, str(DEEPSCALER / "aime.json"))):
        proc = cli("prepare", "--name", "aime24", "--source", source, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    assert a.read_bytes() == b.read_bytes()


def test_hub_source_goes_through_the_same_path(tmp_path, monkeypatch):
    """Only the download is replaced: it 'downloads' the real file; mapping, checks and manifest are the real ones."""
    src = deepscaler("math.json")
    spec = load_registry()["math500"]
    entry = yaml.safe_load(spec.path.read_text())
    entry["sources"] = [
        entry["sources"][1]
        | {"fields": {"id": "unique_id", "problem": "problem", "answer": "answer"}, "revision": None}
    ]
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg" / "math500.yaml").write_text(yaml.safe_dump(entry))
    hub_spec = load_registry(tmp_path / "reg")["math500"]
    calls = []

    def fake_download(source, cache_dir=None, retries=3):
        calls.append((source.repo_id, source.filename))
        return src, "0123abcd"

    monkeypatch.setattr(prep, "download_hub", fake_download)
    with pytest.raises(prep.PrepareError, match=r"HuggingFaceH4/MATH-500@main \(no revision given\) is not pinned"):
        prep.prepare(hub_spec, "hub", tmp_path / "math500.jsonl")  # the registry's hub revision is null
    assert calls == []  # refused before the download
    manifest = prep.prepare(hub_spec, "hub", tmp_path / "math500.jsonl", allow_unpinned=True)
    assert calls == [("HuggingFaceH4/MATH-500", "test.jsonl")]
    assert manifest["source"]["resolved_revision"] == "0123abcd" and manifest["rows"] == 500


def test_code_files_normalize_tests_and_wrong_counts_fail(tmp_path):
    """DeepCoder's code sets (real, independently written): dict tests and {input, output} lists both normalize."""
    for file, rows in (("code_contests.json", 165), ("codeforces.json", 408)):
        src = deepscaler(file)
        entry = {
            "name": "dc",
            "family": "code",
            "version": 1,
            "description": "DeepCoder test set",
            "sources": [{"kind": "local", "path": file, "fields": {"problem": "problem", "tests": "tests"}}],
            "prompt_template": "{problem}\n\nWrite Python code in a fenced ```python block.",
            "scorer": "code",
            "n_samples": 16,
            "expected_rows": rows,
        }
        (tmp_path / "dc.yaml").write_text(yaml.safe_dump(entry))
        spec = load_entry(tmp_path / "dc.yaml")
        prep.prepare(spec, str(src), tmp_path / "dc.jsonl")
        records = read_records(tmp_path / "dc.jsonl")
        assert len(records) == rows
        assert all(len(r["tests"]["inputs"]) == len(r["tests"]["outputs"]) > 0 for r in records)
    entry["expected_rows"] = rows + 1
    (tmp_path / "dc.yaml").write_text(yaml.safe_dump(entry))
    with pytest.raises(prep.PrepareError, match=f"{rows} rows .* expected {rows + 1}"):
        prep.prepare(load_entry(tmp_path / "dc.yaml"), str(src), tmp_path / "dc.jsonl")


def test_prepare_reads_jsonl_and_parquet_and_filters(tmp_path):
    import pandas as pd

    rows = [{"q": f"Problem {i}?", "a": i, "src": "keep" if i % 2 else "drop", "meta": {"k": [i]}} for i in range(6)]
    entry = {
        "name": "toy",
        "family": "math",
        "version": 1,
        "description": "toy",
        "sources": [
            {
                "kind": "hub",
                "repo_id": "x/y",
                "filename": "t.parquet",
                "filter": {"src": "keep"},
                "fields": {"problem": "q", "answer": "a", "metadata": ["meta.k"]},
            }
        ],
        "prompt_template": "{problem} " + MATH_SUFFIX,
        "scorer": "math",
        "n_samples": 16,
        "expected_rows": 3,
    }
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump(entry))
    spec = load_entry(tmp_path / "toy.yaml")
    pd.DataFrame(rows).to_parquet(tmp_path / "t.parquet")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("t.parquet", "t.jsonl"):
        prep.prepare(spec, str(tmp_path / name), tmp_path / "out.jsonl")
        recs = read_records(tmp_path / "out.jsonl")
        assert [r["answer"] for r in recs] == ["1", "3", "5"] and recs[0]["metadata"]["meta.k"] == [1]
    (tmp_path / "bad.jsonl").write_text(json.dumps(rows[1]) + "\n{oops\n")
    with pytest.raises(prep.PrepareError, match="bad.jsonl:2: malformed JSON"):
        prep.prepare(spec, str(tmp_path / "bad.jsonl"), tmp_path / "out.jsonl")


# ---------------------------------------------------------------------------------------------- reasoning gym
@pytest.fixture(scope="module")
def rg_all():
    """Every category, 2 items per task, generated in this process (the tests' process)."""
    registry = load_registry()
    out = {}
    for category in CATEGORIES:
        records, facts = generate_category(category, 2, 777, registry[f"rg_{category}"])
        out[category] = records, {**facts, "scorer_audit": audit(records)}  # as the CLI writes the manifest
    return out


def test_every_task_of_the_eleven_categories_is_generated(rg_all):
    tasks = [t for _, facts in rg_all.values() for t in facts["tasks"]]
    assert len(tasks) == len(set(tasks)) == 104
    for records, facts in rg_all.values():
        assert len(records) == 2 * len(facts["tasks"])


def test_a_registry_task_count_that_the_library_disagrees_with_is_refused():
    """The workflow counts Reasoning Gym problems (and sizes generation jobs) from the registry's `tasks`."""
    spec = dataclasses.replace(load_registry()["rg_code"], tasks=3)
    with pytest.raises(ValueError, match=r"key 'tasks' is 3 but reasoning-gym .* has 2 tasks"):
        generate_category("code", 1, 777, spec)


def test_gold_answers_score_one_except_the_unsound_tasks(rg_all, tmp_path):
    """The audit over the frozen records finds exactly the known unsound scorers; gold scores 1 everywhere else,
    also after the JSONL round trip (arc_agi/rearc need their tuples back)."""
    unsound, no_gold = {}, set()
    for category, (records, facts) in rg_all.items():
        audit = facts["scorer_audit"]
        unsound.update(audit["unsound"])
        no_gold |= set(audit["no_gold"])
        path = tmp_path / f"rg_{category}.jsonl"
        write_records(path, records)
        for rec in read_records(path):
            task = rec["metadata"]["task"]
            if task in UNSOUND or rec["answer"] is None:
                continue
            score = score_reasoning_gym(rec, f"<think>hm</think> <answer>{rec['answer']}</answer>")
            assert score.correct and score.score == 1.0, (task, score)
    assert set(unsound) == UNSOUND, unsound
    assert no_gold == NO_GOLD


def test_scoring_extracts_the_last_answer_and_never_raises(rg_all):
    records = {r["metadata"]["task"]: r for recs, _ in rg_all.values() for r in recs}
    rec = records["basic_arithmetic"]
    assert score_reasoning_gym(rec, f"<answer>0</answer> then <answer>{rec['answer']}</answer>").correct
    assert score_reasoning_gym(rec, "no tags here").error.startswith("no <answer>")
    assert score_reasoning_gym(rec, "<answer>surely not</answer>").score < 1
    bad = score_reasoning_gym(records["prime_factorization"], "<answer>abc</answer>")
    assert bad.score == 0.0 and not bad.correct
    partial = score_reasoning_gym(records["spell_backward"], "<answer>zzzz</answer>")
    assert 0.0 <= partial.score < 1.0


def test_tagged_json_restores_tuples_sets_and_keys():
    from fractions import Fraction

    value = {"grid": ((1, 2), (3, 4)), "s": {3, 1}, "k": {1: "a"}, "f": Fraction(1, 3), "l": [(1,)]}
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value and isinstance(back["grid"][0], tuple)


@pytest.mark.parametrize("category", ["algorithmic", "arc"])
def test_regenerating_with_the_same_seed_gives_the_same_bytes(tmp_path, category):
    """algorithmic holds tasks that need PYTHONHASHSEED=0 (word_ladder, isomorphic_strings, ...)."""
    outs = []
    for run in ("a", "b"):
        out = tmp_path / run / f"rg_{category}.jsonl"
        proc = cli(
            "generate-reasoning-gym",
            "--category",
            category,
            "--items-per-task",
            "3",
            "--seed",
            "5",
            "--version",
            "0.1.25",
            "--out",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    manifest = json.loads((tmp_path / "a" / f"rg_{category}.manifest.json").read_text())
    assert manifest["pythonhashseed"] == "0" and manifest["rows"] == 3 * len(manifest["tasks"])
    assert set(manifest["scorer_audit"]["unsound"]) <= UNSOUND


# ------------------------------------------------------------------------------------------------------- training
def test_synthetic_arithmetic_is_deterministic_and_correct():
    a, b = arithmetic(50, 3), arithmetic(50, 3)
    assert a == b and a != arithmetic(50, 4)
    for rec in a:
        expr = rec["metadata"]["problem"].removeprefix("Compute ").removesuffix(".")
        assert str(eval(expr)) == rec["answer"] and rec["prompt"].endswith(MATH_SUFFIX)


def test_train_mix_of_the_tiny_preset_has_all_five_families_offline(tmp_path):
    tiny = yaml.safe_load((ROOT / "workflow" / "presets" / "tiny.yaml").read_text())["train_data"]
    tiny["sources"][3] |= {"items": 120, "categories": None}  # all 11 categories
    tiny["max_prompts"] = 250
    out = tmp_path / "mix.jsonl"
    manifest = prepare_train_data({"seed": 0, **tiny}, out)
    records = read_records(out)
    assert len(records) == manifest["rows"] == 250 and sum(manifest["families"].values()) == 250
    assert set(manifest["families"]) == {"math", "code", "stem", "reasoning_gym", "instruction_following"}
    assert [s["rows"] for s in manifest["sources"]] == [s["items"] for s in tiny["sources"]]
    assert len({r["metadata"]["task"] for r in records if r["family"] == "reasoning_gym"}) > 20  # not one category
    rg = next(r for r in records if r["family"] == "reasoning_gym")
    assert rg["metadata"]["seed"] != 12345  # disjoint from the evaluation seed


def test_a_hub_train_source_without_a_mapping_fails_clearly(tmp_path):
    spec = {
        "name": "m",
        "seed": 0,
        "sources": [
            {
                "name": "x",
                "family": "math",
                "dataset": "someone/unknown-set",
                "revision": "0" * 40,
                "split": "train",
                "items": 5,
            }
        ],
    }
    with pytest.raises(prep.PrepareError, match="no field mapping for hub dataset 'someone/unknown-set'"):
        prepare_train_data(spec, tmp_path / "m.jsonl")


def test_an_unpinned_train_source_is_refused_before_any_source_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(prep, "download_hub", lambda *a, **k: pytest.fail("downloaded an unpinned revision"))
    tiny = yaml.safe_load((ROOT / "workflow" / "presets" / "tiny.yaml").read_text())["train_data"]
    late = {
        "name": "math_hub",
        "family": "math",
        "dataset": "agentica-org/DeepScaleR-Preview-Dataset",
        "revision": "main",
        "split": "train",
        "items": 5,
    }
    spec = {"seed": 0, **tiny, "sources": [*tiny["sources"], late]}
    with pytest.raises(prep.PrepareError) as error:
        prepare_train_data(spec, tmp_path / "m.jsonl")
    words = str(error.value)
    assert "agentica-org/DeepScaleR-Preview-Dataset@main is not pinned" in words
    assert "Set train_data.sources[math_hub].revision to the commit" in words
    assert "HfApi().dataset_info('agentica-org/DeepScaleR-Preview-Dataset', revision='main').sha" in words
    assert not (tmp_path / "m.jsonl").exists()


# ------------------------------------------------------------------------------------------------------- workflow
@pytest.mark.parametrize("profile", [[], ["--profile", "profiles/local"]], ids=["paper", "tiny"])
@pytest.mark.workflow
def test_prepare_data_dry_run(profile, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    # --directory: outputs left in the checkout by an earlier run must not make the dry run empty
    cmd = [str(Path(sys.executable).parent / "snakemake"), "-n", "prepare_data", "--directory", str(tmp_path)]
    proc = subprocess.run([*cmd, *profile], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    text = proc.stdout + proc.stderr
    assert "prepare_train_data" in text and "prepare_benchmark" in text
    if not profile:
        assert "generate_reasoning_gym" in text and "resources/benchmarks/rg_games.jsonl" in text


def test_the_paper_mix_prepares_all_five_families_from_local_copies_of_its_hub_files(tmp_path, monkeypatch):
    """config.yaml's train_data with each hub file replaced by a local file laid out as the dataset (as the hub
    tests do): five families, counted in the manifest; SCP-116K's unpinned revision needs allow_unpinned."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from brorl.benchmarks import train as train_mix
    from brorl.config import load_yaml_config

    files = {
        "agentica-org/DeepScaleR-Preview-Dataset": tmp_path / "deepscaler.json",
        "PRIME-RL/Eurus-2-RL-Data": tmp_path / "train.parquet",
        "EricLu/SCP-116K": tmp_path / "SCP_116K_in_open_source_format.jsonl",
        "nvidia/Llama-Nemotron-Post-Training-Dataset": tmp_path / "instruction_following.jsonl",
    }
    shutil.copy(deepscaler("aime.json"), files["agentica-org/DeepScaleR-Preview-Dataset"])  # problem, answer
    tests = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "prompt": [{"role": "user", "content": f"Add two numbers ({i})."}],
                    "reward_model": {"ground_truth": tests},
                    "ability": "code",
                    "data_source": "apps",
                }
                for i in range(6)
            ]
            + [
                {
                    "prompt": [{"role": "user", "content": "2+2?"}],
                    "reward_model": {"ground_truth": "4"},
                    "ability": "math",
                    "data_source": "numina",
                }
            ]
        ),
        files["PRIME-RL/Eurus-2-RL-Data"],
    )
    files["EricLu/SCP-116K"].write_text(
        "".join(
            json.dumps(
                {
                    "domain": "Physics",
                    "problem": f"A cart moves at {v} m/s for 2 s. How far does it go?",
                    "matched_solution": f"d = v t = \\boxed{{{2 * v}}} m",
                }
            )
            + "\n"
            for v in range(1, 7)
        )
    )
    files["nvidia/Llama-Nemotron-Post-Training-Dataset"].write_text(
        "".join(
            json.dumps(
                {
                    "input": [{"role": "user", "content": f"Describe a harbour ({i}). Use no commas."}],
                    "args": {"instruction_id_list": ["punctuation:no_comma"], "instruction_kwargs": [{}]},
                }
            )
            + "\n"
            for i in range(6)
        )
    )
    monkeypatch.setattr(train_mix, "download_hub", lambda source, cache_dir=None: (files[source.repo_id], "e" * 40))
    spec = load_yaml_config(ROOT / "config.yaml")["train_data"]
    for src in spec["sources"]:
        src["items"] = 5
        if src["dataset"] == "reasoning_gym":
            src["categories"] = ["arithmetic"]
    with pytest.raises(prep.PrepareError, match="EricLu/SCP-116K@main is not pinned"):
        prepare_train_data(spec, tmp_path / "mix.jsonl")  # the only source without a public commit
    manifest = prepare_train_data(spec, tmp_path / "mix.jsonl", allow_unpinned=True)
    assert manifest["families"] == {"code": 5, "instruction_following": 5, "math": 5, "reasoning_gym": 5, "stem": 5}
    assert {s["name"]: s["resolved_revision"] for s in manifest["sources"] if s["dataset"] != "reasoning_gym"} == {
        "math": "e" * 40,
        "code": "e" * 40,
        "stem": "e" * 40,
        "instruction_following": "e" * 40,
    }
    assert len(read_records(tmp_path / "mix.jsonl")) == 25

"""`make evaluate MODEL=...` (brorl.ops.run.any_checkpoint): what MODEL may be, the overlay it writes (nothing
trains, the start checkpoint only with BASE=1), the architecture check before any job, and the paper-scale dry run
under the slurm profile (no training job, no training preflight). The tiny run through the real rules is in
tests/evaluation/test_evaluation.py (the tiny evaluation's fixture)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from brorl.config import load_yaml_config
from brorl.models.architectures import registry_architectures, served_architectures
from brorl.ops.run.any_checkpoint import Checkpoint, EvaluateError, overlay, parse_model
from brorl.ops.run.run_profile import absolute_directory, profile_configfiles, workdir_of
from helpers import ROOT

START = load_yaml_config(ROOT / "config.yaml")["base_model"]


def make(*args: str) -> subprocess.CompletedProcess:
    """`make ARGS` with the production site settings on the emulated nodes' sizes (checked where sinfo answers)."""
    from helpers import PAPER_ON_CI

    env = {k: v for k, v in os.environ.items() if not k.startswith("BRORL_SLURM_")} | PAPER_ON_CI
    return subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)


def test_model_is_a_folder_relative_to_where_make_runs_or_a_hub_repo_at_a_revision(tmp_path):
    (tmp_path / "ckpts" / "My-Model.v2").mkdir(parents=True)
    local = parse_model("ckpts/My-Model.v2", tmp_path)
    assert local == Checkpoint("my_model_v2", path=str(tmp_path / "ckpts/My-Model.v2"))
    assert parse_model("ckpts/My-Model.v2", tmp_path, name="mine").name == "mine"
    hub = parse_model("nvidia/Nemotron-Research-Reasoning-Qwen-1.5B@abc123", tmp_path)
    assert (hub.repo_id, hub.revision, hub.path) == ("nvidia/Nemotron-Research-Reasoning-Qwen-1.5B", "abc123", None)
    assert hub.name == "nemotron_research_reasoning_qwen_1_5b" and hub.where.endswith("@abc123")
    with pytest.raises(EvaluateError, match="name the revision"):
        parse_model("nvidia/Nemotron-Research-Reasoning-Qwen-1.5B", tmp_path)
    with pytest.raises(EvaluateError, match=r"no folder .*ckpts/missing; for a hub repository name the revision"):
        parse_model("ckpts/missing", tmp_path)
    with pytest.raises(EvaluateError, match=r"no folder .*not a hub repository"):
        parse_model("ckpts/deeper/missing@main", tmp_path)
    assert parse_model("ckpts/My-Model.v2", tmp_path, name="7b").name == "model_7b"  # a wildcard starts with a letter


def test_the_overlay_evaluates_the_checkpoint_alone_and_trains_nothing():
    config = load_yaml_config(ROOT / "config.yaml")
    model = Checkpoint("mine", path="/ckpt/mine")
    out = overlay(config, model, ["aime24", "math500"], base=False)
    assert [m["name"] for m in out["evaluation"]["models"]] == ["mine"] and out["evaluation"]["models"][0]["step"] == 0
    assert out["evaluation"]["steps"] == {"include_start": False} and out["evaluation"]["benchmarks"] == [
        "aime24",
        "math500",
    ]
    assert [a["enabled"] for a in out["arms"]] == [False] * len(config["arms"])
    assert overlay(config, model, [], base=True)["evaluation"]["steps"]["include_start"] is True
    assert "benchmarks" not in overlay(config, model, [], base=True)["evaluation"]  # the paper's 21
    with pytest.raises(EvaluateError, match="aime2024 unknown"):
        overlay(config, model, ["aime2024"], base=False)
    rows = {
        rev: overlay(config, Checkpoint("x", repo_id=START["repo_id"], revision=rev), [], False)["evaluation"]["models"]
        for rev in ("brorl", "v2", START["revision"], "main")
    }
    assert {rev: m[0]["paper_row"] for rev, m in rows.items()} == {
        "brorl": "treatment@191",  # the released weights beside BroRL +191 (compared by gain)
        "v2": "base@0",
        START["revision"]: "base@0",
        "main": None,
    }


def test_snakemake_arguments_keep_their_directory_absolute(tmp_path):
    args = absolute_directory(["-n", "--directory", "runs/a", "--cores", "2"], tmp_path)
    assert args == ["-n", "--directory", str(tmp_path / "runs/a"), "--cores", "2"]
    assert absolute_directory(["--directory=b"], tmp_path) == ["--directory", str(tmp_path / "b")]
    assert workdir_of(args, tmp_path / "x") == tmp_path / "runs/a" and workdir_of(["-n"], tmp_path) == tmp_path
    assert profile_configfiles(ROOT / "profiles/local") == [Path("workflow/presets/tiny.yaml")]


def test_the_architecture_list_is_the_pinned_vllm_registry():
    """vllm_architectures.txt holds exactly the installed vLLM's text-generation models (a bump shows here)."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None:
        pytest.skip("vLLM is not installed here")
    registry = Path(spec.origin).parent / "model_executor" / "models" / "registry.py"
    assert registry_architectures(registry) == set(served_architectures())
    assert {"Qwen2ForCausalLM", "LlamaForCausalLM"} <= served_architectures()


def test_an_architecture_vllm_does_not_serve_is_refused_before_any_job(tmp_path):
    """The CLI refuses it before Snakemake starts; a config naming it fails while the DAG is built."""
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    proc = make("evaluate", f"MODEL={folder}", "PROFILE=local", f"SUBMIT_ARGS=-n --directory {tmp_path / 'run'}")
    assert proc.returncode != 0, proc.stdout
    assert "BertModel is not a text-generation model of vLLM 0.29.0" in proc.stderr, proc.stderr
    assert "running:" not in proc.stdout and not (tmp_path / "run").exists()


@pytest.mark.workflow
def test_a_config_naming_an_unserved_local_checkpoint_fails_while_the_dag_is_built(tmp_path):
    from helpers import output_of, snakemake, write_yaml

    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["T5EncoderModel"]}))
    entry = {"name": "enc", "label": "an encoder", "path": str(folder)}
    extra = write_yaml(tmp_path / "x.yaml", {"evaluation": {"models": [entry]}})
    proc = snakemake("-n", "--directory", tmp_path, "--configfile", ROOT / "workflow/presets/tiny.yaml", extra)
    text = output_of(proc)
    assert proc.returncode != 0 and "evaluation.models 'enc'" in text and "T5EncoderModel is not" in text, text[-2000:]


DRIVER = ROOT / ".venv-slurm" / "bin" / "snakemake"


@pytest.mark.workflow
@pytest.mark.skipif(not DRIVER.exists(), reason="no .venv-slurm (make slurm-env)")
def test_make_evaluate_at_paper_scale_dry_runs_without_training_or_its_preflight(tmp_path):
    """The paper's start checkpoint at its pinned commit as any hub checkpoint: plan first, then the dry run."""
    model = f"{START['repo_id']}@{START['revision']}"
    proc = make("evaluate", f"MODEL={model}", f"SUBMIT_ARGS=-n --directory {tmp_path}")
    out = proc.stdout
    assert proc.returncode == 0, (out + proc.stderr)[-3000:]
    name = "nemotron_research_reasoning_qwen_1_5b"
    overlay_file = tmp_path / "results/evaluate" / f"{name}.yaml"
    assert yaml.safe_load(overlay_file.read_text())["evaluation"]["models"][0]["revision"] == START["revision"]
    plan = re.search(r"^total\s+([\d,]+)\s+([\d,.]+)\s", out, flags=re.M)
    wall = re.search(r"^wall-clock on 8 GPU nodes: ([\d.]+ h)", out, flags=re.M)
    assert plan and wall and out.index("total") < out.index("Job stats:"), out[-3000:]  # the plan comes first
    quoted = f"is {plan[1]} jobs and {plan[2]} GPU-hours by the plan's priors ({wall[1]} on 8 GPU nodes)"
    assert quoted in " ".join((ROOT / "docs/cluster.md").read_text().split()), f"docs/cluster.md should say {quoted!r}"
    stats = out.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, flags=re.M)}
    assert counts["generate_samples"] == 21 and counts["download_eval_model"] == 1, counts
    assert counts["preflight_eval_node"] == 1 and not {"train_ppo", "preflight_train_node"} & set(counts), counts
    assert not {"download_base_model", "extend_context"} & set(counts)  # the start checkpoint is left out
    assert "This was a dry-run" in out and "not submitted" not in out


def test_make_report_names_the_run_it_did_not_find(tmp_path):
    proc = make("report", f"SUBMIT_ARGS=--directory {tmp_path}")
    assert proc.returncode != 0 and f"no finished run under {tmp_path / 'results'}" in proc.stderr, proc.stderr

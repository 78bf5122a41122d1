"""How many jobs each rule of the reproduction runs: a dry run of the workflow in an empty directory (every job, as
on day one) and, for the stages whose jobs the DAG lists only later (training, the evaluation of trained checkpoints,
the probes, throughput), the count the config implies."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from .estimate import CostRow

ROOT = Path(__file__).resolve().parents[4]  # the repository (Snakefile, config.yaml, profiles/)


class DagError(RuntimeError):
    """The dry run failed (its output tail is in the message)."""


def absolute_folders(config: dict, cwd: Path) -> dict:
    """A config overlay giving the local checkpoint folders of `config` (base_model.local_path, evaluation.models[].path)
    as absolute paths from `cwd`, so that the plan's dry run in an empty directory finds them as the run would."""
    overlay: dict = {}
    local = config["base_model"].get("local_path")
    if local and not Path(local).is_absolute():
        overlay["base_model"] = {"local_path": str((cwd / local).resolve())}
    models = config["evaluation"]["models"]
    if any(m.get("path") and not Path(m["path"]).is_absolute() for m in models):
        overlay["evaluation"] = {
            "models": [{**m, "path": str((cwd / m["path"]).resolve())} if m.get("path") else m for m in models]
        }
    return overlay


def dag_job_counts(
    configfiles: list[Path], snakefile: Path = ROOT / "Snakefile", overlay: dict | None = None
) -> dict[str, int]:
    """Jobs per rule of the default target, from a dry run in an empty directory (every job, as on day one);
    `overlay` (absolute_folders) is merged last."""
    with tempfile.TemporaryDirectory(prefix="brorl-plan-") as workdir:
        if overlay:
            extra = Path(workdir) / "absolute_folders.yaml"
            extra.write_text(yaml.safe_dump(overlay, sort_keys=False))
            configfiles = [*configfiles, extra]
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--forceall",
            "--snakefile",
            str(snakefile),
            "--directory",
            workdir,
            "--workflow-profile",
            "none",
            "--cores",
            "1",
        ]
        if configfiles:
            cmd += ["--configfile", *map(str, configfiles)]
        proc = subprocess.run(cmd, cwd=snakefile.parent, capture_output=True, text=True, timeout=600)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Job stats:" not in text:
        if "Nothing to be done" in text:
            return {}
        raise DagError(f"the dry run failed (exit {proc.returncode}):\n{text[-3000:]}")
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.M)}
    counts.pop("total", None)
    return counts


def config_job_counts(config: dict) -> tuple[dict[str, int], dict[str, tuple[int, int, int]]]:
    """Jobs the config implies for stages that grow the DAG later, and (samples/step, steps, segments) per arm."""
    from ...training.recipe import arm_plan, enabled_arms, in_batch_steps
    from .estimate import evaluation_checkpoints

    plans = {name: arm_plan(config, name) for name in enabled_arms(config)}
    points = evaluation_checkpoints(config, plans)
    evaluations = len(points) * len(config["evaluation"]["benchmarks"])
    counts = {
        "train_ppo": sum(len(p.segments) for p in plans.values()),
        "export_checkpoint": sum(len(p.saved_steps) for p in plans.values()),
        "generate_samples": evaluations,
        "score_samples": evaluations,
        "summarize_evaluation": evaluations,
    }
    probe = config.get("probe", {})
    if probe.get("enabled"):  # the start and every saved step of every arm (workflow/rules/helpers/probe.smk)
        probed = 1 + sum(len(p.regular_saves) for p in plans.values())
        counts.update(select_probes=1, generate_probe=probed, score_probe=probed, analyse_probe=1)
        steps = len(in_batch_steps(config)) * len(plans)  # each arm's probed steps, two sides each
        if steps:
            counts.update(in_batch_prompts=steps, generate_in_batch=2 * steps, score_in_batch=2 * steps)
            counts["analyse_in_batch"] = 1
    throughput = config.get("throughput", {})
    if throughput.get("enabled"):
        counts["bench_throughput"] = len(throughput["layouts"]) * len(throughput.get("prefix_caching", [True]))
    arms = {name: (p.samples_per_step, p.continued_steps, len(p.segments)) for name, p in plans.items()}
    return counts, arms


def jobs_per_rule(rows: list[CostRow]) -> dict[str, int]:
    """Jobs per rule of the plan's rows (training's per-arm rows, train_ppo[arm], summed)."""
    jobs: dict[str, int] = {}
    for row in rows:
        rule = row.name.split("[", 1)[0]
        jobs[rule] = jobs.get(rule, 0) + row.jobs
    return jobs

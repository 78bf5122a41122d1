"""The CPU rehearsal of the paper's training path, and the CPU form of the GPU smoke run, through the real train_ppo
rule on the local Slurm: OpenRLHF 0.11.2's own train_ppo_ray on a 2-node Ray cluster started by
workflow/scripts/ray_on_slurm.sh, the device layer of workflow/rehearsal, and the project's segment runner
(brorl.training.openrlhf.run) with fault drills (brorl.training.openrlhf.drills). One Snakemake run with one retry
per job shows:

  - segment 0 (steps 1-2): while step 1 generates, the drill lowers the job's Slurm time limit to a few minutes; the
    runner's own time check (squeue's end time) asks the trainer to save at the end of step 1 (the job hook
    stop_hook), stops the launch there and exits with status 75; the retry resumes from OpenRLHF's full state of
    step 1 (global step, optimizer, data-loader position) and no step is repeated (this replaces the smoke preset's
    kill inside step 2, which resumed the same way from the same save);
  - segment 1 (steps 3-4) starts against the exported step 2 as reference (a reset); the drill kills it inside the
    save of step 3 (held open by the job hook's drill_hook so the kill lands in it), and the retry drops the
    half-written save and resumes from step 2;
  - metrics.jsonl comes from OpenRLHF's tensorboard events, every step once; the exports carry manifests and are
    evaluated by generate_samples, the last one also by the mass-balance probe; the smoke verdict (brorl.ops.smoke) judges the drills and the reset, and marks every
    GPU path "not run (CPU substitution)".

Layout: the rehearsal preset at 2 nodes x 1 GPU (2 actor ranks, 2 vLLM engines): each launch starts Ray, vLLM and
DeepSpeed in about half the time of the preset's 2 x 2 on a 2-core machine, and there are four launches. `make
rehearsal` runs the preset's own 2 x 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from brorl.ops.smoke.verdict import CPU_SUBSTITUTION, GPU_PATHS
from brorl.training.openrlhf.logs import first_micro_batch_kl
from brorl.training.refill import refill_draw
from helpers import BIN as ENGINE_BIN
from helpers import (
    CI_SITE,
    DRIVER,
    DRIVER_SNAKEMAKE,
    ROOT,
    TINY,
    copy_slurm_workflow,
    output_of,
    sacct,
    slurm_up,
    write_yaml,
)

WHY_NOT = slurm_up()
REHEARSAL = ROOT / "workflow" / "presets" / "rehearsal.yaml"
ARM = "rehearsal_n4"
LAYOUT = {"training": {"cluster": {"gpus_per_node": 1, "vllm_engines": 2}}}  # see the module docstring
TARGETS = [
    f"results/train/{ARM}/train.json",
    f"results/eval/{ARM}/step4/synthetic_sums.summary.json",
    f"results/probe/{ARM}/step4.scores.parquet",  # the mass-balance probe on OpenRLHF's export
]
# built on this host first (no Slurm polling between these quick CPU jobs); the same config, so Slurm runs reuse them
START = ["resources/models/tiny-qwen2-ctx992", "resources/train/tiny-mix.jsonl"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WHY_NOT is not None or not DRIVER.exists(), reason=WHY_NOT or f"no {DRIVER} (make slurm-env)"),
]


def _train_jobs(work: Path) -> dict[int, list[str]]:
    """The Slurm job ids of train_ppo per segment of this test's workflow (from the slurm executor's log names)."""
    jobs: dict[int, list[str]] = {}
    for log in (work / "results" / "logs" / "slurm" / "rule_train_ppo").rglob("*.log"):
        segment = int(log.parent.name.rsplit("_", 1)[-1])  # the wildcards folder ends with the segment number
        jobs.setdefault(segment, []).append(log.stem)
    return {segment: sorted(ids, key=int) for segment, ids in jobs.items()}


class Workflow:
    """The test's copy of the workflow, driven through the slurm profile stacked with the CI profile."""

    def __init__(self, tmp_path: Path) -> None:
        self.repo = copy_slurm_workflow(tmp_path / "repo")
        self.work = tmp_path / "work"
        self.run = self.work / "results" / "train" / ARM / "run"
        layout = write_yaml(tmp_path / "layout.yaml", LAYOUT)
        self.configs = ["--directory", str(self.work), "--configfile", str(TINY), str(REHEARSAL), str(layout)]
        # one retry per job (profiles/ci has none): the drills fail each training job once
        self.args = ["--profile", "slurm", "--profile", "profiles/ci", "--retries", "1", *self.configs]
        self.logs = tmp_path

    def prepare(self) -> None:
        """The start model and the train mix, on this host (profiles/local)."""
        proc = subprocess.run(
            [str(ENGINE_BIN / "snakemake"), *START, "--profile", "profiles/local", *self.configs],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, output_of(proc)[-4000:]

    def env(self) -> dict:
        return {
            **os.environ,
            **CI_SITE,
            "BRORL_DATA_ROOT": str(self.logs / "none"),
            "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]]),
        }

    def finish(self, name: str, targets: list[str]) -> str:
        proc = subprocess.run(
            ["timeout", "-k", "15", "2400", *DRIVER_SNAKEMAKE, *targets, *self.args],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
        )
        (self.logs / f"{name}.log").write_text(output_of(proc))
        assert proc.returncode == 0, output_of(proc)[-6000:] + self.train_log_tail()
        return output_of(proc)

    def train_log_tail(self) -> str:
        logs = sorted((self.work / "results" / "logs" / "train_ppo" / ARM).glob("*.log"))
        return "".join(f"\n--- {p}\n" + p.read_text()[-4000:] for p in logs)


@pytest.mark.slurm
def test_rehearsal_of_the_openrlhf_path_survives_kills_and_resets(tmp_path):
    flow = Workflow(tmp_path)
    flow.prepare()
    started = time.time()

    # one run: each segment's first job is stopped (segment 0) or killed (segment 1) by its drill and resumed by its
    # retry; then evaluation
    flow.finish("run", TARGETS)
    elapsed = time.time() - started

    # each segment's first job failed (exit status 75 after the stop; the drill's SIGKILL), its retry completed
    jobs = _train_jobs(flow.work)
    assert sorted(jobs) == [0, 1] and all(len(ids) == 2 for ids in jobs.values()), jobs
    for killed, resumed in jobs.values():
        assert sacct("-X", "-j", killed, "-o", "State")[0][0] == "FAILED", killed
        assert sacct("-X", "-j", resumed, "-o", "State")[0][0] == "COMPLETED", resumed
    fired = json.loads((flow.run / "openrlhf" / "drills.json").read_text())
    by_kind = {d["kind"]: d for d in fired}
    assert len(fired) == 2 and set(by_kind) == {"time_limit_in_step", "kill_in_save"}, fired
    # the limit lowered while step 1 generated (its rewards arriving), by the job itself, on Slurm
    timed = by_kind["time_limit_in_step"]
    assert (timed["segment"], timed["step"]) == (0, 1) and timed["observed"]["trainer_done_global_step"] == 0
    assert timed["observed"]["scontrol"] == 0 and timed["observed"]["time_limit"] >= 3, timed
    # killed inside the save of step 3: its folder written, `latest` still naming step 2
    in_save = by_kind["kill_in_save"]
    assert (in_save["segment"], in_save["step"]) == (1, 3) and in_save["observed"]["latest_global_step"] == 2
    assert in_save["observed"]["saving"]

    out = flow.work / "results" / "train" / ARM
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["segment"]) for r in records] == [(1, 0), (2, 0), (3, 1), (4, 1)]
    # OpenRLHF's own rollout-vs-trainer mismatch metrics (its PolicyLoss, truncated importance sampling on) reach them
    assert all(r["vllm_kl"] is not None and 0.0 <= r["is_filter_ratio"] <= 1.0 for r in records), records
    segments = [json.loads((out / f"segment{i}.json").read_text()) for i in (0, 1)]
    # each segment: one launch stopped early (the time limit near) or killed, one that we stopped after its last step
    # was saved (SIGTERM)
    assert [run["status"] for run in segments[0]["launches"]] == ["stop request", "stopped"], segments[0]["launches"]
    assert [run["status"] for run in segments[1]["launches"]] == ["killed", "stopped"], segments[1]["launches"]
    # the trainer saved step 1 for the stop request (a regular save too here: resume_every 1), and only that
    assert [(e["global_step"], e["stop"]) for e in segments[0]["stops"]] == [(1, True)], segments[0]["stops"]
    assert segments[1]["stops"] == []
    # segment 0's rerun resumed from OpenRLHF's full state of step 1: global step, optimizer, data-loader position
    resumed = (out / "run" / "openrlhf" / "logs" / "segment000-2" / "launcher.log").read_text()
    assert "'global_step': 1" in resumed and "'samples_yielded':" in resumed, resumed[-3000:]
    # segment 1's rerun dropped the half-written save of step 3 and resumed from step 2
    repair = segments[1]["checkpoint_repair"]
    assert repair["resume_step"] == 2 and any(p.endswith("global_step3") for p in repair["removed"]), repair
    # the reset: segment 1 trains against the export of step 2, so step 3 starts AT its reference: the KL of its first
    # micro-batch (before any update) is step 1's (policy = start model = reference: exactly 0 here), while step 2
    # started 1.6e-5 away from its reference (measured). The steps' mean KL cannot show it: it averages the updates
    # too, and at 16 samples per step it varied from 76x below step 2's to 1.7x above it in four runs.
    reference = segments[1]["openrlhf_command"][segments[1]["openrlhf_command"].index("--actor.model_name_or_path") + 1]
    assert reference.endswith(f"results/train/{ARM}/run/exports/step2"), reference
    logs = out / "run" / "openrlhf" / "logs"
    first = {d.name: first_micro_batch_kl((d / "launcher.log").read_text(errors="replace")) for d in logs.iterdir()}
    assert first["segment000-1"][:1] == [0.0] and first["segment000-2"][0] > 0, first  # steps 1 and 2 (resumed)
    assert first["segment001-1"][0] <= first["segment000-1"][0], first  # step 3, against the export of step 2
    # dynamic sampling refilled in rounds by the job hook inside OpenRLHF's trainer: every step records its waves, the
    # first with the step's 4 prompts, each refill of refill_draw's size (all its prompts sent together)
    for r in records:
        waves, kept, drawn = r["waves"], 0, 0
        assert r["refill"] == "rounds" and waves[0]["prompts"] == 4 and all(w["s"] >= 0 for w in waves), r
        for before, wave in zip(waves, waves[1:]):
            kept, drawn = kept + before["kept"], drawn + before["prompts"]
            assert wave["prompts"] == refill_draw(4 - kept, kept, drawn, 4, "rounds") >= 2, waves
        assert sum(w["prompts"] for w in waves) == r["generated_prompts"], r
    assert any(len(r["waves"]) > 1 for r in records), records  # a refill wave went out
    # every step's metrics came from OpenRLHF's events; wall time counts the killed launches and start-ups
    assert all(r["kl"] is not None and r["lr"] and r["gen_s"] for r in records)
    # the step size of each step: reinforce_baseline's advantages (normalised over the batch's tokens by OpenRLHF) have
    # unit RMS as the job hook measured them after OpenRLHF's method, and the last update's gradient norm was logged
    assert all(abs(r["adv_rms"] - 1.0) < 1e-4 and r["grad_norm"] > 0 for r in records), records
    # each step's own prompts, from the reward log's ids (the in-batch probe reads them): every step once, ids of
    # the train mix, N samples each, at least the update's samples (dynamic sampling may have drawn more)
    steps = [json.loads(line) for line in (out / "run" / "step_prompts.jsonl").read_text().splitlines()]
    assert [e["step"] for e in steps] == [1, 2, 3, 4], steps
    mix = {json.loads(line)["id"] for line in (flow.work / START[1]).read_text().splitlines()}
    for entry, record in zip(steps, records):
        assert {p["id"] for p in entry["prompts"]} <= mix and all(p["samples"] % 4 == 0 for p in entry["prompts"]), (
            entry
        )
        assert sum(p["samples"] for p in entry["prompts"]) >= record["samples"], (entry, record)
    # no dynamic batching (nothing partitioned) and no CUDA here: both measurements are null, never 0
    assert all(r["partition_s"] is None and r["gpu_mem_peak_gib"] is None for r in records)
    # each launch recorded its engines' KV-cache size (Ray may fold identical lines of its two engines into one)
    assert all(sizes and min(sizes) > 0 for s in segments for sizes in s["vllm_kv_cache_tokens"].values())
    # every rollout engine started with the config's vllm_scheduler, as it reported back through the job hook
    limits = {"max_num_seqs": 64, "max_num_batched_tokens": 2048}  # workflow/presets/rehearsal.yaml (vLLM's: 128)
    assert all(s["vllm_scheduler"] and all(e == limits for e in s["vllm_scheduler"]) for s in segments), [
        s["vllm_scheduler"] for s in segments
    ]
    assert records[-1]["wall_s"] >= sum(run["end"] - run["start"] for s in segments for run in s["launches"][:1])
    # the exports carry manifests, and evaluation read them
    for step in (1, 2, 3, 4):
        manifest = json.loads((out / f"step{step}" / "brorl_manifest.json").read_text())
        assert manifest["source"] == "trained" and manifest["step"] == step
    summary = json.loads((flow.work / f"results/eval/{ARM}/step4/synthetic_sums.summary.json").read_text())
    assert summary["n_samples"] == 16, summary
    sidecar = json.loads((flow.work / f"results/eval/{ARM}/step4/synthetic_sums.samples.parquet.json").read_text())
    assert f"results/train/{ARM}/step4" in json.dumps(sidecar["model"]), sidecar["model"]
    # the mass-balance probe read the same export, sampled like a rollout: every probe x sample scored
    probe = json.loads((flow.work / f"results/probe/{ARM}/step4.samples.parquet.json").read_text())
    assert f"results/train/{ARM}/step4" in json.dumps(probe["model"]), probe["model"]
    assert probe["sampling"]["temperature"] == 1.0 and probe["sampling"]["max_tokens"] == 32, probe["sampling"]
    scores = pd.read_parquet(flow.work / f"results/probe/{ARM}/step4.scores.parquet")
    assert len(scores) == 25 * 64 and scores.groupby("id").size().eq(64).all(), scores.groupby("id").size()

    report = subprocess.run(
        [str(ENGINE_BIN / "python"), "-m", "brorl.ops.rehearsal_report", "--out-dir", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")},
    )
    # the smoke verdict of this CPU form: the drills and the reset pass, every GPU path is a substitution
    verdict = subprocess.run(
        [
            str(ENGINE_BIN / "python"),
            "-m",
            "brorl.ops.smoke",
            "--configfile",
            *flow.configs[3:],
            "--results",
            str(flow.work / "results"),
            "--out",
            str(tmp_path / "verdict"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")},
    )
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    rows = {r["path"]: r for r in json.loads((tmp_path / "verdict" / "verdict.json").read_text())["rows"]}
    gpu = [r for r in rows.values() if r["path"] in {p.name for p in GPU_PATHS}]
    assert len(gpu) == len(GPU_PATHS) and {r["status"] for r in gpu} == {CPU_SUBSTITUTION}, gpu
    drills = [
        r for name, r in rows.items() if name.startswith(("kill inside a save", "stop before", "reference reset"))
    ]
    assert len(drills) == 3 and {r["status"] for r in drills} == {"pass"}, drills
    assert rows["kill inside a step, resumed"]["status"] == "not run (off in this config)", rows
    # the truncation rule against vLLM's length stops, judged on both devices: the same reward, OpenRLHF and vLLM
    assert all(r["trained_truncated_frac"] is not None for r in records), records
    assert rows["truncation rule = vLLM's length stops (every step)"]["status"] == "pass", rows
    assert rows["dynamic sampling refilled in waves (every step)"]["status"] == "pass", rows
    # the engines' scheduler limits are judged on both devices: the CPU engines report them through the same hook
    assert rows["vLLM scheduler limits of the rollout engines"]["status"] == "pass", rows
    print(f"\nrehearsal with a stop and a kill (after the start model was built): {elapsed:.0f} s\n{report.stdout}")
    print(verdict.stdout)

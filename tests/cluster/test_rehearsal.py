"""The CPU rehearsal of the paper's training path, through the real train_ppo rule on the local Slurm: OpenRLHF
0.11.2's own train_ppo_ray on a 2-node Ray cluster started by workflow/scripts/ray_on_slurm.sh, the device layer of
workflow/rehearsal, and the project's segment runner (brorl.training.openrlhf.run). What it shows:

  - segment 0 (steps 1-2) killed with SIGKILL (every process of the job) in the middle of step 2, then rerun: OpenRLHF
    resumes from its full state of step 1 (global step, optimizer, data-loader position) and no step is repeated;
  - segment 1 (steps 3-4) starts against the exported step 2 as reference (a reset), is killed inside the save of
    step 3 (the save is held open by workflow/rehearsal/faults.py so the kill lands in it), then rerun: the runner
    drops the half-written save and resumes from step 2;
  - metrics.jsonl comes from OpenRLHF's tensorboard events, every step once; the exports carry manifests and are
    evaluated by generate_samples.

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

import pytest
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
TARGETS = [f"results/train/{ARM}/train.json", f"results/eval/{ARM}/step4/synthetic_sums.summary.json"]
# built on this host first (no Slurm polling between these quick CPU jobs); the same config, so Slurm runs reuse them
START = ["resources/models/tiny-qwen2-ctx992", "resources/train/tiny-mix.jsonl"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WHY_NOT is not None or not DRIVER.exists(), reason=WHY_NOT or f"no {DRIVER} (make slurm-env)"),
]


def _train_job(work: Path, segment: int) -> str | None:
    """The running train_ppo job of segment `segment` of this test's workflow, if any."""
    queue = subprocess.run(["squeue", "-h", "-o", "%i|%T|%k|%Z"], capture_output=True, text=True).stdout
    for job_id, state, comment, workdir in (line.split("|") for line in queue.splitlines() if line):
        if state == "RUNNING" and comment == f"rule_train_ppo_wildcards_{ARM}_{segment}" and workdir == str(work):
            return job_id
    return None


def sigkill_job(job_id: str) -> int:
    """SIGKILL every process of Slurm job `job_id` at once, as a node failure or the OOM killer would: the batch
    step, the srun'd Ray nodes, the workers and vLLM engines under them (all carry SLURM_JOB_ID; on the local
    Slurm every emulated node is this host). `scancel --signal=KILL` would not do: Slurm turns it into a cancel,
    SIGTERM first, which the launcher's trap answers with a clean teardown. Returns how many were killed."""
    marks = (f"SLURM_JOB_ID={job_id}\0".encode(), f"SLURM_JOBID={job_id}\0".encode())
    killed = 0
    for _ in range(3):  # children forked meanwhile
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                environ = (proc / "environ").read_bytes()
                if b"\0" + marks[0] in b"\0" + environ or b"\0" + marks[1] in b"\0" + environ:
                    os.kill(int(proc.name), 9)
                    killed += 1
            except (OSError, ProcessLookupError):
                continue
        time.sleep(0.2)
    return killed


def _logged_steps(run: Path) -> set[int]:
    from brorl.training.openrlhf.logs import read_tensorboard

    tb = run / "openrlhf" / "tensorboard"
    return set(read_tensorboard(tb)) if tb.is_dir() else set()


def _reward_lines(run: Path) -> int:
    folder = run / "openrlhf" / "rewards"
    return sum(len(p.read_text().splitlines()) for p in folder.glob("*.jsonl")) if folder.is_dir() else 0


class Workflow:
    """The test's copy of the workflow, driven through the slurm profile stacked with the CI profile."""

    def __init__(self, tmp_path: Path) -> None:
        self.repo = copy_slurm_workflow(tmp_path / "repo")
        self.work = tmp_path / "work"
        self.run = self.work / "results" / "train" / ARM / "run"
        layout = write_yaml(tmp_path / "layout.yaml", LAYOUT)
        self.configs = ["--directory", str(self.work), "--configfile", str(TINY), str(REHEARSAL), str(layout)]
        self.args = ["--profile", "slurm", "--profile", "profiles/ci", *self.configs]
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

    def env(self, extra: dict | None = None) -> dict:
        return {
            **os.environ,
            **CI_SITE,
            "BRORL_DATA_ROOT": str(self.logs / "none"),
            **(extra or {}),
            "PATH": os.pathsep.join([str(ENGINE_BIN), os.environ["PATH"]]),
        }

    def start(self, name: str, targets: list[str], extra: dict | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")
        return subprocess.Popen(
            ["timeout", "-k", "15", "1500", *DRIVER_SNAKEMAKE, *targets, *self.args],
            cwd=self.repo,
            env=self.env(extra),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def finish(self, name: str, targets: list[str]) -> str:
        proc = subprocess.run(
            ["timeout", "-k", "15", "1500", *DRIVER_SNAKEMAKE, *targets, *self.args],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
        )
        (self.logs / f"{name}.log").write_text(output_of(proc))
        assert proc.returncode == 0, output_of(proc)[-6000:] + self.train_log_tail()
        return output_of(proc)

    def kill_when(self, driver: subprocess.Popen, segment: int, ready, what: str, deadline_s: float = 1200) -> str:
        """SIGKILL the running train_ppo job of `segment` once ready() holds while it runs, wait for the driver to
        see the job fail, and unlock the workflow. Returns the killed job id."""
        started = time.time()
        while time.time() - started < deadline_s:
            assert driver.poll() is None, f"the driver ended before {what}:\n" + self.train_log_tail()
            job = _train_job(self.work, segment)
            if job and ready():
                assert sigkill_job(job) > 0, f"no process of job {job} found"
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"never reached {what}\n" + self.train_log_tail())
        try:
            driver.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(driver.pid, 9)
            driver.wait()
        unlock = subprocess.run(
            [*DRIVER_SNAKEMAKE, "--unlock", *self.args],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
        )
        assert unlock.returncode == 0, output_of(unlock)[-3000:]
        return job

    def train_log_tail(self) -> str:
        logs = sorted((self.work / "results" / "logs" / "train_ppo" / ARM).glob("*.log"))
        return "".join(f"\n--- {p}\n" + p.read_text()[-4000:] for p in logs)


@pytest.mark.slurm
def test_rehearsal_of_the_openrlhf_path_survives_kills_and_resets(tmp_path):
    flow = Workflow(tmp_path)
    flow.prepare()
    started = time.time()

    # 1. segment 0, killed while step 2 is being generated (step 1 logged and saved, the reward log moving again)
    driver = flow.start("run1", [f"results/train/{ARM}/segment0.json"])
    marks = {}

    def in_step_2() -> bool:
        if 1 not in _logged_steps(flow.run):
            return False
        marks.setdefault("after_step_1", _reward_lines(flow.run))
        return _reward_lines(flow.run) > marks["after_step_1"] and 2 not in _logged_steps(flow.run)

    killed_step = flow.kill_when(driver, 0, in_step_2, "step 2 of segment 0")
    assert sacct("-X", "-j", killed_step, "-o", "State")[0][0] == "FAILED", killed_step
    assert 2 not in _logged_steps(flow.run) and not (flow.work / f"results/train/{ARM}/segment0.json").exists()

    # 2. the rerun finishes segment 0 and runs segment 1 up to the save of step 3, which is held open and killed
    ckpt = flow.run / "openrlhf" / "ckpt0" / "_actor"
    driver = flow.start("run2", [f"results/train/{ARM}/segment1.json"], {"BRORL_REHEARSAL_SAVE_DELAY": "3:20"})
    # (segment 0's job may run into step 3 before it is stopped; what it saved of it is removed at its end)
    flow.kill_when(driver, 1, lambda: (ckpt / "global_step3").is_dir(), "the save of step 3 in segment 1")
    assert (ckpt / "latest").read_text().strip() == "global_step2", "the kill did not land inside the save"
    assert (flow.work / f"results/train/{ARM}/segment0.json").is_file()

    # 3. the rerun completes the arm and evaluates its exported steps
    flow.finish("run3", TARGETS)
    elapsed = time.time() - started

    out = flow.work / "results" / "train" / ARM
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["segment"]) for r in records] == [(1, 0), (2, 0), (3, 1), (4, 1)]
    segments = [json.loads((out / f"segment{i}.json").read_text()) for i in (0, 1)]
    # each segment: one killed launch, one that we stopped after its last step was saved (SIGTERM)
    for seg in segments:
        assert [run["status"] for run in seg["launches"]] == ["killed", "stopped"], seg["launches"]
    # segment 0's rerun resumed from OpenRLHF's full state of step 1: global step, optimizer, data-loader position
    resumed = (out / "run" / "openrlhf" / "logs" / "segment000-2" / "launcher.log").read_text()
    assert "'global_step': 1" in resumed and "'samples_yielded':" in resumed, resumed[-3000:]
    # segment 1's rerun dropped the half-written save of step 3 and resumed from step 2
    repair = segments[1]["checkpoint_repair"]
    assert repair["resume_step"] == 2 and any(p.endswith("global_step3") for p in repair["removed"]), repair
    # the reset: segment 1 trains against the export of step 2, so its KL starts again from (near) zero: step 3's
    # KL is that of one update away from the reference, like step 1's, not the accumulated distance of step 2
    reference = segments[1]["openrlhf_command"][segments[1]["openrlhf_command"].index("--actor.model_name_or_path") + 1]
    assert reference.endswith(f"results/train/{ARM}/run/exports/step2"), reference
    kl = {r["step"]: r["kl"] for r in records}
    assert kl[3] < kl[2] / 2, kl  # measured: 6x and 76x below in two runs
    # every step's metrics came from OpenRLHF's events; wall time counts the killed launches and start-ups
    assert all(r["kl"] is not None and r["lr"] and r["gen_s"] for r in records)
    # no dynamic batching (nothing partitioned) and no CUDA here: both measurements are null, never 0
    assert all(r["partition_s"] is None and r["gpu_mem_peak_gib"] is None for r in records)
    # each launch recorded its engines' KV-cache size (Ray may fold identical lines of its two engines into one)
    assert all(sizes and min(sizes) > 0 for s in segments for sizes in s["vllm_kv_cache_tokens"].values())
    assert records[-1]["wall_s"] >= sum(run["end"] - run["start"] for s in segments for run in s["launches"][:1])
    # the exports carry manifests, and evaluation read them
    for step in (1, 2, 3, 4):
        manifest = json.loads((out / f"step{step}" / "brorl_manifest.json").read_text())
        assert manifest["source"] == "trained" and manifest["step"] == step
    summary = json.loads((flow.work / f"results/eval/{ARM}/step4/synthetic_sums.summary.json").read_text())
    assert summary["n_samples"] == 16, summary
    sidecar = json.loads((flow.work / f"results/eval/{ARM}/step4/synthetic_sums.samples.parquet.json").read_text())
    assert f"results/train/{ARM}/step4" in json.dumps(sidecar["model"]), sidecar["model"]

    report = subprocess.run(
        [str(ENGINE_BIN / "python"), "-m", "brorl.training", "report", "--out-dir", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")},
    )
    print(f"\nrehearsal with two kills (after the start model was built): {elapsed:.0f} s\n{report.stdout}")

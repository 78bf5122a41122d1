"""The GPU smoke preset (workflow/presets/gpu_smoke.yaml) and its parts that run on any machine: its OpenRLHF command
lines equal the paper's except an explicit allow-list, the fault drills' decisions and kill, the save hold, and the
verdict's rows. Its CPU form runs end to end in tests/cluster/test_rehearsal.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from brorl.config import load_yaml_config
from brorl.ops.smoke import verdict as v
from brorl.ops.smoke.gate import smoke_gate_problem
from brorl.training.openrlhf import drill_hook, drills
from brorl.training.openrlhf.command import ClusterPaths, openrlhf_flags
from brorl.training.openrlhf.logs import first_micro_batch_kl
from brorl.training.openrlhf.parse import parse_argv
from brorl.training.openrlhf.validate import validate_cluster_config
from brorl.training.recipe import arm_plan
from brorl.training.stop import StopRequests
from helpers import CONFIG, ROOT

SMOKE = ROOT / "workflow" / "presets" / "gpu_smoke.yaml"
PATHS = ClusterPaths(Path("/m/start"), Path("/d/mix.jsonl"), Path("/r/train/arm"), Path("/w/openrlhf_reward.py"))
# the flags the smoke run may set differently from the paper's run, and why
ALLOWED = {
    "actor.num_nodes": "nodes",
    "ref.num_nodes": "nodes",
    "vllm.num_engines": "one engine per GPU of fewer nodes",
    "rollout.n_samples_per_prompt": "N",
    "rollout.batch_size": "prompts per step",
    "train.batch_size": "samples per optimizer step follow prompts x N (same mini-batch count)",
    "actor.adam.lr": "the sqrt rule of samples per step follows prompts x N",
    "data.max_len": "token budget",
    "rollout.max_new_tokens": "token budget",
    "ckpt.save_steps": "steps (every step saved)",
    "actor.model_name_or_path": "the reference reset falls at step 2 instead of 1/3 of the paper's arm",
    "logger.wandb.run_name": "the arm's name",
}


def _flags(argv: list[str]) -> dict[str, tuple[str, ...]]:
    """--flag -> its values (a switch: ())."""
    out, key = {}, None
    for token in argv:
        if token.startswith("--"):
            key = token[2:]
            out[key] = ()
        else:
            out[key] = (*out[key], token)
    return out


@pytest.fixture(scope="module")
def configs() -> tuple[dict, dict]:
    return load_yaml_config(CONFIG), load_yaml_config(CONFIG, SMOKE)


@pytest.mark.parametrize(("smoke_arm", "paper_arm"), [("smoke_n16", "prorl_n16"), ("smoke_n512", "brorl_n512")])
def test_smoke_commands_equal_the_papers_except_the_allow_list(configs, smoke_arm, paper_arm):
    paper, smoke = configs
    validate_cluster_config(smoke)
    paper_plan, smoke_plan = arm_plan(paper, paper_arm), arm_plan(smoke, smoke_arm)
    assert smoke_plan.n == paper_plan.n and len(smoke_plan.segments) == 2
    for segment in (0, 1):
        smoke_argv = openrlhf_flags(smoke, smoke_plan, segment, PATHS)
        parse_argv(smoke_argv)  # OpenRLHF's own parser accepts it
        ours, theirs = _flags(smoke_argv), _flags(openrlhf_flags(paper, paper_plan, segment, PATHS))
        assert set(ours) == set(theirs), set(ours) ^ set(theirs)
        differing = {k for k in ours if ours[k] != theirs[k]}
        assert differing <= set(ALLOWED), differing - set(ALLOWED)
        assert "rollout.n_samples_per_prompt" not in differing  # the paper's N in both arms
        for path in v.GPU_PATHS:  # every GPU path of the paper's run is on in the smoke's
            assert all(f[2:] in ours for f in path.flags) and not any(f[2:] in ours for f in path.absent), path


def test_smoke_shapes_are_the_papers_per_engine(configs):
    """1,024 sequences per engine at N = 512 and 128 at N = 16: the per-GPU shares of the paper's 64-GPU steps."""
    paper, smoke = configs
    engines = smoke["training"]["cluster"]["vllm_engines"]
    paper_engines = paper["training"]["cluster"]["vllm_engines"]
    for smoke_arm, paper_arm in (("smoke_n16", "prorl_n16"), ("smoke_n512", "brorl_n512")):
        ours, theirs = arm_plan(smoke, smoke_arm), arm_plan(paper, paper_arm)
        assert ours.samples_per_step // engines == theirs.samples_per_step // paper_engines
    assert smoke["evaluation"]["max_tokens"] == paper["evaluation"]["max_tokens"] == v.FULL_BUDGET


# ------------------------------------------------------------------------------------------------------- drills
def test_drills_fire_once_in_their_segment():
    config = {"kill_in_step": 2, "kill_in_save": 3, "save_hold_s": 5}
    assert drills.pending_drills(config, range(1, 3), 0, []) == [drills.Drill("kill_in_step", 2, 2)]
    assert drills.pending_drills(config, range(3, 4), 0, []) == [drills.Drill("kill_in_save", 3, 3)]
    fired = [{"kind": "kill_in_save", "step": 3}]
    assert drills.pending_drills(config, range(3, 4), 0, fired) == []
    # a run restarted at a reset without its optimizer counts global steps from the reset
    assert drills.pending_drills(config, range(3, 4), 2, []) == [drills.Drill("kill_in_save", 3, 1)]
    assert drills.pending_drills({"kill_in_step": None, "kill_in_save": None}, range(1, 9), 0, []) == []


def test_drill_due_only_inside_its_step_or_save():
    step, save = drills.Drill("kill_in_step", 2, 2), drills.Drill("kill_in_save", 3, 3)
    assert not drills.due(step, latest=0, reward_grew_since_latest=True, saving=False)  # still in step 1
    assert not drills.due(step, latest=1, reward_grew_since_latest=False, saving=False)  # step 1's export
    assert drills.due(step, latest=1, reward_grew_since_latest=True, saving=False)  # step 2 generating
    assert not drills.due(step, latest=2, reward_grew_since_latest=True, saving=False)  # too late
    assert not drills.due(save, latest=2, reward_grew_since_latest=True, saving=False)  # step 3 generating
    assert drills.due(save, latest=2, reward_grew_since_latest=True, saving=True)  # step 3's state being written
    assert not drills.due(save, latest=3, reward_grew_since_latest=False, saving=True)  # written


def test_drill_problems_name_the_key():
    assert drills.drill_problems({"kill_in_step": 2, "kill_in_save": None}, 3, 1) == []
    problems = drills.drill_problems({"kill_in_step": 1, "kill_in_save": 9}, 3, 5)
    assert any("kill_in_save = 9" in p for p in problems) and any("kill_in_step must be >= 2" in p for p in problems)
    assert any("resume_every: 1" in p for p in problems)
    # the time-limit drill needs no save every step, but a step that another step of its segment follows
    assert drills.drill_problems({"time_limit_in_step": 1}, 4, 5, {2, 4}) == []
    assert "ends a segment" in drills.drill_problems({"time_limit_in_step": 2}, 4, 5, {2, 4})[0]


def test_the_time_limit_drill_fires_while_its_step_generates_and_only_lowers_the_limit(tmp_path, monkeypatch):
    drill = drills.Drill("time_limit_in_step", 1, 1)
    assert drills.due(drill, latest=0, reward_grew_since_latest=True, saving=False)  # step 1 generating
    assert not drills.due(drill, latest=0, reward_grew_since_latest=False, saving=False)  # still starting up
    assert not drills.due(drill, latest=1, reward_grew_since_latest=True, saving=False)  # step 2: too late
    # whole minutes (Slurm rounds seconds up): at least the target left, less than a minute more
    assert drills.limit_minutes(elapsed_s=130, target_left_s=150) == 5  # 280 s -> 300 s: 170 s left
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_JOBID", raising=False)
    monkeypatch.setattr(drills, "kill_launch", lambda *a: pytest.fail("the time-limit drill kills nothing"))
    record = tmp_path / "drills.json"
    stop = StopRequests(end_time=lambda: None)
    watch = drills.DrillWatch([drill], tmp_path, record, 0, "segment000-1", "L", 2, stop)
    watch.check(0, None, 0)  # started, no reward yet
    assert not record.exists()
    watch.check(40, None, 0)  # step 1's rewards arrive
    watch.check(80, None, 0)  # fires once
    [fired] = json.loads(record.read_text())
    assert fired["kind"] == "time_limit_in_step" and fired["observed"]["time_limit"] is None, fired
    assert "not in a Slurm job" in fired["observed"]["why"] and fired["observed"]["trainer_done_global_step"] == 0


def test_kill_marked_kills_only_the_launchs_processes():
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    marked = subprocess.Popen(sleeper, env={**os.environ, drills.LAUNCH_ENV: "launch-a"})
    other = subprocess.Popen(sleeper, env={**os.environ, drills.LAUNCH_ENV: "launch-b"})
    try:
        assert drills.kill_marked("launch-a") >= 1
        assert marked.wait(timeout=10) == -9
        assert other.poll() is None
    finally:
        for proc in (marked, other):
            proc.kill()
            proc.wait()


def test_drill_hook_holds_only_the_drills_step(monkeypatch, tmp_path):
    slept, saved = [], []
    torch = types.SimpleNamespace(save=lambda obj, f, *a, **k: saved.append(str(f)))
    monkeypatch.setenv(drills.HOLD_ENV, "3:7.5")
    monkeypatch.setattr(drill_hook.time, "sleep", slept.append)
    drill_hook.install_from_env(torch)
    torch.save({}, tmp_path / "_actor" / "global_step2" / "a.pt")
    torch.save({}, tmp_path / "_actor" / "global_step3" / "a.pt")
    assert slept == [7.5] and len(saved) == 2


def test_drill_watch_records_before_it_kills(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(drills, "kill_launch", lambda launch_id, nodes: calls.append(("kill", launch_id, nodes)))
    monkeypatch.setattr(drills.os, "kill", lambda pid, sig: calls.append(("self", pid, sig)))
    record = tmp_path / "drills.json"
    watch = drills.DrillWatch([drills.Drill("kill_in_step", 2, 2)], tmp_path, record, 0, "segment000-1", "L", 2)
    watch.check(100, 1)  # step 1 saved; no new rewards yet
    assert calls == []
    watch.check(150, 1)  # step 2's rewards arrive
    assert [c[0] for c in calls] == ["kill", "self"] and calls[0][1:] == ("L", 2)
    fired = json.loads(record.read_text())
    assert fired[0]["kind"] == "kill_in_step" and fired[0]["observed"]["latest_global_step"] == 1


@pytest.mark.workflow
def test_the_smoke_trains_brorls_shape_first_and_everything_else_waits_for_it(tmp_path):
    """training.cluster.first_arm: a throughput layout, an evaluation and the other arm's training each need
    smoke_n512's finished training (its two segments); smoke_n512's own training needs nothing of the others."""
    from helpers import job_counts, snakemake

    def jobs(target: str) -> dict[str, int]:
        proc = snakemake("-n", "--forceall", "--configfile", SMOKE, "--directory", tmp_path, target)
        return job_counts(proc)

    first = "results/train/smoke_n512/train.json"
    for target in (
        "results/throughput/p8_n16_pcon.json",
        "results/eval/smoke_n16/step3/aime24.samples.parquet",
        "results/train/smoke_n16/segment0.json",
    ):
        counts = jobs(target)
        assert counts.get("train_ppo") and counts.get("finish_training") == 1, (target, counts)
    assert "bench_throughput" not in jobs(first) and jobs(first)["train_ppo"] == 2


# ------------------------------------------------------------------------------------------------------ verdict
def _arm(device: str, complete: bool = True, argv: list[str] | None = None) -> dict:
    command = argv or [
        "--vllm.enable_sleep",
        "--ds.enable_sleep",
        "--train.colocate_all",
        "--ds.packing_samples",
        "--train.dynamic_batch_enable",
        "--ds.zero_stage",
        "2",
        "--ds.param_dtype",
        "bf16",
    ]
    if device == "cpu":
        command = [*command[1:], "--vllm.sync_backend", "gloo"]
    return {
        "name": "a",
        "complete": complete,
        "commands": [command],
        "records": [
            {"step": 1, "gen_s": 10.0, "partition_s": 0.5, "trained_truncated_frac": 0.75, "trained_zeroed_frac": 0.75},
            {"step": 2, "gen_s": 9.0, "partition_s": 0.4, "trained_truncated_frac": 0.5, "trained_zeroed_frac": 0.5},
        ],
        "segments": [{"weight_syncs": 2, "vllm_scheduler": [LIMITS, LIMITS]}],
        "peak_gib": [50.0, 51.5],  # the trainer's own allocation
        "device_gib": [63.0, 64.5],  # the GPU's memory in use: the reference model, vLLM, contexts too
    }


LIMITS = {"max_num_seqs": 1024, "max_num_batched_tokens": 16384}
TRUNCATION = "truncation rule = vLLM's length stops (every step)"


def test_cpu_verdict_marks_every_gpu_path_substituted():
    rows = v.gpu_rows([_arm("cpu")], "cpu", "logs")
    assert [r.status for r in rows] == [v.CPU_SUBSTITUTION] * (len(v.GPU_PATHS) + 1) + [v.NOT_CONFIGURED]
    assert v.verdict(rows, "cpu")["passed"]  # substitutions are not failures, and never a pass either
    assert all(r.status != v.PASS for r in rows)


def _evidence_removed(change) -> dict[str, str]:
    """Status per row of a completed GPU run whose folder lacks one piece of evidence (change edits the arm)."""
    arm = _arm("gpu")
    change(arm)
    rows = [*v.gpu_rows([arm], "gpu", "logs", LIMITS), v.truncation_row([arm], "zero")]
    return {r.path: r.status for r in rows}


@pytest.mark.parametrize(
    "row, change",
    [
        ("weight sync to vLLM by CUDA IPC / NCCL", lambda arm: arm["segments"][0].pop("weight_syncs")),
        ("dynamic batching and the step's partition", lambda arm: arm["records"][0].update(partition_s=None)),
        ("peak GPU memory per rank below 74 GiB", lambda arm: arm.update(device_gib=None)),  # the trainer's alone
        ("peak GPU memory per rank below 74 GiB", lambda arm: arm.update(device_gib=[63.0, 76.2])),
        ("vLLM scheduler limits of the rollout engines", lambda arm: arm["segments"][0].update(vllm_scheduler=[])),
        (
            "vLLM scheduler limits of the rollout engines",
            lambda arm: arm["segments"][0]["vllm_scheduler"].append({**LIMITS, "max_num_seqs": 128}),
        ),
        (TRUNCATION, lambda arm: arm["records"][1].update(trained_zeroed_frac=None)),
        # a response that stopped on a token the reward does not strip: zeroed, though vLLM stopped it properly
        (TRUNCATION, lambda arm: arm["records"][1].update(trained_zeroed_frac=0.5 + 1 / 8192)),
    ],
)
def test_a_gpu_row_passes_only_on_what_the_run_recorded(row, change):
    """A hand-made run folder missing one row's evidence fails exactly that row; with all of it, every row passes."""
    assert set(_evidence_removed(lambda arm: None).values()) == {v.PASS}
    statuses = _evidence_removed(change)
    assert statuses[row] == v.FAIL and {s for p, s in statuses.items() if p != row} == {v.PASS}, statuses


def test_the_truncation_row_is_judged_on_both_devices_when_the_rule_is_on():
    """The CPU rehearsal runs the same reward, OpenRLHF and vLLM: the row is observed there too, never substituted;
    float32 rounding (well below 1e-6) passes; with the rule off there is nothing to compare."""
    arm = _arm("cpu")
    arm["records"][0]["trained_zeroed_frac"] += 3e-8
    assert v.truncation_row([arm], "zero").status == v.PASS
    assert v.truncation_row([], "zero").status == v.FAIL
    assert v.truncation_row([arm], "verifier").status == v.NOT_CONFIGURED


def test_gpu_verdict_passes_fails_and_points_at_the_preflight():
    assert {r.status for r in v.gpu_rows([_arm("gpu")], "gpu", "logs", LIMITS)} == {v.PASS}
    rows = v.gpu_rows([_arm("gpu", complete=False)], "gpu", "/r/logs")[: len(v.GPU_PATHS)]
    assert {r.status for r in rows} == {v.NOT_REACHED} and "brorl.ops.preflight" in rows[0].fix
    sync = next(r for r in rows if r.path.startswith("weight sync"))
    assert "check 'CUDA-IPC weight sync'" in sync.fix  # the IPC probe, not the NCCL all-reduce
    argv = _arm("gpu")["commands"][0][1:]  # no sleep mode
    rows = v.gpu_rows([_arm("gpu", argv=argv)], "gpu", "logs")
    assert rows[0].status == v.FAIL and "--vllm.enable_sleep missing" in rows[0].detail
    assert not v.verdict(rows, "gpu")["passed"]
    assert "| vLLM sleep mode" in v.table(rows) and "64.5 max of 2 ranks" in v.table(rows)


def test_drill_rows_need_the_kill_and_the_resume():
    fired = {"kind": "kill_in_save", "step": 3, "global_step": 3, "fired_at": 100.0, "observed": {"saving": True}}
    segment = {
        "drills": [fired],
        "launches": [{"status": "killed", "start": 0}, {"status": "stopped", "start": 130.0}],
        "checkpoint_repair": {"removed": ["/x/_actor/global_step3"]},
        "layout": {"reference_step": 2},
    }
    # the first micro-batch KL of each step, per segment and launch (as the rehearsal measured: 0 in step 1, 1.6e-5 at
    # the start of step 2, 0 at the start of step 3 against the export of step 2), and a step mean that went UP
    first_kl = {0: [[0.0], [1.62e-5]], 1: [[0.0], [0.0, 2.0e-5]]}
    arm = {"name": "a", "segments": [{"layout": {"reference_step": None}}, segment], "kl": {2: 3.9e-5, 3: 6.6e-5}}
    arm["first_kl"] = first_kl
    rows = v.drill_rows([arm], {"kill_in_step": None, "kill_in_save": 3}, "logs")
    by = {r.path.split(" (")[0]: r for r in rows}
    assert by["kill inside a step, resumed"].status == v.NOT_CONFIGURED
    assert by["kill inside a save, resumed"].status == v.PASS and by["kill inside a save, resumed"].seconds == 30.0
    assert by["reference reset"].status == v.PASS, by["reference reset"].detail
    # no reset: step 3 would start as far from the (start-model) reference as step 2 did, or farther
    assert v.reset_row("r", 3, 1, {**first_kl, 1: [[2.4e-5]]}, {}).status == v.FAIL
    assert v.reset_row("r", 3, 1, {**first_kl, 0: [[0.0], [0.0]]}, {}).fix.startswith("the policy had not moved")
    assert v.reset_row("r", 3, 1, {0: [[0.0]]}, {}).status == v.FAIL  # no training bar after the reset
    segment["checkpoint_repair"]["removed"] = []  # resumed without dropping the half-written save: not proven
    assert v.drill_rows([arm], {"kill_in_save": 3}, "logs")[1].status == v.FAIL


def test_the_time_limit_row_needs_the_stop_save_and_the_resume():
    fired = {"kind": "time_limit_in_step", "step": 1, "global_step": 1, "fired_at": 100.0}
    fired["observed"] = {"time_limit": 4, "scontrol": 0}
    saved = {"t": 124.0, "global_step": 1, "stop": True, "forced": False}
    segment = {"drills": [fired], "launches": [{"status": "stop request"}, {"status": "stopped"}], "stops": [saved]}
    arm = {"name": "a", "segments": [segment]}
    [row] = v.time_limit_rows([arm], 1, "logs")
    assert row.status == v.PASS and row.seconds == 24.0 and "limit lowered to 4 min" in row.detail, row
    segment["stops"] = []  # stopped, but not after a save the trainer made for the request
    assert v.time_limit_rows([arm], 1, "logs")[0].status == v.FAIL
    segment["stops"], segment["launches"] = [saved], [{"status": "killed"}, {"status": "stopped"}]  # the limit hit
    assert v.time_limit_rows([arm], 1, "logs")[0].status == v.FAIL
    fired["observed"] = {"time_limit": None, "why": "not in a Slurm job: no time limit to bring near"}
    assert v.time_limit_rows([arm], 1, "logs")[0].status == v.NO_SLURM  # not a failure: nothing to observe
    assert v.time_limit_rows([{"name": "a", "segments": [{}]}], 1, "logs")[0].status == v.NOT_REACHED
    assert v.time_limit_rows([arm], None, "logs")[0].status == v.NOT_CONFIGURED


def test_the_first_micro_batch_kl_of_each_step_from_the_launcher_log():
    """OpenRLHF's Train epoch bar as Ray forwards it (rank 0): a start line, then one postfix per micro-batch, the
    first window's lines all at 0/8 (the accumulation window is read before its first micro-batch trains)."""
    bar = "(PolicyModelActor pid=1) Train epoch [1/1]: {pct}%|   | {n}/8 [00:0{t}<?, ?it/s{post}]"
    post = ", act_loss=-0.5, reward=0.5, kl={kl}, act_lr=7e-05, grad_norm=0"
    lines = [
        bar.format(pct=0, n=0, t=0, post="") + "/x/dataloader.py:759: UserWarning: 'pin_memory'",
        bar.format(pct=0, n=0, t=4, post=post.format(kl="1.62e-5")),
        bar.format(pct=0, n=0, t=5, post=post.format(kl="1.01e-5")) + bar.format(pct=50, n=4, t=6, post=""),
        bar.format(pct=50, n=4, t=6, post=post.format(kl="0.00036")),
        "(LLMRayActor pid=2) INFO generating",
        bar.format(pct=0, n=0, t=0, post=""),
        bar.format(pct=0, n=0, t=3, post=post.format(kl="0")),
    ]
    assert first_micro_batch_kl("\n".join(lines)) == [1.62e-5, 0.0]
    # as the launch prints it (TQDM_NCOLS=0: no bar drawn, the status never cut to the job's COLUMNS)
    plain = [line.replace("%|   | ", "% ") for line in lines]
    assert first_micro_batch_kl("\n".join(plain)) == [1.62e-5, 0.0]
    assert first_micro_batch_kl("no training yet") == []


def test_evaluation_and_throughput_rows():
    assert v.evaluation_rows(32768, ["a", "b"], ["a", "b"], "gpu")[0].status == v.PASS
    assert v.evaluation_rows(32768, ["a", "b"], ["a"], "gpu")[0].status == v.NOT_REACHED
    assert v.evaluation_rows(32, ["a"], ["a"], "cpu")[0].status == v.CPU_SUBSTITUTION
    assert v.evaluation_rows(32768, [], [], "gpu")[0].status == v.NOT_CONFIGURED  # the one-step 16K preset
    assert v.throughput_rows(False, [], [])[0].status == v.NOT_CONFIGURED
    assert v.throughput_rows(True, ["x", "y"], ["x", "y"])[0].status == v.PASS


def test_smoke_verdict_says_not_started_before_training_and_not_reached_after_it_started(tmp_path):
    """A dry run or a stop at the pin gate leaves no training: "not started", and no failed verdict for later dry
    runs to warn about; once a launch is recorded, what did not happen is "not reached"."""

    def verdict() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "brorl.ops.smoke", "--configfile", str(SMOKE), "--results", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")},
        )

    out = verdict()
    assert out.returncode == 1 and out.stdout.startswith("not started: no training job of smoke_n16, smoke_n512")
    assert not (tmp_path / "smoke").exists()
    launches = tmp_path / "train" / "smoke_n512" / "run" / "openrlhf" / "launches.json"
    launches.parent.mkdir(parents=True)
    launches.write_text("[]")
    out = verdict()
    assert out.returncode == 1, out.stderr
    result = json.loads((tmp_path / "smoke" / "verdict.json").read_text())
    assert not result["passed"] and result["device"] == "gpu"
    assert "not reached" in out.stdout


def test_the_smoke_gate_opens_only_on_a_passed_gpu_verdict(configs, tmp_path):
    paper, smoke = configs
    verdict = tmp_path / "verdict.json"
    assert "no GPU smoke verdict" in smoke_gate_problem(paper, verdict)
    assert smoke_gate_problem(smoke, verdict) == ""  # the smoke run itself writes it
    verdict.write_text(json.dumps({"device": "cpu", "passed": True, "failed": []}))
    assert "CPU rehearsal's verdict" in smoke_gate_problem(paper, verdict)
    verdict.write_text(json.dumps({"device": "gpu", "passed": False, "failed": ["ZeRO-2 in bf16"]}))
    assert "did not pass (ZeRO-2 in bf16" in smoke_gate_problem(paper, verdict)
    verdict.write_text(json.dumps({"device": "gpu", "passed": True, "failed": []}))
    assert smoke_gate_problem(paper, verdict) == ""
    cpu = {**paper, "training": {**paper["training"], "cluster": {**paper["training"]["cluster"], "device": "cpu"}}}
    assert smoke_gate_problem(cpu, tmp_path / "none.json") == ""  # the rehearsal is not gated


def test_the_refill_row_passes_only_on_recorded_waves_that_refilled_together():
    """The rehearsal runs the same hook: the row is observed on both devices, never substituted."""
    ds = {"enabled": True, "refill": "rounds"}
    arm = _arm("cpu")
    for record in arm["records"]:
        record |= {
            "refill": "rounds",
            "waves": [{"prompts": 4, "kept": 2, "s": 1.0}, {"prompts": 5, "kept": 2, "s": 0.5}],
        }
    assert v.refill_row([arm], ds).status == v.PASS
    assert v.refill_row([arm], ds | {"refill": "serial"}).status == v.FAIL  # recorded in another mode
    assert v.refill_row([arm], ds | {"enabled": False}).status == v.NOT_CONFIGURED
    for record in arm["records"]:
        record["waves"][1]["prompts"] = 1
    assert "every refill sent one prompt" in v.refill_row([arm], ds).detail
    for record in arm["records"]:
        record["waves"] = record["waves"][:1]
    assert v.refill_row([arm], ds).status == v.NOT_REACHED
    arm["records"][0]["waves"] = None  # the hook did not run at this step
    assert v.refill_row([arm], ds).status == v.FAIL

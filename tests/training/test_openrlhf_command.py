"""The cluster engine's OpenRLHF 0.11.2 command: every arm through OpenRLHF's real parser and assertions, our
validation ahead of them, segments and reference resets, the data and metrics converters, and the Ray launcher
(with fake srun/ray/scontrol on PATH)."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from brorl.config import load_yaml_config, validate_config
from brorl.training.openrlhf.command import ClusterPaths, build_command, openrlhf_flags, run_layout
from brorl.training.openrlhf.dataset import TrainDataError, openrlhf_rows
from brorl.training.openrlhf.logs import (
    Launch,
    RewardCall,
    StepLog,
    engine_stats,
    read_tensorboard,
    steps_from_events,
    to_records,
)
from brorl.training.openrlhf.parse import OpenRLHFArgError, parse_argv
from brorl.training.openrlhf.validate import ClusterConfigError, validate_cluster_config
from brorl.training.recipe import arm_plan

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "workflow" / "scripts" / "ray_on_slurm.sh"
PATHS = ClusterPaths(Path("/m/start"), Path("/d/mix.jsonl"), Path("/r/train/arm"), Path("/w/openrlhf_reward.py"))


@pytest.fixture(scope="module")
def config() -> dict:
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    validate_config(cfg)
    return cfg


PRORL_V1 = ROOT / "workflow" / "presets" / "recipe_prorl_v1.yaml"


def _arms(cfg: dict) -> list[str]:
    return [a["name"] for a in cfg["arms"]]


@pytest.mark.parametrize("preset", [None, PRORL_V1], ids=["prorlv2_recipes", "recipe_prorl_v1"])
def test_every_arm_and_segment_parses_in_openrlhf(preset):
    from helpers import EXTENSIONS

    config = load_yaml_config(ROOT / "config.yaml", *EXTENSIONS, *([preset] if preset else []))
    validate_config(config)
    train = config["training"]
    assert len(_arms(config)) == 19  # the two paper arms and the extension presets' 17
    validate_cluster_config(config, _arms(config))
    for arm in _arms(config):
        plan = arm_plan(config, arm)
        for index, segment in enumerate(plan.segments):
            args, _ = parse_argv(openrlhf_flags(config, plan, index, PATHS))
            assert args.rollout.n_samples_per_prompt == plan.n
            assert args.rollout.batch_size == plan.prompts_per_step
            assert args.train.batch_size == plan.mini_batch_samples
            assert args.actor.adam.lr == plan.lr
            own = next(a for a in config["arms"] if a["name"] == arm)["advantage_estimator"]
            assert args.algo.advantage.estimator == plan.advantage_estimator == (own or train["advantage_estimator"])
            assert args.actor.lr_scheduler == "constant"
            assert args.algo.dynamic_filtering_enable and list(args.algo.dynamic_filtering_range) == [0.0, 1.0]
            assert tuple(args.actor.eps_clip_low_high) == (train["clip_eps_low"], train["clip_eps_high"])
            assert args.algo.kl.use_loss and args.algo.kl.estimator == "k2" and args.algo.kl.init_coef == 1e-4
            assert args.rollout.temperature == train["rollout_temperature"] and args.rollout.top_p == 1.0
            assert args.algo.advantage.is_correction_mode == "clip"
            cap = train["truncated_importance_sampling"]["threshold"]
            assert args.algo.advantage.is_correction_threshold == [0.0, cap]  # TIS: clip to [0, C], one-sided
            # truncated responses are zeroed once, by the shared reward (brorl.training.reward), never again here
            assert args.reward.stop_properly_penalty_coef is None
            assert args.data.max_len == 1024 + 16384 and args.rollout.max_new_tokens == 16384
            assert args.ckpt.load_enable and args.ckpt.save_hf and args.vllm.enable_prefix_caching
            assert args.reward.remote_url == [str(PATHS.reward_script)]
            # every step the segment must save (saved steps, its last step) falls on a save
            for step in (s for s in plan.saved_steps if s in segment.steps):
                assert step % args.ckpt.save_steps == 0
            assert segment.last_step % args.ckpt.save_steps == 0


def test_every_arm_parses_with_wandb_on_and_no_argv_holds_the_key(config, monkeypatch):
    from brorl.training.openrlhf.command import WANDB_KEY_MARKER
    from brorl.training.tracking import KEY_ENV, Tracking

    secret = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setenv(KEY_ENV, secret)  # the job's environment: it must stay there
    tracking = Tracking.from_config({"wandb": {"enabled": True, "entity": "lab", "group": "paper-{arm}"}})
    for arm in _arms(config):
        plan = arm_plan(config, arm)
        for index in range(len(plan.segments)):
            flags = openrlhf_flags(config, plan, index, PATHS, tracking)
            args, _ = parse_argv(flags)
            wandb = args.logger.wandb
            assert (wandb.key, wandb.project, wandb.org) == (WANDB_KEY_MARKER, "brorl", "lab")
            assert wandb.group == f"paper-{arm}" and wandb.run_name == f"{arm}-segment{index}"
            assert secret not in " ".join(flags)
    off = openrlhf_flags(config, arm_plan(config, "prorl_n16"), 0, PATHS)  # default: W&B off in OpenRLHF
    assert parse_argv(off)[0].logger.wandb.key is None and "--logger.wandb.group" not in off


def test_build_command_is_the_module_invocation(config):
    argv = build_command(config, arm_plan(config, "prorl_n16"), 0, PATHS, python="python3")
    assert argv[:3] == ["python3", "-m", "openrlhf.cli.train_ppo_ray"]


def test_paper_arms_lr_ratio_and_equal_mini_batches(config):
    pro, _ = parse_argv(openrlhf_flags(config, arm_plan(config, "prorl_n16"), 0, PATHS))
    bro, _ = parse_argv(openrlhf_flags(config, arm_plan(config, "brorl_n512"), 0, PATHS))
    assert bro.actor.adam.lr / pro.actor.adam.lr == pytest.approx(math.sqrt(8), rel=1e-12)
    steps = [a.rollout.batch_size * a.rollout.n_samples_per_prompt // a.train.batch_size for a in (pro, bro)]
    assert steps[0] == steps[1] == config["training"]["mini_batches_per_step"]


def _broken(config, edit) -> dict:
    cfg = copy.deepcopy(config)
    edit(cfg)
    return cfg


def _set(path: str, value):
    def edit(cfg):
        node = cfg
        *parents, last = path.split(".")
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value

    return edit


@pytest.mark.parametrize(
    "edit, key, openrlhf_fails",
    [
        (_set("arms.0.n", 1), "arms[0] (prorl_n16).n", True),  # reinforce_baseline asserts N > 1
        (_set("training.dynamic_sampling.score_range", [1.0, 0.0]), "training.dynamic_sampling.score_range", True),
        (_set("training.cluster.rollout_micro_batch_size", 8192), "arms[0] (prorl_n16).prompts_per_step", True),
        (_set("training.cluster.vllm_engines", 32), "training.cluster.vllm_engines", False),  # asserted in train()
        (_set("training.mini_batches_per_step", 256), "training.mini_batches_per_step", False),  # DeepSpeed
        (_set("training.precision", "fp32"), "training.precision", True),  # --ds.param_dtype choices
        (_set("training.lr_scheduler", "cosine"), "training.lr_scheduler", False),
    ],
)
def test_validation_rejects_first_with_the_key(config, edit, key, openrlhf_fails):
    cfg = _broken(config, edit)
    cfg["training"]["cluster"]["dynamic_batch"] = False  # so that the rollout micro-batch counts (no effect else)
    with pytest.raises(ClusterConfigError) as error:
        validate_cluster_config(cfg, ["prorl_n16"])
    assert f"config key '{key}'" in str(error.value)
    if openrlhf_fails:  # our check mirrors a real OpenRLHF refusal (not just our own policy)
        with pytest.raises(OpenRLHFArgError):
            parse_argv(openrlhf_flags(cfg, arm_plan(cfg, "prorl_n16"), 0, PATHS))


def test_parser_errors_are_clear():
    with pytest.raises(OpenRLHFArgError, match="unrecognized arguments: --algo.advantage.is_correction_enable"):
        parse_argv(["--algo.advantage.is_correction_enable"])  # the 0.11.1 name, renamed in 0.11.2
    with pytest.raises(OpenRLHFArgError, match="flags only"):
        parse_argv(["-m", "openrlhf.cli.train_ppo_ray"][1:])


def test_reset_segments_point_the_reference_at_the_previous_export(config):
    plan = arm_plan(config, "prorl_n16")
    resets = [s for s in plan.segments if s.reset_reference]
    assert resets and resets[0].first_step == 181  # after 1/3 of ProRL's 535 steps, rounded to 5
    for segment in plan.segments:
        args, _ = parse_argv(openrlhf_flags(config, plan, segment.index, PATHS))
        earlier = [s for s in resets if s.first_step <= segment.first_step]
        expected = PATHS.start_model if not earlier else PATHS.export(earlier[-1].first_step - 1)
        assert args.actor.model_name_or_path == str(expected)
        assert args.ckpt.path == str(PATHS.ckpt_dir(0))  # ProRLv2: one run, the optimizer state is kept
    # ProRL v1 semantics: a reset starts a fresh OpenRLHF run (new ckpt dir, steps counted from 0, new seed)
    cfg = _broken(config, _set("training.reference_reset.keep_optimizer", False))
    layout = run_layout(cfg, plan, resets[0].index)
    assert (layout.run_index, layout.offset, layout.reference_step) == (1, 180, 180)
    assert layout.seed == plan.seed + 1
    args, _ = parse_argv(openrlhf_flags(cfg, arm_plan(cfg, "prorl_n16"), resets[0].index, PATHS))
    assert args.ckpt.path == str(PATHS.ckpt_dir(1))


def test_data_converter_keeps_the_record_as_label():
    records = [
        {
            "id": "a",
            "benchmark": "b",
            "family": "math",
            "prompt": "1+1?",
            "answer": "2",
            "scorer": "math",
            "metadata": {},
        },
        {
            "id": "b",
            "benchmark": "b",
            "family": "math",
            "prompt": "x" * 50,
            "answer": "3",
            "scorer": "math",
            "metadata": {},
        },
    ]
    rows, too_long = openrlhf_rows(records, prompt_tokens=len, prompt_max_len=10)
    assert too_long == ["b"] and len(rows) == 1
    assert rows[0]["input"] == "1+1?" and json.loads(rows[0]["label"]) == records[0]
    with pytest.raises(TrainDataError, match="<image>"):
        openrlhf_rows([{**records[0], "prompt": "look at <image>"}])


def _step(step, t, **over):
    scalars = {
        "rollout/num_samples": 8192.0,
        "dynamic_filtering_pass_rate": 16 * 41.0,
        "rollout/reward_mean": 0.5,
        "kl": 0.01,
        "vllm_kl": 2.5e-4,
        "is_filter_ratio": 1e-3,
        "entropy_loss": 0.3,
        "actor_lr": 2e-6,
        "timing/generation": 100.0,
        "timing/make_experience": 10.0,
        "timing/ppo_train": 20.0,
        "timing/broadcast": 1.0,
        "timing/step_total": 131.0,
    }
    scalars.update(over)
    return [(t, step, k, v) for k, v in scalars.items()]


def _calls(t, rewards, scores, errors=None):
    return RewardCall(t, rewards, scores, errors or [None] * len(rewards))


def test_metrics_converter_on_a_hand_made_log(tmp_path, capsys):
    waves = [{"prompts": 512, "kept": 210, "s": 60.0}, {"prompts": 737, "kept": 305, "s": 40.0}]
    # step 2 logged twice: by a job killed afterwards (t=200) and again by the rerun (t=400): the rerun wins
    cut = {"rollout/truncated_rate": 0.625, "truncated_zeroed": 0.6250001}  # both over the trained samples
    events = _step(1, 100.0) + _step(2, 200.0, kl=9.0) + _step(2, 400.0, **cut) + _step(3, 560.0)
    logs = steps_from_events(events)
    assert logs[2].scalars["kl"] == 0.01 and logs[2].wall_time == 400.0
    calls = [_calls(150.0, [1.0], [1.0]), _calls(350.0, [0.25] * 8191 + [0.0], [0.0] * 8192)]  # 150: the killed job's
    launches = [Launch(8, 0.0, 300.0, "killed"), Launch(9, 300.0, 600.0, "stopped")]
    records = to_records(
        [logs[2], logs[3]],
        offset=200,
        segment=9,
        n=16,
        dynamic_sampling=True,
        wall_s_before=250.0,
        launches=launches,
        reward_calls=calls,
        # the job hook's partition log: the killed launch's call (t=150) is not the rerun step's
        partition_calls=[(150.0, 9.0), (350.0, 0.5), (351.0, 2.0), (450.0, 0.25)],
        gpu_memory=[(395.0, 61.5), (396.0, 63.25), (550.0, 60.0)],  # two ranks in step 2, one logged in step 3
        # the refill hook's waves: the killed launch's (t=150) are not the rerun step's; step 3 fell short
        refills=[
            {"t": 150.0, "refill": "rounds", "waves": [{"prompts": 512, "kept": 1, "s": 9.0}], "short": None},
            {"t": 380.0, "refill": "rounds", "waves": waves, "short": None, "kept": 512, "target": 512},
            {
                "t": 500.0,
                "refill": "rounds",
                "waves": waves[:1],
                "short": "max_rounds 1 reached",
                "kept": 210,
                "target": 512,
            },
        ],
    )
    first = records[0]
    assert (first["refill"], first["waves"], records[1]["waves"]) == ("rounds", waves, waves[:1])
    assert (
        "warning: step 203: dynamic sampling kept 210 of 512 prompts: max_rounds 1 reached" in capsys.readouterr().out
    )
    assert (first["vllm_kl"], first["is_filter_ratio"]) == (2.5e-4, 1e-3)  # OpenRLHF's own mismatch metrics
    assert first["vllm_preemptions"] is None  # no engine stats line given
    assert (first["partition_s"], records[1]["partition_s"]) == (2.5, 0.25)
    assert (first["gpu_mem_peak_gib"], records[1]["gpu_mem_peak_gib"]) == (63.25, 60.0)
    assert first["step"] == 202 and first["segment"] == 9
    assert first["prompts"] == 512 and first["samples"] == 8192
    assert first["generated_prompts"] == round(512 / 0.41) and first["generated_samples"] == 16 * round(512 / 0.41)
    assert first["dynamic_sampling_pass_rate"] == pytest.approx(0.41, abs=1e-3)
    assert first["gen_samples_per_s"] == pytest.approx(first["generated_samples"] / 100.0)
    assert first["reward_mean"] is None  # 8,192 logged rewards but 20,000 generated samples: incomplete, not guessed
    assert first["reward_errors"] is None and first["reward_timeouts"] is None  # the same incomplete window
    assert first["response_len_mean"] is None and first["truncated_frac"] is None  # OpenRLHF logs accepted only
    # ... over which OpenRLHF's length stops and the reward's zeroed share are both logged (the verdict's truncation row)
    assert (first["trained_truncated_frac"], first["trained_zeroed_frac"]) == (0.625, 0.6250001)
    assert records[1]["trained_truncated_frac"] is None  # not logged: null, never guessed
    # wall time: the killed launch counts whole (300 s), then 100 s into the rerun; the rest is start-up/saves
    assert (first["wall_s"], records[1]["wall_s"]) == (400.0, 560.0)
    assert (first["overhead_s"], records[1]["overhead_s"]) == (400.0 - 250.0 - 131.0, 560.0 - 400.0 - 131.0)
    assert (first["logprob_s"], first["update_s"], first["reload_s"], first["reward_s"]) == (10.0, 20.0, 1.0, None)
    # a complete reward log gives the mean over every generated sample, and its verifier failures
    generated = first["generated_samples"]
    errors = ["timeout after 5 s", "no answer"] + [None] * (generated - 2)
    calls = [_calls(350.0, [1.0] * (generated // 2) + [0.0] * (generated - generated // 2), [1.0] * generated, errors)]
    record = to_records(
        [logs[2]],
        offset=0,
        segment=0,
        n=16,
        dynamic_sampling=True,
        wall_s_before=0.0,
        launches=[Launch(0, 300.0, 900.0, "stopped")],
        reward_calls=calls,
    )[0]
    assert record["reward_mean"] == pytest.approx((generated // 2) / generated) and record["score_mean"] == 1.0
    assert (record["reward_errors"], record["reward_timeouts"]) == (2, 1)
    # without dynamic sampling OpenRLHF's rollout stats cover every generated sample
    record = to_records(
        [logs[1]],
        offset=0,
        segment=0,
        n=16,
        dynamic_sampling=False,
        wall_s_before=0.0,
        launches=[Launch(0, 0.0, 900.0, "stopped")],
        reward_calls=None,
    )[0]
    assert record["generated_samples"] == 8192 and record["reward_mean"] == 0.5 and record["wall_s"] == 100.0
    assert record["partition_s"] is None  # nothing partitioned (no dynamic batching, or no job hook)
    assert record["gpu_mem_peak_gib"] is None  # no CUDA: null, never 0


def test_metrics_read_from_real_tensorboard_events(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path / "segment000"))  # what OpenRLHF's TensorboardLogger does
    for _, step, key, value in _step(1, 0.0):
        writer.add_scalar(f"train/{key}", value, step)
    writer.add_text("train/generated_samples", "Sample: ...", 1)
    writer.close()
    logs = read_tensorboard(tmp_path)
    assert list(logs) == [1] and logs[1].scalars["timing/step_total"] == 131.0
    assert isinstance(logs[1], StepLog)


def test_tensorboard_runs_are_merged_and_a_redone_step_keeps_its_latest_values(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    killed = SummaryWriter(log_dir=str(tmp_path / "segment000"))  # killed after logging step 2
    for step, t in ((1, 100.0), (2, 200.0)):
        killed.add_scalar("train/kl", 9.0, step, walltime=t)
        killed.add_scalar("train/score", 0.25, step, walltime=t, new_style=True)  # a tensor, as tf.summary writes
    killed.add_scalar("eval/accuracy", 0.5, 1, walltime=100.0)  # not train/: not ours
    killed.close()
    rerun = SummaryWriter(log_dir=str(tmp_path / "segment000" / "again"))  # a nested run folder is read too
    for step, t in ((2, 400.0), (3, 500.0)):
        rerun.add_scalar("train/kl", 0.01, step, walltime=t)
    rerun.add_text("train/generated_samples", "Sample: ...", 2)
    rerun.close()
    logs = read_tensorboard(tmp_path)
    assert {s: log.scalars for s, log in logs.items()} == {
        1: {"kl": 9.0, "score": 0.25},
        2: {"kl": pytest.approx(0.01), "score": 0.25},  # the rerun's kl; the killed job's score (not relogged)
        3: {"kl": pytest.approx(0.01)},
    }
    assert [log.wall_time for log in logs.values()] == [100.0, 400.0, 500.0]


def test_every_tensorboard_event_is_read_beyond_the_default_sample_size(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path))  # TensorBoard's reader keeps 10,000 scalars per tag by default
    for step in range(1, 10_051):
        writer.add_scalar("train/kl", float(step), step, walltime=float(step))
    writer.close()
    logs = read_tensorboard(tmp_path)
    assert list(logs) == list(range(1, 10_051)) and all(log.scalars["kl"] == s for s, log in logs.items())


# ------------------------------------------------------------------ the launcher, with fake Slurm and Ray
FAKES = {
    "srun": """#!/usr/bin/env bash
out=/dev/stdout
echo "$*" >> "$FAKE_DIR/srun.args"
while [[ $1 == -* ]]; do case $1 in --output=*) out=${1#--output=};; -w) shift;; esac; shift; done
echo "$$" >> "$FAKE_DIR/srun.pids"
exec "$@" >"$out" 2>&1
""",
    "ray": """#!/usr/bin/env bash
[[ -n ${FAKE_RAY_FAIL:-} && " $* " != *" --head "* ]] && { echo "raylet: boom"; exit 1; }
setsid sleep 300 </dev/null >/dev/null 2>&1 &  # a daemonised worker that `ray stop` does not reap
echo "$!" >> "$FAKE_DIR/orphans"
echo "fake ray $*"; echo "Ray runtime started."
trap 'echo stopped; exit 1' TERM
while :; do sleep 0.1; done
""",
    "scontrol": """#!/usr/bin/env bash
if [[ $1 == show && $2 == hostnames ]]; then for n in $FAKE_NODES; do echo $n; done
elif [[ $1 == show && $2 == job ]]; then echo "JobId=$3 NumNodes=3 CPUs/Task=${FAKE_CPUS_PER_TASK:-12}"
elif [[ -n ${FAKE_OWN_ADDRS:-} ]]; then echo "NodeName=$3 NodeAddr=$3.invalid CPUTot=16"
else echo "NodeName=$3 NodeAddr=127.0.0.1 CPUTot=16"; fi
""",
    "squeue": "#!/usr/bin/env bash\necho 'gpu[01-03]'\n",
    # `ip -4 -o addr show dev IFACE`: one address per fake host (the srun fake runs every step on this host)
    "ip": """#!/usr/bin/env bash
[[ $* == *"dev ib0"* ]] && echo "3: ib0    inet 10.9.0.${FAKE_IB_HOST:-1}/16 brd 10.9.255.255 scope global ib0"
exit 0
""",
    "sinfo": '#!/usr/bin/env bash\nfor n in $FAKE_NODES; do echo "$n 127.0.0.1"; done\n',
    "scancel": "#!/usr/bin/env bash\nexit 0\n",
}


@pytest.fixture()
def fake_slurm(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in FAKES.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_DIR": str(tmp_path),
        "FAKE_NODES": "gpu01 gpu02 gpu03",
        "SLURM_JOB_ID": "4242",
        "RAY_SLURM_SIGTERM_ONCE": "0",
        "RAY_STOP_TIMEOUT": "5",
        "RAY_START_TIMEOUT": "20",
    }
    env.pop("SLURM_JOB_NODELIST", None)
    yield tmp_path, env
    for line in [
        w for f in ("srun.pids", "orphans") if (tmp_path / f).exists() for w in (tmp_path / f).read_text().split()
    ]:
        try:
            os.kill(int(line), signal.SIGKILL)  # only if the launcher left one behind (the test then fails)
        except ProcessLookupError:
            pass


def _alive(tmp_path, name: str = "srun.pids") -> list[int]:
    pids = [int(p) for p in (tmp_path / name).read_text().split()]
    alive = []
    for pid in pids:
        try:  # a killed process whose parent has not reaped it yet is a zombie: dead
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.append(pid)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return alive


def _run(args, env, timeout=60):
    return subprocess.run([str(LAUNCHER), *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_launcher_argument_checks(fake_slurm):
    tmp_path, env = fake_slurm
    assert _run(["--", "true"], env).returncode == 2  # no --logs
    assert _run(["--logs", str(tmp_path / "l")], env).returncode == 2  # no driver
    result = _run(["--logs", str(tmp_path / "l"), "--bogus"], env)
    assert result.returncode == 2 and "unknown argument" in result.stderr
    no_job = {k: v for k, v in env.items() if k != "SLURM_JOB_ID"}
    result = _run(["--logs", str(tmp_path / "l"), "--", "true"], no_job)
    assert result.returncode == 2 and "not inside a Slurm job" in result.stderr
    result = _run(["--logs", str(tmp_path / "l"), "--nodes", "8", "--", "true"], env)
    assert result.returncode == 2 and "expected 8 nodes" in result.stdout + result.stderr


def test_launcher_runs_the_driver_and_tears_down(fake_slurm):
    tmp_path, env = fake_slurm
    logs = tmp_path / "logs"
    result = _run(["--logs", str(logs), "--nodes", "3", "--", "bash", "-c", 'echo "addr=$RAY_ADDRESS"; exit 7'], env)
    assert result.returncode == 7, result.stdout + result.stderr  # the driver's status
    assert "addr=127.0.0.2:" in result.stdout  # emulated cluster: head on its own loopback IP
    head = (logs / "ray-0-gpu01.log").read_text()
    worker = (logs / "ray-2-gpu03.log").read_text()
    assert "--head" in head and "--temp-dir=/tmp/ray_4242_0" in head
    assert "--address=127.0.0.2:" in worker and "--node-ip-address=127.0.0.4" in worker and "stopped" in worker
    assert "driver exited with status 7" in (logs / "launcher.log").read_text()
    assert _alive(tmp_path) == []
    assert _alive(tmp_path, "orphans") == []  # swept: the launch's marker is in their environment


def test_launcher_reports_a_node_that_fails_to_start(fake_slurm):
    tmp_path, env = fake_slurm
    result = _run(["--logs", str(tmp_path / "logs"), "--", "true"], {**env, "FAKE_RAY_FAIL": "1"})
    assert result.returncode == 3 and "raylet: boom" in result.stdout + result.stderr
    time.sleep(0.5)
    assert _alive(tmp_path) == []


def test_launcher_cancelled_mid_run_stops_everything(fake_slurm):
    tmp_path, env = fake_slurm
    process = subprocess.Popen(
        [str(LAUNCHER), "--logs", str(tmp_path / "logs"), "--", "sleep", "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 30
    while (
        "node(s) up" not in (tmp_path / "logs" / "launcher.log").read_text()
        if (tmp_path / "logs" / "launcher.log").exists()
        else True
    ):
        assert time.time() < deadline, "the fake cluster did not come up"
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)  # what scancel / a time limit does to the batch step
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 128 + 15 and "tearing down" in output
    assert _alive(tmp_path) == []


def test_launcher_decides_emulation_from_the_jobs_own_nodes(fake_slurm):
    """B3: `sinfo -N` lists a node once per partition, so cluster-wide duplicates say nothing; nodes of this job
    with their own addresses are real hosts: no loopback addresses, no private temp dirs."""
    tmp_path, env = fake_slurm
    logs = tmp_path / "logs"
    result = _run(["--logs", str(logs), "--", "true"], {**env, "FAKE_OWN_ADDRS": "1"})  # sinfo still lists duplicates
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(emulated=0," in (logs / "launcher.log").read_text()
    head = (logs / "ray-0-gpu01.log").read_text()
    assert "--temp-dir" not in head and "--port=6379" in head
    assert "--address=gpu01:6379" in (logs / "ray-1-gpu02.log").read_text()


def test_launcher_gives_each_node_step_its_cpus_and_ray_explicit_counts(fake_slurm):
    """R4: the jobstep plugin strips SLURM_CPUS_PER_TASK, so each srun step asks for the job's CPUs per task and no
    binding, and Ray is told its CPUs and GPUs instead of autodetecting the whole machine."""
    tmp_path, env = fake_slurm
    logs = tmp_path / "logs"
    result = _run(["--logs", str(logs), "--", "true"], {**env, "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert result.returncode == 0, result.stdout + result.stderr
    steps = (tmp_path / "srun.args").read_text().splitlines()
    assert len(steps) == 3 and all("--cpus-per-task=12 --cpu-bind=none" in line for line in steps), steps
    head = (logs / "ray-0-gpu01.log").read_text()
    assert "--num-cpus=12" in head and "--num-gpus=4" in head
    assert "12 CPUs and 4 GPUs per node" in (logs / "launcher.log").read_text()


def test_launcher_single_host_runs_without_slurm(fake_slurm):
    """--single-host: the same launcher with N emulated Ray nodes as plain processes (no srun, no job)."""
    tmp_path, env = fake_slurm
    env = {k: v for k, v in env.items() if k != "SLURM_JOB_ID"}
    logs = tmp_path / "logs"
    result = _run(
        ["--logs", str(logs), "--nodes", "2", "--single-host", "--", "bash", "-c", 'echo "addr=$RAY_ADDRESS"'],
        {**env, "RAY_NUM_CPUS": "8", "RAY_NUM_GPUS": "2"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "addr=127.0.0.2:" in result.stdout and not (tmp_path / "srun.args").exists()
    assert "--num-cpus=8" in (logs / "ray-0-local0.log").read_text()
    worker = (logs / "ray-1-local1.log").read_text()
    assert "--node-ip-address=127.0.0.3" in worker and "--num-gpus=2" in worker and "stopped" in worker
    assert _alive(tmp_path, "orphans") == []


def test_emulated_launches_on_one_host_take_port_blocks_no_other_launch_holds(fake_slurm):
    """Concurrent emulated launches share the loopback addresses: each holds a port block's lock for its lifetime,
    so a block another launch holds is skipped (two jobs whose ids agree modulo the blocks once collided), and a
    host with every block held stops with a message instead of a Ray head that cannot bind."""
    import fcntl

    tmp_path, env = fake_slurm
    env = {k: v for k, v in env.items() if k != "SLURM_JOB_ID"}
    locks = tmp_path / "locks"
    locks.mkdir()
    held = []
    for k in range(10):  # what other launches would hold: every block but 7
        if k != 7:
            f = (locks / f"ray_ports_{k}.lock").open("w")
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(f)
    args = [
        "--logs",
        str(tmp_path / "logs"),
        "--nodes",
        "2",
        "--single-host",
        "--",
        "bash",
        "-c",
        'echo "addr=$RAY_ADDRESS"',
    ]
    result = _run(args, {**env, "RAY_PORT_LOCK_DIR": str(locks)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"addr=127.0.0.2:{20000 + 7 * 1250}" in result.stdout
    # every block's ports (head, dashboard, 100 per node) stay below the kernel's ephemeral range, from which any
    # outgoing connection may take a port, and above the local Slurm's slurmd ports (17001-17009)
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    slurmd = int(re.search(r'ports="\[(\d+)-', (ROOT / "workflow/scripts/local_slurm.sh").read_text())[1])
    assert not 20000 <= slurmd < 20000 + 10 * 1250 and slurmd + 16 < 20000 and 20000 + 10 * 1250 <= low
    with (locks / "ray_ports_7.lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again: the launch released it when it ended
        result = _run(args, {**env, "RAY_PORT_LOCK_DIR": str(locks)})  # every block held now
    assert result.returncode == 2 and "no free Ray port block" in result.stdout + result.stderr
    for f in held:
        f.close()


def test_launcher_binds_ray_on_the_chosen_interface(fake_slurm):
    """F9: RAY_SLURM_IFACE=ib0 binds every Ray node on that interface's address (read on the node itself) and points
    the workers at the head's, instead of the Slurm NodeAddr; an interface without an address stops the launch."""
    tmp_path, env = fake_slurm
    logs = tmp_path / "logs"
    real = {**env, "FAKE_OWN_ADDRS": "1", "RAY_SLURM_EMULATED": "0", "RAY_SLURM_IFACE": "ib0"}
    result = _run(["--logs", str(logs), "--", "bash", "-c", 'echo "addr=$RAY_ADDRESS"'], real)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "addr=10.9.0.1:6379" in result.stdout
    worker = (logs / "ray-1-gpu02.log").read_text()
    assert "--address=10.9.0.1:6379" in worker and "--node-ip-address=10.9.0.1" in worker
    assert ".invalid" not in worker  # the NodeAddr is not used
    result = _run(["--logs", str(tmp_path / "l2"), "--", "true"], {**real, "RAY_SLURM_IFACE": "eth9"})
    assert result.returncode == 2 and "no IPv4 address on eth9" in result.stdout + result.stderr


def test_kv_cache_sizes_are_read_from_the_engines_start_up_lines():
    from brorl.training.openrlhf.logs import kv_cache_tokens

    log = (
        "(EngineCore pid=6100) INFO [kv_cache_utils.py:1087] GPU KV cache size: 1,546,112 tokens\n"
        "(RolloutRayActor pid=7, ip=10.0.0.2) INFO Maximum concurrency for 17,408 tokens per request: 88.81x\n"
        "(EngineCore pid=6366) INFO KV cache size: 1,015,808 tokens, Maximum concurrency for 992 tokens per request\n"
    )
    assert kv_cache_tokens(log) == [1_546_112, 1_015_808]
    assert kv_cache_tokens("no engine started") == []


@pytest.fixture(scope="module")
def experience_maker():
    """OpenRLHF's Experience and RemoteExperienceMaker, imported with the import-only flash_attn of the job where
    the real package is absent (CPU); the stub leaves sys.modules again, so later find_spec calls see no flash_attn."""
    import importlib.util
    import sys

    from brorl.training.openrlhf.launch import STUBS

    stub = importlib.util.find_spec("flash_attn") is None
    if stub:
        sys.path.insert(0, str(STUBS))
    try:
        from openrlhf.trainer.ppo_utils.experience import Experience
        from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    finally:
        if stub:
            sys.path.remove(str(STUBS))
            for name in [m for m in sys.modules if m == "flash_attn" or m.startswith("flash_attn.")]:
                del sys.modules[name]
    return Experience, RemoteExperienceMaker


@pytest.mark.parametrize("batch_norm", ["native", "every_estimator"])
@pytest.mark.parametrize("estimator", ["reinforce_baseline", "group_norm", "rloo", "dr_grpo"])
def test_embedded_advantages_equal_openrlhfs_own_for_every_shared_estimator(
    config, experience_maker, estimator, batch_norm, tmp_path
):
    """The engine contract: OpenRLHF 0.11.2's RemoteExperienceMaker.compute_advantages_and_returns, with the args
    our command gives an arm of this estimator, on experiences of random rewards and lengths (one sample each, in
    shuffled order as its micro-batches hold them), against brorl.training.embedded.advantages on the same inputs;
    with training.advantage_batch_norm every_estimator, OpenRLHF's method runs under the job hook's wrapper
    (advantage_hook), which also logs the RMS advantage both engines record."""
    import numpy as np
    import torch
    from brorl.training.embedded.advantages import advantages, token_rms
    from brorl.training.openrlhf import advantage_hook
    from brorl.training.openrlhf.logs import read_hook_log

    Experience, RemoteExperienceMaker = experience_maker

    cfg = copy.deepcopy(config)
    arm = next(a for a in cfg["arms"] if a["name"] == "prorl_n16")
    arm["advantage_estimator"] = estimator
    plan = arm_plan(cfg, "prorl_n16")
    assert plan.advantage_estimator == estimator
    args, _ = parse_argv(openrlhf_flags(cfg, plan, 0, PATHS))
    assert args.algo.advantage.estimator == estimator
    args.rollout.n_samples_per_prompt = n = 4  # a small batch: 3 groups of 4 (the formulas do not depend on N)
    rng = np.random.default_rng(7)
    rewards = rng.random((3, n)).round(2)
    rewards[1] = 0.5  # a group without signal (its std is 0)
    lengths = rng.integers(1, 9, (3, n))
    width = int(lengths.max())
    experiences = []
    for i in rng.permutation(3 * n):
        mask = torch.zeros(1, width, dtype=torch.bool)
        mask[0, : lengths.flat[i]] = True
        experiences.append(
            Experience(
                action_mask=mask,
                kl=torch.zeros(1, width),
                rewards=torch.tensor([rewards.flat[i]], dtype=torch.float32),
                truncated=torch.tensor([False]),
                index=[int(i)],
            )
        )
    maker = RemoteExperienceMaker(None, None, None, None, SimpleNamespace(value=0.0), SimpleNamespace(args=args), None)
    module = SimpleNamespace(RemoteExperienceMaker=type("Maker", (RemoteExperienceMaker,), {}))  # wrapped apart
    advantage_hook.install(module, batch_norm, str(tmp_path))
    maker.__class__ = module.RemoteExperienceMaker
    out = maker.compute_advantages_and_returns(experiences)
    theirs = np.zeros((3, n))
    for e in out:
        values = e.advantages[0][e.action_mask[0]]
        assert torch.allclose(values, values[0].expand_as(values))  # every token carries the sample's advantage
        theirs.flat[e.index[0]] = values[0].item()
    ours = advantages(estimator, rewards, lengths, cfg["training"]["advantage_std_norm"], batch_norm)
    assert np.abs(ours - theirs).max() <= 1e-6
    [(_, rms)] = read_hook_log(tmp_path, "adv_rms")
    assert abs(rms - token_rms(ours, lengths)) <= 1e-6
    if batch_norm == "every_estimator" or estimator == "reinforce_baseline":
        assert abs(rms - 1.0) <= 1e-6  # normalised over the batch's tokens: unit RMS whatever the estimator


@pytest.mark.workflow
def test_the_prompt_file_is_a_cpu_job_before_the_first_gpu_job(tmp_path):
    """CR-F17: OpenRLHF's prompt file is made by prepare_prompts, which every segment of a cluster arm waits for,
    so no 64-GPU job spends its first minutes on it; the embedded engine has no such job."""
    from helpers import TINY, job_counts, snakemake

    rehearsal = ROOT / "workflow" / "presets" / "rehearsal.yaml"
    proc = snakemake(
        "-n", "--configfile", TINY, rehearsal, "--directory", tmp_path, "results/train/rehearsal_n4/segment0.json"
    )
    counts = job_counts(proc)
    assert counts["prepare_prompts"] == 1 and counts["train_ppo"] == 1, counts
    assert (
        "input: resources/models/tiny-qwen2-ctx992, resources/train/tiny-mix.jsonl, results/train/rehearsal_n4/prompts.json"
        in proc.stdout
    )
    embedded = job_counts(
        snakemake("-n", "--configfile", TINY, "--directory", tmp_path / "e", "results/train/prorl_n4/segment0.json")
    )
    assert "prepare_prompts" not in embedded


def test_vllms_preemptions_per_step_from_its_engine_stats_lines():
    """vLLM's periodic stats lines (local time, no year) as Ray forwards them into the launcher log, summed per step:
    a line without "Preemptions" counts 0, a step without any line is unknown (null), never 0."""
    import time as clock

    start = clock.mktime((2026, 12, 31, 23, 59, 0, 0, 0, -1))  # a launch just before new year
    text = "\n".join(
        [
            "(LLMRayActor pid=7) INFO 12-31 23:59:30 [loggers.py:257] Engine 000: Avg prompt throughput: 9.0 "
            "tokens/s, Avg generation throughput: 90.0 tokens/s, Running: 128 reqs, Waiting: 900 reqs, "
            "Preemptions: 3, GPU KV cache usage: 99.0%, Prefix cache hit rate: 1.0%",
            "(LLMRayActor pid=8) INFO 12-31 23:59:40 [loggers.py:257] Engine 001: Avg prompt throughput: 9.0 "
            "tokens/s, Avg generation throughput: 90.0 tokens/s, Running: 128 reqs, Waiting: 0 reqs, GPU KV cache "
            "usage: 50.0%, Prefix cache hit rate: 1.0%",
            "(LLMRayActor pid=7) INFO 01-01 00:00:20 [loggers.py:257] Engine 000: Avg prompt throughput: 1.0 "
            "tokens/s, Avg generation throughput: 9.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, Preemptions: 2, "
            "GPU KV cache usage: 99.0%, Prefix cache hit rate: 0.0%",
            "(PolicyModelActor pid=9) Train epoch [1/1]: ...",
        ]
    )
    lines = engine_stats(text, start)
    assert [n for _, n in lines] == [3, 0, 2] and lines[2][0] == start + 80  # 00:00:20 of the next year
    scalars = {k: v for _, _, k, v in _step(1, 0)}
    steps = [StepLog(step, start + at, scalars) for step, at in ((1, 60), (2, 200), (3, 300))]
    records = to_records(
        steps,
        offset=0,
        segment=0,
        n=16,
        dynamic_sampling=False,
        wall_s_before=0.0,
        launches=[Launch(0, start, start + 400, "stopped")],
        reward_calls=None,
        engine_lines=lines,
    )
    assert [r["vllm_preemptions"] for r in records] == [3, 2, None]

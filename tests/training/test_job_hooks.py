"""The job hook of OpenRLHF's processes (workflow/scripts/openrlhf_site): the trainer's micro-batch partition under
dynamic batching (our O(n log n) functions against OpenRLHF 0.11.2's own, bound into its experience maker and run
through its real `split_rollout_samples` in a process started the way the job's processes are) and the per-step
peak GPU memory of the training ranks."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from brorl.training.openrlhf.partition import balance, balanced_partitions, first_fit_count

seqlen_balancing = pytest.importorskip("openrlhf.utils.seqlen_balancing")
ROOT_WORKFLOW = Path(__file__).resolve().parents[2] / "workflow"


def test_first_fit_count_equals_openrlhfs_on_random_inputs():
    rng = random.Random(0)
    for _ in range(400):
        capacity = rng.randint(5, 100)
        lengths = [rng.randint(1, 130) for _ in range(rng.randint(0, 300))]  # some longer than a bin
        expected = seqlen_balancing.get_minimum_num_micro_batch_size(lengths, capacity, 1, 1)
        assert first_fit_count(lengths, capacity) == expected, (lengths, capacity)


def test_balanced_partitions_keep_openrlhfs_contract_and_its_balance():
    rng = random.Random(1)
    lengths = [rng.randint(1_200, 17_400) for _ in range(2_048)]  # ~9K-token samples, 32K-token micro-batches
    k = seqlen_balancing.get_minimum_num_micro_batch_size(lengths, 32_768, 1, 1) // 64 * 64
    groups = balanced_partitions(lengths, k)
    assert len(groups) == k and all(groups) and all(g == sorted(g) for g in groups)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))  # every sample exactly once
    ours = balance(lengths, groups)["max_over_mean"]
    theirs = balance(lengths, seqlen_balancing.get_seqlen_balanced_partitions(lengths, k, False))["max_over_mean"]
    assert ours <= theirs * 1.02, (ours, theirs)  # measured at 16,384 samples: docs/design.md#brorls-step-partition
    with pytest.raises(ValueError, match="< k_partitions"):
        balanced_partitions([5, 6], 3)
    assert balanced_partitions([7, 1, 5], 3) == [[0], [2], [1]]  # one per group when n == k


SPLIT = textwrap.dedent(
    """
    import json, random, sys
    from types import SimpleNamespace as NS
    import torch
    from openrlhf.trainer.ppo_utils import experience_maker
    from openrlhf.trainer.ppo_utils.experience import Experience

    rng = random.Random(2)
    lengths = [rng.randint(20, 300) for _ in range(700)]
    samples = [Experience(sequences=torch.ones(1, n, dtype=torch.long), total_length=torch.tensor([n])) for n in lengths]
    maker = object.__new__(experience_maker.RemoteExperienceMaker)
    maker.args = NS(  # 2 nodes x 4 GPUs, no ring attention or tensor parallelism, 512-token micro-batches
        train=NS(dynamic_batch_enable=True),
        actor=NS(num_nodes=2, num_gpus_per_node=4),
        ds=NS(ring_attn_size=1, tensor_parallel_size=1),
        rollout=NS(max_tokens_per_gpu=512),
    )
    maker.tokenizer = NS(pad_token_id=0)
    batches = maker.split_rollout_samples(samples)
    print(json.dumps({
        "bound": experience_maker.get_seqlen_balanced_partitions.__module__,
        "indices": [b.index for b in batches],
        "tokens": [int(b.total_length.sum()) for b in batches],
        "lengths": lengths,
    }))
    """
)


def split_through_the_hook(method: str, log_dir) -> dict:
    from brorl.training.openrlhf.launch import JOB_HOOK, STUBS, WORKFLOW

    # the job's PYTHONPATH as launch_env builds it on a machine without flash-attention (its import-only stub)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(JOB_HOOK), str(WORKFLOW), str(STUBS)]),
        "BRORL_PARTITION": method,
        "BRORL_PARTITION_LOG_DIR": str(log_dir),
    }
    proc = subprocess.run([sys.executable, "-c", SPLIT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("method", ["lpt", "karmarkar_karp"])
def test_the_job_hook_times_or_replaces_openrlhfs_partition_in_split_rollout_samples(tmp_path, method):
    out = split_through_the_hook(method, tmp_path / "log")
    assert out["bound"] == "brorl.training.openrlhf.partition_hook"  # the name experience_maker calls was rebound
    indices = [i for batch in out["indices"] for i in batch]
    assert sorted(indices) == list(range(len(out["lengths"])))  # every sample in exactly one micro-batch
    count = seqlen_balancing.get_minimum_num_micro_batch_size(out["lengths"], 512, 1, 1)
    assert len(out["indices"]) == max(count // 8 * 8, 8)  # OpenRLHF's own count, rounded to the 8 ranks
    assert all(sum(out["lengths"][i] for i in b) == t for b, t in zip(out["indices"], out["tokens"]))
    logged = [json.loads(line) for p in (tmp_path / "log").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert [(e["what"], e["method"]) for e in logged] == [("count", method), ("partition", method)]
    assert logged[1]["micro_batches"] == len(out["indices"]) and logged[1]["max_over_mean"] < 1.1
    assert all(e["seconds"] >= 0 for e in logged)


def test_the_bench_measures_fits_and_labels_its_extrapolation(capsys):
    from brorl.ops.speed.partition import fit_through_origin, run, summary

    assert fit_through_origin([1.0, 2.0], [2.0, 4.0]) == 2.0
    report = run([128, 256], target=1024, ranks=8, max_tokens=2048, low=100, high=900, seed=0)
    assert [r["samples"] for r in report["measured"]] == [128, 256]
    for row in report["measured"]:
        assert row["micro_batches"] % 8 == 0 and row["karmarkar_karp"]["seconds"] > 0 and row["lpt"]["seconds"] > 0
    target = report["target"]
    model = report["karmarkar_karp_model"]
    assert target["karmarkar_karp_extrapolated"]["seconds"] == model["seconds_per_n_k"] * 1024 * target["micro_batches"]
    assert "extrapolated" in summary(report)


def test_the_memory_hook_logs_each_updates_peak_only_where_cuda_is(tmp_path, monkeypatch):
    import types

    import torch
    from brorl.training.openrlhf.logs import read_hook_log
    from brorl.training.openrlhf.memory_hook import install

    class Actor:  # stands for the class behind OpenRLHF's @ray.remote PolicyModelActor
        def fit(self, kl_ctl: float = 0):
            return {"policy_loss": kl_ctl}

    module = types.SimpleNamespace(PolicyModelActor=types.SimpleNamespace(__ray_actor_class__=Actor))
    install(module, str(tmp_path))
    install(module, str(tmp_path))  # installed once, whatever imports the module again
    assert (
        Actor.fit.__wrapped__.__qualname__
        == "test_the_memory_hook_logs_each_updates_peak_only_where_cuda_is.<locals>.Actor.fit"
    )
    assert Actor().fit(0.5) == {"policy_loss": 0.5} and not list(tmp_path.iterdir())  # no CUDA: nothing, not 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 62 * 2**30)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (10 * 2**30, 80 * 2**30))  # (free, total)
    Actor().fit()
    assert [gib for _, gib in read_hook_log(tmp_path, "peak_gib")] == [62.0]
    # the device's memory in use, every process on the GPU: 80 - 10 GiB, more than the trainer's own 62
    assert [gib for _, gib in read_hook_log(tmp_path, "device_gib")] == [70.0]


def test_the_device_sampler_keeps_the_high_mark_between_updates():
    from brorl.training.openrlhf.memory_hook import DeviceSampler

    readings = iter([5, 9, 7, 3, 4, 2] + [1] * 1000)  # bytes in use, as the thread and take() read them
    sampler = DeviceSampler(lambda: next(readings), every_s=3600)  # the thread reads once, then sleeps
    time.sleep(0.1)
    sampler.sample()
    sampler.sample()  # 5 (thread), 9, 7
    assert sampler.take() == 9  # reads 3 too
    sampler.sample()
    assert sampler.take() == 4  # 4, then 2: a fresh start after each take


def test_the_job_hook_wraps_openrlhfs_own_actor_class(tmp_path):
    from brorl.training.openrlhf.launch import JOB_HOOK, STUBS, WORKFLOW

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(JOB_HOOK), str(WORKFLOW), str(STUBS)]),
        "BRORL_GPU_MEMORY_LOG_DIR": str(tmp_path),
    }
    env |= {
        "BRORL_IPC_LEGACY_SEGMENTS": "1",
        "BRORL_VLLM_SCHEDULER": '{"max_num_seqs": 8, "max_num_batched_tokens": 64}',
        "BRORL_STEP_LOG_DIR": str(tmp_path / "steps"),
        "BRORL_STOP_REQUEST": str(tmp_path / "stop_request.json"),
        "BRORL_LAUNCH_ID": "launch-2",
    }
    # Ray runs an actor's methods through the subclass @ray.remote built (and traced) at decoration: the patch must
    # be there, not only on the original class (actor_patch)
    code = textwrap.dedent(
        """
        import json, os, pathlib
        from types import SimpleNamespace as NS
        from openrlhf.trainer import ppo_trainer
        from openrlhf.trainer.ray import ppo_actor, vllm_engine
        flags = []
        for ray_class, name, marker in (
            (ppo_actor.PolicyModelActor, "fit", "brorl_memory_hook"),
            (ppo_actor.PolicyModelActor, "broadcast_to_vllm", "brorl_ipc_hook"),
            (vllm_engine.RolloutRayActor, "__init__", "brorl_scheduler_hook"),
            (ppo_trainer.PPOTrainer, "save_logs_and_checkpoints", "brorl_stop_hook"),
        ):
            for cls in (ray_class.__ray_actor_class__, ray_class.__ray_metadata__.modified_class):
                flags.append(getattr(getattr(cls, name), marker, False))
        print(flags)

        # OpenRLHF's own save_logs_and_checkpoints, as Ray runs it, on a trainer whose actor group records each save
        saves = []
        class Group:
            def async_run_method(self, method_name, tag, **kwargs):
                saves.append((method_name, tag, kwargs["client_states"]["global_step"]))
                return []
        ppo_trainer.ray.get = lambda refs: refs  # no Ray cluster here: the group's refs are already results
        trainer = NS(
            args=NS(logger=NS(logging_steps=1), ckpt=NS(save_steps=5)), wandb_logger=None, tensorboard_logger=None,
            best_eval_metric_key=None, best_eval_metric_value=None, _latest_eval_metric_value=None,
            actor_model_group=Group(), critic_model_group=None,
        )
        method = ppo_trainer.PPOTrainer.__ray_metadata__.modified_class.save_logs_and_checkpoints
        request = pathlib.Path(os.environ["BRORL_STOP_REQUEST"])
        for step in range(1, 7):
            if step == 2:  # an earlier launch's request is not this launch's
                request.write_text(json.dumps({"launch": "launch-1"}))
            if step == 3:
                request.write_text(json.dumps({"launch": "launch-2", "reason": "the time limit"}))
            if step == 4:
                request.unlink()
            method(trainer, step, {"timing/step_total": 2.5}, {"global_step": step})
        print(json.dumps([saves, trainer.args.ckpt.save_steps]))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines[-2] == str([True] * 8), proc.stderr[-2000:]
    # the request made OpenRLHF save step 3 outside its save interval (5), then the interval came back
    saves, save_steps = json.loads(lines[-1])
    assert saves == [["save_checkpoint", "global_step3", 3], ["save_checkpoint", "global_step5", 5]], saves
    assert save_steps == 5
    from brorl.training.openrlhf.logs import read_hook_entries

    steps = read_hook_entries(tmp_path / "steps")
    assert [(e["global_step"], e["saved"], e["stop"], e["forced"]) for e in steps] == [
        (1, False, False, False),
        (2, False, False, False),
        (3, True, True, True),
        (4, False, False, False),
        (5, True, False, False),
        (6, False, False, False),
    ]
    assert all(e["step_s"] == 2.5 for e in steps)


RAY_PATCH = textwrap.dedent(
    """
    import ray
    from brorl.training.openrlhf.actor_patch import patch_actor_method

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)

    @ray.remote
    class Actor:  # stands for OpenRLHF's PolicyModelActor
        def fit(self):
            return "fit"

    def wrap(fit):
        def counted(self):
            return "wrapped " + fit(self)
        return counted

    patch_actor_method(Actor, "fit", wrap, "marker")  # after decoration, as the job hook does after the import
    print(ray.get(Actor.remote().fit.remote()))
    """
)


@pytest.mark.engine  # starts Ray
def test_a_patched_actor_method_is_what_ray_runs():
    """The job hook's patches run inside a real Ray actor (the class shipped to the worker from the driver)."""
    proc = subprocess.run([sys.executable, "-c", RAY_PATCH], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "wrapped fit", proc.stderr[-3000:]


TOKENIZER_ONCE = textwrap.dedent(
    """
    import os, pickle, sys, types
    import ray
    from brorl.training.openrlhf.tokenizer_hook import TokenizerHandle, install
    from brorl.models.tiny import build_tokenizer

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)

    @ray.remote
    class Engine:  # stands for a vLLM engine actor: receives hf_tokenizer with each prompt
        def generate_responses(self, prompt, hf_tokenizer):
            return os.getpid(), id(hf_tokenizer), hf_tokenizer.decode(hf_tokenizer(prompt)["input_ids"])

    class SamplesGenerator:  # OpenRLHF's dispatch: one remote call per prompt, the tokenizer as an argument
        def __init__(self, tokenizer, engine):
            self.tokenizer, self.engine = tokenizer, engine

        def _dispatch_prompts_to_vllm(self, prompts):
            return [self.engine.generate_responses.remote(prompt=p, hf_tokenizer=self.tokenizer) for p in prompts]

    install(types.SimpleNamespace(SamplesGenerator=SamplesGenerator))
    tokenizer = build_tokenizer(1024)
    generator = SamplesGenerator(tokenizer, Engine.remote())
    out = ray.get(generator._dispatch_prompts_to_vllm(["a b", "c", "d e f"]))
    out += ray.get(generator._dispatch_prompts_to_vllm(["g"]))
    assert generator.tokenizer is tokenizer  # put back after each dispatch
    print(len({(pid, ident) for pid, ident, _ in out}), [text for _, _, text in out], len(pickle.dumps(tokenizer)))
    """
)


@pytest.mark.engine  # starts Ray
def test_the_tokenizer_reaches_the_engines_once_and_unchanged():
    env = {**os.environ, "PYTHONPATH": str(ROOT_WORKFLOW), "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    proc = subprocess.run([sys.executable, "-c", TOKENIZER_ONCE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("1 ")  # one tokenizer object in the engine's process for all four prompts
    assert "['a b', 'c', 'd e f', 'g']" in line  # it encodes and decodes as the original


def test_the_stop_watch_asks_for_a_save_when_the_step_after_this_could_not_be_saved(tmp_path, capsys):
    import time

    from brorl.training.openrlhf.logs import append_hook_entry
    from brorl.training.openrlhf.stop_watch import StopWatch
    from brorl.training.stop import StopRequests

    request, steps = tmp_path / "stop_request.json", tmp_path / "steps"
    request.write_text('{"launch": "an earlier launch"}')
    end = [time.time() + 10_000]
    watch = StopWatch(StopRequests(end_time=lambda: end[0]), request, steps, "launch-2", resume_step=4)
    assert not request.exists()  # an earlier launch's request never stops this one
    time.sleep(0.01)
    append_hook_entry(steps, {"t": time.time(), "global_step": 5, "step_s": 20.0, "call_s": 0.1, "saved": False,
                              "stop": False, "forced": False})  # fmt: skip
    assert watch.check() is None and watch.done == 5 and not request.exists()
    # the limit comes near: another step (20 s) + a save + the margin (300 s) would not fit after step 6
    end[0], watch.stop._queried = time.time() + 320, -float("inf")
    assert watch.check() is None and json.loads(request.read_text())["launch"] == "launch-2"
    assert "OpenRLHF saves at the end of the step under way (after global step 5)" in capsys.readouterr().out
    saved = {"t": time.time(), "global_step": 6, "step_s": 21.0, "call_s": 4.0, "saved": True, "stop": True}
    append_hook_entry(steps, {**saved, "forced": True})
    assert watch.check()["global_step"] == 6 and watch.answered["forced"]
    assert watch.stop.longest == (21.0, 4.0)

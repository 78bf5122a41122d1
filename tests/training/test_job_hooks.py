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
    from brorl.training.openrlhf.partition_bench import fit_through_origin, run, summary

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
    Actor().fit()
    assert [gib for _, gib in read_hook_log(tmp_path, "peak_gib")] == [62.0]


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
    }
    # Ray runs an actor's methods through the subclass @ray.remote built (and traced) at decoration: the patch must
    # be there, not only on the original class (actor_patch)
    code = textwrap.dedent(
        """
        from openrlhf.trainer.ray import ppo_actor, vllm_engine
        flags = []
        for ray_class, name, marker in (
            (ppo_actor.PolicyModelActor, "fit", "brorl_memory_hook"),
            (ppo_actor.PolicyModelActor, "broadcast_to_vllm", "brorl_ipc_hook"),
            (vllm_engine.RolloutRayActor, "__init__", "brorl_scheduler_hook"),
        ):
            for cls in (ray_class.__ray_actor_class__, ray_class.__ray_metadata__.modified_class):
                flags.append(getattr(getattr(cls, name), marker, False))
        print(flags)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == str([True] * 6), proc.stderr[-2000:]


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

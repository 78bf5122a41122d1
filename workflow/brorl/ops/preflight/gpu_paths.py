"""Preflight checks that run the GPU paths a training job takes first, instead of importing them, plus the site and
build facts a 64-GPU job would otherwise discover at start-up. Each returns a checks.Check and never raises.

Run on the GPU node (each in a subprocess with a time limit): one small vLLM engine with sleep mode (start, generate,
sleep, wake, generate: OpenRLHF's colocated engines do this every step), one flash-attention varlen kernel (packed
micro-batches), an NCCL all-reduce over the node's GPUs. Read: the GPUs' compute mode (exclusive-process mode rules
out three processes per GPU and CUDA IPC), the code sandbox's isolation mode, the partition's
limits against the profile's requests, and the start checkpoint's chat-template style. The decisions are pure
functions of what the tools print (tested with recorded outputs).
"""

from __future__ import annotations

import re
import sys
import tempfile
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from brorl.ops.plan.walltime import parse_slurm_time

from .checks import Check, _run


# ------------------------------------------------------------------------------------------------ decisions (pure)
def compute_mode_problem(nvidia_smi: str) -> str | None:
    """nvidia-smi --query-gpu=index,compute_mode --format=csv,noheader -> why the GPUs cannot be shared, or None."""
    modes = [line.split(",")[-1].strip() for line in nvidia_smi.strip().splitlines() if line.strip()]
    if not modes:
        return "nvidia-smi listed no GPU"
    exclusive = [i for i, mode in enumerate(modes) if mode != "Default"]
    if exclusive:
        return (
            f"GPU(s) {exclusive} in compute mode {modes[exclusive[0]]!r}: the actor, the reference and vLLM share each "
            "GPU (three processes) and OpenRLHF syncs weights by CUDA IPC; both need the Default mode"
        )
    return None


def partition_limit_problems(sinfo: str, request: Mapping[str, Any]) -> list[str]:
    """sinfo -h -p P -o "%l|%m|%c|%G" (MaxTime, MB per node, CPUs per node, GRES) against one job's request
    (runtime minutes, mem_mb, cpus_per_task, gres like gpu:h100:8): each request the partition cannot grant."""
    problems = []
    rows = [line.split("|") for line in sinfo.strip().splitlines() if line.count("|") == 3]
    if not rows:
        return [f"sinfo printed no partition line ({sinfo.strip()[:80]!r})"]
    limit = [parse_slurm_time(r[0]) for r in rows]  # hours
    if all(h is not None for h in limit) and request.get("runtime") and max(limit) * 60 < float(request["runtime"]):
        problems.append(f"MaxTime {rows[0][0]} is below the {request['runtime']} minutes asked for a first attempt")
    memory = [int(re.sub(r"\D", "", r[1]) or 0) for r in rows]
    if request.get("mem_mb") and max(memory) < int(request["mem_mb"]):
        problems.append(f"nodes have {max(memory):,} MB, the job asks {int(request['mem_mb']):,} MB per node")
    cpus = [int(re.sub(r"\D", "", r[2]) or 0) for r in rows]
    if request.get("cpus_per_task") and max(cpus) < int(request["cpus_per_task"]):
        problems.append(f"nodes have {max(cpus)} CPUs, the job asks {request['cpus_per_task']} per node")
    wanted = str(request.get("gres") or "")
    if wanted:
        kind, _, count = wanted.rpartition(":")
        offered = [_gres_counts(r[3]) for r in rows]
        if not any(gres.get(kind, 0) >= int(count) for gres in offered):
            listed = sorted({f"{k}:{n}" for gres in offered for k, n in gres.items()}) or ["none"]
            problems.append(f"no node offers {wanted} (GRES on the partition: {', '.join(listed)})")
    return problems


def _gres_counts(field: str) -> dict[str, int]:
    """sinfo's %G ("gpu:h100:8(S:0-1),gpu:a100:4") -> {"gpu:h100": 8, "gpu:a100": 4}."""
    counts: dict[str, int] = {}
    for item in field.split(","):
        kind, _, count = item.split("(")[0].strip().rpartition(":")
        if kind and count.isdigit():
            counts[kind] = max(counts.get(kind, 0), int(count))
    return counts


# ------------------------------------------------------------------------------------------------ checks
def compute_mode_check() -> Check:
    rc, out = _run(["nvidia-smi", "--query-gpu=index,compute_mode", "--format=csv,noheader"])
    if rc != 0:
        return Check("GPU compute mode", False, f"nvidia-smi failed: {out[:120]}", "run on a GPU node", gpu=True)
    problem = compute_mode_problem(out)
    if problem:
        return Check(
            "GPU compute mode", False, problem, "ask the site for Default compute mode (nvidia-smi -c 0)", gpu=True
        )
    return Check("GPU compute mode", True, f"Default on {len(out.splitlines())} GPU(s)", gpu=True)


def sandbox_isolation_check(allowed: bool) -> Check:
    from brorl.scoring.sandbox import isolation_mode

    mode = isolation_mode()
    if mode != "bwrap" and not allowed:
        return Check(
            "code sandbox isolation",
            False,
            f"{mode}: bubblewrap cannot create namespaces here, so model-written programs would run without "
            "filesystem isolation (training refuses that)",
            "enable unprivileged user namespaces for bubblewrap, or set training.cluster.allow_unsandboxed_code",
        )
    return Check("code sandbox isolation", True, mode)


def partition_limits_check(partition: str, request: Mapping[str, Any]) -> Check:
    rc, out = _run(["sinfo", "-h", "-p", partition, "-o", "%l|%m|%c|%G"])
    if rc != 0:
        return Check("partition limits", False, f"sinfo failed: {out[:120]}", "run on a node of the cluster")
    problems = partition_limit_problems(out, request)
    if problems:
        return Check(
            "partition limits",
            False,
            f"{partition}: " + "; ".join(problems),
            "adjust the site settings of profiles/slurm/config.yaml (max_runtime_min, gpu_node_mem_mb, "
            "gpu_node_cpus, gpu_model) to the partition",
        )
    return Check("partition limits", True, f"{partition} grants the training job's request")


def chat_template_check(model_dir: Path | None) -> Check:
    """Which template style the start checkpoint has (the reward scores responses accordingly)."""
    if model_dir is None or not Path(model_dir).is_dir():
        return Check("chat template", True, "start checkpoint not downloaded yet: checked by each training job")
    from brorl.training.openrlhf.dataset import reward_text

    try:
        text = reward_text(Path(model_dir))
    except Exception as error:  # a folder without a tokenizer: say so
        return Check("chat template", False, f"{model_dir}: {error}"[:200], "download the start checkpoint again")
    style = (
        "opens <think> in the generation prompt"
        if text["template_opens_reasoning"]
        else "leaves <think> to the response"
    )
    return Check("chat template", True, f"{style}; EOS and other special tokens stripped: {text['special_tokens'][:4]}")


# argv: the tiny model's folder, then "sleep" (training's colocated engines) or "plain" (evaluation's engines)
VLLM_ENGINE = textwrap.dedent(
    """
    import sys
    from vllm import LLM, SamplingParams
    from brorl.models.tiny import build_tiny_model
    build_tiny_model(sys.argv[1], context_length=256)
    sleep = sys.argv[2] == "sleep"
    llm = LLM(model=sys.argv[1], enable_sleep_mode=sleep, gpu_memory_utilization=0.2, max_model_len=256)
    params = SamplingParams(max_tokens=4, temperature=0)
    first = llm.generate(["hello"], params, use_tqdm=False)[0].outputs[0].token_ids
    if sleep:
        llm.sleep(level=1)
        llm.wake_up()
    again = llm.generate(["hello"], params, use_tqdm=False)[0].outputs[0].token_ids
    assert list(first) == list(again), (first, again)
    print("ok", len(first))
    """
)

FLASH_VARLEN = textwrap.dedent(
    """
    import torch
    from flash_attn import flash_attn_varlen_func
    lengths = torch.tensor([0, 7, 20], dtype=torch.int32, device="cuda")  # two packed sequences
    q = torch.randn(20, 4, 64, dtype=torch.bfloat16, device="cuda")
    out = flash_attn_varlen_func(q, q, q, lengths, lengths, 13, 13, causal=True)
    torch.cuda.synchronize()
    assert out.shape == q.shape and torch.isfinite(out).all()
    print("ok")
    """
)

NCCL_ALL_REDUCE = textwrap.dedent(
    """
    import os, torch, torch.distributed as dist, torch.multiprocessing as mp
    def work(rank, world):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
        dist.init_process_group("nccl", rank=rank, world_size=world)
        torch.cuda.set_device(rank)
        x = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(x)
        assert x[0].item() == world
        dist.destroy_process_group()
    world = torch.cuda.device_count()
    mp.spawn(work, args=(world,), nprocs=world)
    print("ok", world)
    """
)


def _gpu_script_check(name: str, code: str, args: list[str], timeout: float, fix: str) -> Check:
    from .checks import torch_cuda

    if torch_cuda() is None:
        return Check(name, False, "not run: torch is a CPU build (no CUDA device to run it on)", fix, gpu=True)
    rc, out = _run([sys.executable, "-c", code, *args], timeout)
    last = out.splitlines()[-1] if out else ""
    if rc != 0 or not last.startswith("ok"):
        return Check(name, False, out[-200:] or f"exit {rc}", fix, gpu=True)
    return Check(name, True, last, gpu=True)


def vllm_engine_check(sleep: bool) -> Check:
    """One small engine generating twice: with sleep and wake between (training) or without (evaluation)."""
    with tempfile.TemporaryDirectory() as folder:
        return _gpu_script_check(
            "vLLM engine with sleep mode" if sleep else "vLLM engine generates",
            VLLM_ENGINE,
            [str(Path(folder) / "tiny"), "sleep" if sleep else "plain"],
            600,
            "check gcc and the Python headers on the node (torch.compile), the driver, and vllm==0.29.0",
        )


def flash_varlen_check() -> Check:
    return _gpu_script_check(
        "flash-attn varlen kernel", FLASH_VARLEN, [], 300, "rebuild flash-attn for this GPU (envs/train.post-deploy.sh)"
    )


def nccl_check() -> Check:
    return _gpu_script_check(
        "NCCL all-reduce (this node's GPUs)",
        NCCL_ALL_REDUCE,
        [],
        300,
        "check NCCL_* settings and the GPUs' peer access (NCCL_DEBUG=INFO shows the transport)",
    )


IPC_FIX = (
    "training switches expandable segments off around the sync (brorl.training.openrlhf.ipc_hook); should that fail "
    "too, set kernel.yama.ptrace_scope=0 on the nodes or drop PYTORCH_CUDA_ALLOC_CONF from training; "
    "details: python -m brorl.training.openrlhf.ipc_probe --matrix"
)


def ptrace_scope() -> str:
    """The kernel's Yama ptrace scope (1 refuses pidfd_getfd between sibling processes), or "absent"."""
    try:
        return Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return "absent"


def weight_sync_check() -> Check:
    """OpenRLHF's CUDA-IPC weight sync as training runs it: a clone exported by one process and rebuilt by a sibling
    (brorl.training.openrlhf.ipc_probe), expandable segments on but switched off around the clone (the job hook's ipc_hook);
    the same without the switch is reported beside it."""
    from .checks import torch_cuda

    name = "CUDA-IPC weight sync"
    if torch_cuda() is None:
        return Check(name, False, "not run: torch is a CPU build (no CUDA device to run it on)", IPC_FIX, gpu=True)
    probe = [sys.executable, "-m", "brorl.training.openrlhf.ipc_probe", "--alloc-conf", "expandable_segments:True"]
    rc, out = _run([*probe, "--toggle"], 240)
    rc_kept, out_kept = _run(probe, 240)
    kept = "ok" if rc_kept == 0 else f"refused ({(out_kept.splitlines() or ['?'])[-1][:100]})"
    detail = f"ptrace_scope {ptrace_scope()}; expandable segments kept through the sync: {kept}"
    if rc != 0:
        return Check(name, False, f"{(out.splitlines() or ['?'])[-1][:160]}; {detail}", IPC_FIX, gpu=True)
    return Check(name, True, f"with legacy segments around the sync: ok; {detail}", gpu=True)

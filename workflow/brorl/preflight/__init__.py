"""Checks of a GPU node before 64 GPUs are spent (`python -m brorl.preflight`): driver vs the CUDA build of
torch/vLLM, GPUs visible to torch and vLLM, flash-attn and DeepSpeed's FusedAdam, CUDA_HOME/nvcc, free disk, the
code sandbox's Python and bubblewrap, Ray, the hub token, and the site's Slurm settings. See checks.py."""

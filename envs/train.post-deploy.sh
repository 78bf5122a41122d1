#!/usr/bin/env bash
# Run by Snakemake inside the new environment of envs/train.yaml (`--sdm conda`), and by envs/gpu/Dockerfile: the
# installs pip cannot resolve.
#   1. flash-attn 2.8.3.post1 compiled against this environment's torch 2.13.0 (CUDA 13): the kernels of OpenRLHF's
#      pinned 2.8.3; post1 only fixes its setup.py's wheel lookup for CUDA 13 torch (2.8.3 asks for a cu12 wheel,
#      finds none, and compiles for four GPU generations), so where a prebuilt wheel matches it is taken, else the
#      build is for the H100 only (FLASH_ATTN_CUDA_ARCHS=90). Built without build isolation (its setup.py imports
#      torch); needs nvcc of CUDA 13.0 (CUDA_HOME); MAX_JOBS bounds the compiler's memory (flash-attn's setup.py: ~8-9
#      GB per job at 4 nvcc threads), so unless it is set it is one job per 9 GB available, within the cores. Build
#      on a compute node or in the image, not on a login node that kills long compiles (docs/gpu-software.md).
#   2. OpenRLHF 0.11.2 without its dependency pins (the environment already holds them, flash-attn built here).
#   3. DeepSpeed's FusedAdam compiled now for CUDA (DS_ACCELERATOR=cuda, TORCH_CUDA_ARCH_LIST=9.0): without
#      DS_ACCELERATOR, DeepSpeed picks its CPU accelerator on a host with no visible GPU (every image build, a login
#      node) and builds the CPU op of the same name, and the GPU nodes then JIT-compile the CUDA op on every rank.
#      The check below fails unless DeepSpeed recorded the CUDA accelerator and the op. Rebuilt without pip's cache:
#      the cached wheel is the op-less one of `conda env create`.
#   4. the IFEval checkers of the instruction-following reward (lighteval) and NLTK's punkt_tab data (inside
#      llama-index-core's wheel, never imported), both without their dependencies: the pins of envs/ifeval.txt.
set -euo pipefail
# --- MAX_JOBS (tests/test_post_deploy.py runs this block)
if [[ -z ${MAX_JOBS:-} ]]; then
  available_gb=$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' "${BRORL_MEMINFO:-/proc/meminfo}")
  MAX_JOBS=$((available_gb / 9))
  ((MAX_JOBS >= 1)) || MAX_JOBS=1
  ((MAX_JOBS <= $(nproc))) || MAX_JOBS=$(nproc)
fi
# --- end MAX_JOBS
echo "train.post-deploy.sh: MAX_JOBS=$MAX_JOBS (flash-attn's compile: ~9 GB per job)"
: "${TORCH_CUDA_ARCH_LIST:=9.0}" # H100; add e.g. ";10.0" for B200 nodes
: "${FLASH_ATTN_CUDA_ARCHS:=90}"
export MAX_JOBS TORCH_CUDA_ARCH_LIST FLASH_ATTN_CUDA_ARCHS
command -v nvcc >/dev/null || { echo "train.post-deploy.sh: nvcc not found: load CUDA 13.0 (CUDA_HOME) to build flash-attn" >&2; exit 1; }
python -m pip install --no-build-isolation --no-deps flash-attn==2.8.3.post1
python -m pip install --no-deps openrlhf==0.11.2
python -m pip install --no-deps lighteval==0.13.0 llama-index-core==0.14.25
# --no-cache-dir: DeepSpeed 0.19.6 is an sdist; `conda env create` built it once without ops (no torch yet) and pip
# cached that wheel, which any later install of the same file reuses, --force-reinstall or not (tests/test_post_deploy.py)
DS_ACCELERATOR=cuda DS_BUILD_FUSED_ADAM=1 python -m pip install --no-build-isolation --no-deps --force-reinstall --no-cache-dir deepspeed==0.19.6
python - <<'PY'
import importlib.metadata as metadata
import sys

import deepspeed.git_version_info as built  # what DeepSpeed's setup.py recorded; importing it needs no GPU
import flash_attn  # noqa: F401 - the real package, built above

if built.accelerator_name != "cuda" or not built.installed_ops.get("fused_adam"):
    sys.exit(
        f"train.post-deploy.sh: DeepSpeed was built for the {built.accelerator_name!r} accelerator with fused_adam "
        f"{'installed' if built.installed_ops.get('fused_adam') else 'missing'}: the GPU nodes would JIT-compile it"
    )
print("flash-attn", metadata.version("flash-attn"), "openrlhf", metadata.version("openrlhf"), "FusedAdam prebuilt for CUDA")
PY

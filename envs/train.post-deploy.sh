#!/usr/bin/env bash
# Run by Snakemake inside the new environment of envs/train.yaml (`--sdm conda`), and by envs/gpu/Dockerfile: the
# installs pip cannot resolve.
#   1. flash-attn 2.8.3 compiled against this environment's torch 2.13.0 (CUDA 13): no wheel exists for it, and its
#      setup.py imports torch, so it is built without build isolation. Needs nvcc of CUDA 13.0 (CUDA_HOME) on the
#      machine that builds the environment; MAX_JOBS bounds the compiler's memory (about 4 GB per job).
#   2. OpenRLHF 0.11.2 without its dependency pins (the environment already holds them, flash-attn built here).
#   3. DeepSpeed's FusedAdam compiled now (DS_BUILD_FUSED_ADAM=1) instead of JIT at the first training step, where it
#      would need nvcc on every compute node.
#   4. the IFEval checkers of the instruction-following reward (lighteval) and NLTK's punkt_tab data (inside
#      llama-index-core's wheel, never imported), both without their dependencies: the pins of envs/ifeval.txt.
set -euo pipefail
: "${MAX_JOBS:=8}"
export MAX_JOBS
command -v nvcc >/dev/null || { echo "train.post-deploy.sh: nvcc not found: load CUDA 13.0 (CUDA_HOME) to build flash-attn" >&2; exit 1; }
python -m pip install --no-build-isolation --no-deps flash-attn==2.8.3
python -m pip install --no-deps openrlhf==0.11.2
python -m pip install --no-deps lighteval==0.13.0 llama-index-core==0.14.25
DS_BUILD_FUSED_ADAM=1 python -m pip install --no-build-isolation --no-deps --force-reinstall deepspeed==0.19.6
python - <<'PY'
import importlib.metadata as metadata

import flash_attn  # noqa: F401 - the real package, built above
from deepspeed.ops.op_builder import FusedAdamBuilder

FusedAdamBuilder().load()  # the prebuilt op, not a JIT build
print("flash-attn", metadata.version("flash-attn"), "openrlhf", metadata.version("openrlhf"), "FusedAdam prebuilt")
PY

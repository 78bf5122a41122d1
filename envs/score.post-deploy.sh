#!/usr/bin/env bash
# Run by Snakemake inside the new environment of envs/score.yaml (`--sdm conda`): the IFEval checkers of the
# instruction-following verifier (lighteval) and NLTK's punkt_tab data (inside llama-index-core's wheel, never
# imported), both without their dependencies, which serve other purposes: the pins of envs/ifeval.txt.
set -euo pipefail
python -m pip install --no-deps lighteval==0.13.0 llama-index-core==0.14.25

#!/usr/bin/env bash
# One-GPU check of paper Table 2's throughput ratio: a Qwen2 model of the paper's size (1.5B, random weights, built
# from a config: no hub) through vLLM at the paper's layouts, then Table 2 with the N=512 / N=16 samples/s ratio
# next to the paper's 1.98. Needs a CUDA vLLM (0.29.0, envs/eval.yaml) and this repository's package.
#
#   workflow/scripts/gpu_throughput_check.sh                 # defaults below
#   MAX_TOKENS=512 REPEATS=3 OUT=/scratch/tp workflow/scripts/gpu_throughput_check.sh
#
# Cost: tokens per batch = prompts x N x MAX_TOKENS; 128 x 512 x 256 = 16.8 M tokens is a few minutes on one H100,
# run WARMUP + REPEATS times per configuration. The paper's 16,384 tokens would take hours per batch on one GPU.
# The prompts are a synthetic arithmetic mix (offline); with the byte-level tokenizer they are ~110 tokens, i.e. six
# whole 16-token KV blocks that the N samples of a prompt can share through the prefix cache.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PYTHONPATH="$ROOT/workflow${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1
PY=${PYTHON:-python}
OUT=${OUT:-$ROOT/results/gpu_throughput_check}
MAX_TOKENS=${MAX_TOKENS:-256}    # tokens per sample, exact (EOS ignored)
WARMUP=${WARMUP:-1}              # untimed batches per configuration
REPEATS=${REPEATS:-3}            # timed batches per configuration
MAX_CV=${MAX_CV:-0.05}           # above this CV of samples/s no ratio is reported
LAYOUTS=${LAYOUTS:-"512x16 128x512 16x512"}   # ProRL, BroRL, and BroRL's N at ProRL's 8,192 samples
PREFIX_CACHING=${PREFIX_CACHING:-"on off"}
TEMPERATURE=${TEMPERATURE:-1.2}  # training rollouts (config training.rollout_temperature)
mkdir -p "$OUT"

MODEL="$OUT/qwen2-1.5b-random"
[ -f "$MODEL/brorl_manifest.json" ] || "$PY" -m brorl.throughput build-random-model --out "$MODEL"
MIX="$OUT/mix.jsonl"
[ -f "$MIX" ] || PYTHONHASHSEED=0 "$PY" -m brorl.benchmarks prepare-train-data --out "$MIX" --spec \
  '{"name": "gpu-check", "seed": 0, "max_prompts": null, "sources": [{"name": "arithmetic", "family": "math", "dataset": "synthetic:arithmetic", "revision": "v1", "split": "train", "items": 1024}]}'
"$PY" -m brorl.throughput machine --out "$OUT/machine_start.json"

results=()
for layout in $LAYOUTS; do
  prompts=${layout%x*}; n=${layout#*x}
  for pc in $PREFIX_CACHING; do
    json="$OUT/p${prompts}_n${n}_pc${pc}.json"
    [ -f "$json" ] || "$PY" -m brorl.throughput bench --engine cluster --model "$MODEL" --prompts-file "$MIX" \
      --prompts "$prompts" --n "$n" --prefix-caching "$pc" --max-tokens "$MAX_TOKENS" \
      --max-model-len $((1024 + MAX_TOKENS)) --temperature "$TEMPERATURE" --top-p 1.0 --warmup "$WARMUP" \
      --repeats "$REPEATS" --max-cv "$MAX_CV" --out "$json" 2>&1 | tee "$OUT/p${prompts}_n${n}_pc${pc}.log"
    results+=("$json")
  done
done

ARMS='{"control": {"name": "prorl_n16", "label": "ProRL", "n": 16, "prompts": 512},
       "treatment": {"name": "brorl_n512", "label": "BroRL", "n": 512, "prompts": 128}}'
"$PY" -m brorl.throughput tabulate --results "${results[@]}" --arms "$ARMS" \
  --out-md "$OUT/table2.md" --out-tex "$OUT/table2.tex" --out-csv "$OUT/table2.csv" \
  --pass-rate-csv "$OUT/pass_rate_by_step.csv" --figure-png "$OUT/throughput_vs_n.png" \
  --figure-pdf "$OUT/throughput_vs_n.pdf" --machine-out "$OUT/machine.json" >/dev/null
echo
grep -E "throughput ratio|generation throughput" "$OUT/table2.md"
echo "paper: 36.5 vs 72.4 samples/s, ratio 1.98 (BroRL N=512 / ProRL N=16); full table: $OUT/table2.md"

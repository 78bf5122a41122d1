#!/usr/bin/env bash
# make rehearsal: the CPU rehearsal of the paper's training path (docs/rehearsal.md). OpenRLHF 0.11.2 trains the
# tiny arm rehearsal_n4 through the train_ppo rule, stopped once before a lowered time limit (step 1; through Slurm
# only) and killed once inside the save of step 3 by the preset's drills (each job retried once); the exported steps are then evaluated, the last one also by the
# mass-balance probe; a report and the verdict follow.
#   - with the project's local Slurm (started here as root on Debian, or by `make slurm-up`): --profile slurm --profile profiles/ci,
#     the training job a real 2-node allocation (2 emulated nodes x 2 GPUs);
#   - otherwise: --profile profiles/local, the launcher's --single-host mode (two Ray nodes on this machine).
# Extra arguments go to snakemake (e.g. --forceall).
set -euo pipefail
cd "$(dirname "$0")/../.."
arm=rehearsal_n4
configs=(--configfile workflow/presets/tiny.yaml workflow/presets/rehearsal.yaml)
targets=("results/train/$arm/train.json" "results/eval/$arm/step2/synthetic_sums.summary.json"
         "results/eval/$arm/step4/synthetic_sums.summary.json" "results/probe/$arm/step4.scores.parquet")
export PATH="$PWD/.venv/bin:$PATH"

if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then bash workflow/scripts/local_slurm.sh start; fi
# only the Slurm local_slurm.sh started: on a cluster's login node the site's Slurm answers too, and must never get
# this CPU rehearsal's jobs (2 exclusive GPU nodes)
if [[ -x .venv-slurm/bin/python ]] && bash workflow/scripts/local_slurm.sh owned; then
  echo "rehearsal: through the local Slurm (train_ppo on 2 emulated nodes x 2 GPUs)"
  # the emulated nodes' size (profiles/ci/config.yaml); one Slurm node per Ray node, on one host
  export BRORL_SLURM_GPU_NODE_CPUS=16 BRORL_SLURM_GPU_NODE_MEM_MB=64000 BRORL_SLURM_GPUS_PER_NODE=2 \
    BRORL_SLURM_RAY_EMULATED=auto BRORL_SLURM_CPU_ENGINES=1
  .venv-slurm/bin/python -m snakemake "${targets[@]}" --profile slurm --profile profiles/ci "${configs[@]}" --retries 1 "$@"
else
  echo "rehearsal: no Slurm here, the launcher starts both Ray nodes on this machine (--single-host)"
  snakemake "${targets[@]}" --profile profiles/local "${configs[@]}" --retries 1 "$@"
fi
mkdir -p results/rehearsal
python -m brorl.ops.rehearsal_report --out-dir "results/train/$arm" --json results/rehearsal/report.json
# the smoke verdict of this CPU form: the drills and the reset judged, every GPU path "not run (CPU substitution)"
python -m brorl.ops.smoke --configfile workflow/presets/tiny.yaml workflow/presets/rehearsal.yaml --out results/rehearsal

#!/usr/bin/env bash
# The driver of a long run as a chain of CPU jobs (docs/cluster.md#the-driver-as-a-slurm-job), from the repository root:
#   make driver-job DRIVER_PARTITION=cpu DRIVER_TIME=3-00:00:00 SUBMIT_ARGS='--sdm conda'
# (= mkdir -p results/logs/driver && sbatch -p cpu -t 3-00:00:00 workflow/scripts/driver_job.sh --sdm conda)
#
# Each link of the chain:
#   1. waits until no other job of this working directory is in Slurm's queue (jobs the previous link's Snakemake
#      submitted and left running: a new driver would otherwise submit them again, and two trainers would share a run
#      folder; the lease refuses that anyway, brorl.training.lease);
#   2. unlocks, then runs `.venv-slurm/bin/snakemake --profile slurm <options>` (rerun-incomplete is the workflow
#      profile's default) with the engine environment first on PATH, as `make submit` does;
#   3. on Slurm's warning before its time limit (--signal=B:USR1@<s> reaches this batch shell; the default below is
#      15 minutes), submits the next link (--dependency=afterany:<this job>, same partition and time limit) and sends
#      Snakemake SIGTERM: Snakemake then submits nothing more and waits for its running jobs until Slurm ends this
#      job. SIGKILL at the limit leaves those jobs running (Snakemake cancels its jobs only on Ctrl-C/SIGINT or an
#      error of its own: the Slurm plugin's cancel_jobs).
# The chain ends when Snakemake ends by itself, or after BRORL_DRIVER_LINKS links (default 20). Other settings, from
# the environment of the first sbatch: BRORL_DRIVER_SNAKEMAKE (the Snakemake command; default
# .venv-slurm/bin/snakemake), BRORL_DRIVER_WORKDIR (the run's working directory when the options give --directory),
# BRORL_DRIVER_POLL_S (seconds between looks at the queue, default 120). The Slurm plugin warns
# that it runs inside a Slurm job ("You are running snakemake in a SLURM job context. This is not recommended") and
# removes the job's SLURM_* variables before it submits: expected here.
#SBATCH --job-name=brorl_driver
#SBATCH --cpus-per-task=2
#SBATCH --mem=8G
#SBATCH --signal=B:USR1@900
#SBATCH --output=results/logs/driver/%j.log
#SBATCH --open-mode=append
set -uo pipefail

job=${SLURM_JOB_ID:?driver_job.sh runs as a Slurm job: sbatch workflow/scripts/driver_job.sh}
root=${SLURM_SUBMIT_DIR:-$PWD}
cd "$root" || exit 2
script=$root/workflow/scripts/driver_job.sh # this file (a batch job runs a spooled copy of it)
link=${BRORL_DRIVER_LINK:-1}
links=${BRORL_DRIVER_LINKS:-20}
say() { echo "[driver job $job, link $link/$links, $(date +%FT%T)] $*"; }

# the warning before the time limit (3. above); Snakemake's pid once it runs
pid=""
warned() {
  if ((link >= links)); then
    say "time limit near; BRORL_DRIVER_LINKS=$links reached: no next link (submit this script again to go on)"
  else
    local limit log next
    limit=$(squeue -h -j "$job" -o %l)
    log=$(scontrol show job -o "$job" | grep -o 'StdOut=[^ ]*' | cut -d= -f2-) # this link's log: the next beside it
    next=$(BRORL_DRIVER_LINK=$((link + 1)) sbatch --parsable --export=ALL --dependency="afterany:$job" \
      --partition="${SLURM_JOB_PARTITION:-}" --time="$limit" --output="$(dirname "$log")/%j.log" "$script" "$@") &&
      say "time limit near: next link is job $next (starts when this one ends)"
  fi
  if [[ -z $pid ]]; then exit 0; fi # still waiting (1.): the next link takes over
  kill -TERM "$pid" 2>/dev/null     # Snakemake's graceful stop: no new submissions
}
trap 'warned "$@"' USR1

# 1. the previous link's jobs
workdir=${BRORL_DRIVER_WORKDIR:-$root} # where the run's jobs work (snakemake --directory, if given)
others() { squeue -h -u "$(id -un)" -o "%i %Z" | awk -v me="$job" -v dir="$workdir" '$1 != me && $2 == dir {print $1}'; }
said=""
while left=$(others | tr '\n' ' ') && [[ -n ${left// /} ]]; do
  [[ $left == "$said" ]] || say "waiting for jobs of this directory to end: $left"
  said=$left
  sleep "${BRORL_DRIVER_POLL_S:-120}" &
  wait $! # interruptible: the warning's trap runs at once
done

# 2. the driver
export PATH=$root/.venv/bin:$PATH
read -r -a snakemake <<<"${BRORL_DRIVER_SNAKEMAKE:-$root/.venv-slurm/bin/snakemake}"
snakemake+=(--profile slurm)
"${snakemake[@]}" --unlock "$@" >/dev/null 2>&1 || true
say "starting: ${snakemake[*]} $*"
"${snakemake[@]}" "$@" &
pid=$!
status=0
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
  status=$? # a trapped signal returns from wait early: loop until Snakemake has really ended
done
say "Snakemake ended with status $status"
exit "$status"

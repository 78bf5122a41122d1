#!/usr/bin/env bash
# Start a Ray cluster over every node of the current Slurm job, run a driver command on the head node, tear down.
#
# Usage (inside an allocation, e.g. the train_ppo rule's shell; `ray` must be on PATH, the env activated):
#   ray_on_slurm.sh --logs DIR [--nodes N] -- DRIVER COMMAND...
#     --logs DIR   required: per-node `ray start` logs (ray-<i>-<node>.log) and launcher.log go here
#     --nodes N    expected node count; the launcher fails (exit 2) when the job has another number
#   Exit status: the driver's; 2 bad arguments / not in a Slurm job / wrong node count; 3 a Ray node failed to start.
#
# How (research RAY_ON_SLURM.md, LOCAL_SLURM.md B6):
#   - node list: `scontrol show hostnames` of `squeue -j $SLURM_JOB_ID -o %N` (snakemake's jobstep plugin strips
#     SLURM_JOB_NODELIST from the rule's environment; SLURM_JOB_NODELIST is used when present);
#   - head on node 0, workers on the others, each `ray start --block` in its own `srun --overlap` step named
#     ray_node_<i> (--block keeps every Ray process inside the step; --overlap lets the driver's steps share nodes);
#   - a node counts as up when its log says "Ray runtime started"; the driver runs here (the batch step, on the head
#     node) with RAY_ADDRESS exported, in the background so that TERM/INT (scancel, time limit) reach the trap;
#   - teardown on exit, failure or cancellation: SIGTERM to the node steps (scancel -s TERM <job>.<step>, falling back
#     to the srun clients), then SIGKILL after RAY_STOP_TIMEOUT, then the per-job temp dirs are removed;
#   - `ray start` runs through a shim that ignores a second SIGTERM (Slurm sends two at a time limit, and a second
#     one deadlocks `ray start --block` in Ray 2.55); RAY_SLURM_SIGTERM_ONCE=0 runs plain `ray start`;
#   - emulated clusters (several Slurm nodes on one host, as in CI): each node gets its own --temp-dir, port block
#     and loopback IP 127.0.0.<2+i>, and advertises the node's CPUTot CPUs.
# Environment knobs: RAY_NUM_CPUS, RAY_NUM_GPUS (default: entries of CUDA_VISIBLE_DEVICES), RAY_START_TIMEOUT (180 s),
#   RAY_STOP_TIMEOUT (30 s), RAY_SLURM_EMULATED (auto|1|0), RAY_PORT_BASE (emulated: 20000 + (jobid % 10) * 1250),
#   RAY_OBJECT_STORE_MEMORY (emulated: 268435456), RAY_EXTRA_START_ARGS, RAY_SLURM_KEEP_TMP=1.
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "ray_on_slurm: $*" >&2; exit 2; }

logs="" expected=""
while (($#)); do
  case "$1" in
    --logs) [[ $# -ge 2 ]] || usage; logs=$2; shift 2 ;;
    --nodes) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a positive integer"; expected=$2; shift 2 ;;
    --) shift; break ;;
    __node) shift; break ;;  # internal: this process is one node's step (see node_main)
    -h|--help) usage ;;
    *) die "unknown argument '$1' (usage: ray_on_slurm.sh --logs DIR [--nodes N] -- COMMAND...)" ;;
  esac
done

# ------------------------------------------------------------------------------------------- one node's step
node_main() {  # env: RAY_SLURM_NODE_ARGS (the ray start arguments)
  local pid
  read -r -a args <<<"$RAY_SLURM_NODE_ARGS"
  if [[ ${RAY_SLURM_SIGTERM_ONCE:-1} == 1 ]]; then
    python - "${args[@]}" <<'PY' &
import signal, sys
import ray._private.utils as utils
def once(handler):
    fired = []
    def wrapped(signum, frame):
        if not fired:
            fired.append(signum)
            handler(signum, frame)
    signal.signal(signal.SIGTERM, wrapped)
utils.set_sigterm_handler = once
from ray.scripts.scripts import main
sys.argv = ["ray", *sys.argv[1:]]
main()
PY
  else
    ray "${args[@]}" &
  fi
  pid=$!
  # a stop request is forwarded once; `ray start --block` exits 1 after a clean stop, which is not a failure here
  trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; exit 0' TERM INT
  wait "$pid"
}
if [[ ${RAY_SLURM_NODE_ARGS:-} != "" && $# -eq 0 ]]; then node_main; exit $?; fi

# ------------------------------------------------------------------------------------------- checks
[[ -n $logs ]] || die "--logs DIR is required"
(($#)) || die "no driver command after --"
job=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
[[ -n $job ]] || die "not inside a Slurm job (SLURM_JOB_ID is unset)"
command -v ray >/dev/null || die "ray is not on PATH (activate the training environment first)"
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
exec > >(tee -a "$logs/launcher.log") 2>&1

nodelist=${SLURM_JOB_NODELIST:-$(squeue -h -j "$job" -o %N)}
mapfile -t nodes < <(scontrol show hostnames "$nodelist")
((${#nodes[@]})) || die "no nodes found for job $job (node list '$nodelist')"
if [[ -n $expected && ${#nodes[@]} -ne $expected ]]; then
  die "expected $expected nodes, job $job has ${#nodes[@]}: ${nodes[*]}"
fi

emulated=${RAY_SLURM_EMULATED:-auto}
if [[ $emulated == auto ]]; then  # several nodes sharing one NodeAddr = one host pretending to be a cluster
  emulated=0
  if sinfo -N -h -o '%N %o' 2>/dev/null | awk '{print $2}' | sort | uniq -d | grep -q .; then emulated=1; fi
fi

node_addr() {  # the address Ray should bind on node $1 (NodeAddr resolved to an IP)
  local addr
  addr=$(scontrol show node "$1" 2>/dev/null | tr ' ' '\n' | sed -n 's/^NodeAddr=//p' | head -1)
  addr=${addr:-$1}
  getent hosts "$addr" 2>/dev/null | awk '{print $1; exit}' || true
}

port_base=${RAY_PORT_BASE:-$((20000 + (job % 10) * 1250))}
if ((emulated)); then
  head_ip=127.0.0.2 head_port=$port_base
else
  head_ip=$(node_addr "${nodes[0]}"); head_ip=${head_ip:-${nodes[0]}} head_port=6379
fi
gpus=${RAY_NUM_GPUS:-}
if [[ -z $gpus && -n ${CUDA_VISIBLE_DEVICES:-} ]]; then gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi

start_args() {  # ray start arguments of node $1 (index), name $2
  local i=$1 name=$2 b a
  a="start --block --disable-usage-stats --resources={\"slurm_node_$name\":1}"
  [[ -n $gpus ]] && a+=" --num-gpus=$gpus"
  [[ -n ${RAY_NUM_CPUS:-} ]] && a+=" --num-cpus=$RAY_NUM_CPUS"
  if ((emulated)); then
    b=$((port_base + 50 + 100 * i))
    a+=" --temp-dir=/tmp/ray_${job}_$i --node-ip-address=127.0.0.$((2 + i))"
    a+=" --node-manager-port=$b --object-manager-port=$((b + 1)) --dashboard-agent-listen-port=$((b + 2))"
    a+=" --dashboard-agent-grpc-port=$((b + 3)) --runtime-env-agent-port=$((b + 4)) --metrics-export-port=$((b + 5))"
    a+=" --min-worker-port=$((b + 10)) --max-worker-port=$((b + 99))"
    a+=" --object-store-memory=${RAY_OBJECT_STORE_MEMORY:-268435456}"
    if [[ -z ${RAY_NUM_CPUS:-} ]]; then
      a+=" --num-cpus=$(scontrol show node "$name" | tr ' ' '\n' | sed -n 's/^CPUTot=//p' | head -1)"
    fi
  else
    local ip; ip=$(node_addr "$name"); [[ -n $ip ]] && a+=" --node-ip-address=$ip"
  fi
  if ((i == 0)); then
    a+=" --head --port=$head_port"
    ((emulated)) && a+=" --dashboard-port=$((head_port + 1)) --ray-client-server-port=$((head_port + 2))"
  else
    a+=" --address=$head_ip:$head_port"
  fi
  echo "$a ${RAY_EXTRA_START_ARGS:-}"
}

# ------------------------------------------------------------------------------------------- teardown
srun_pids=() driver_pid="" torn_down=0
teardown() {
  ((torn_down)) && return 0
  torn_down=1
  local steps deadline
  if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
    echo "ray_on_slurm: stopping the driver ($driver_pid)"
    kill -TERM "$driver_pid" 2>/dev/null || true
  fi
  # graceful: SIGTERM to the tasks of our node steps (killing an srun client would SIGKILL its step)
  steps=$(squeue -h -s -j "$job" -o '%i %j' 2>/dev/null | awk '$2 ~ /^ray_node_/ {print $1}' || true)
  if [[ -n $steps ]]; then
    # shellcheck disable=SC2086
    scancel -s TERM $steps 2>/dev/null || true
  else
    for pid in "${srun_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  fi
  deadline=$((SECONDS + ${RAY_STOP_TIMEOUT:-30}))
  for pid in "${srun_pids[@]}" $driver_pid; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${srun_pids[@]}" $driver_pid; do wait "$pid" 2>/dev/null || true; done  # not a bare wait: tee
  if ((emulated)) && [[ ${RAY_SLURM_KEEP_TMP:-0} != 1 ]]; then rm -rf "/tmp/ray_${job}_"*; fi
  echo "ray_on_slurm: Ray stopped on ${#nodes[@]} node(s)"
}
on_signal() { echo "ray_on_slurm: received $1, tearing down"; teardown; exit $((128 + $2)); }
trap teardown EXIT
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT

# ------------------------------------------------------------------------------------------- start
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
start_node() {  # index, node name
  local i=$1 name=$2
  RAY_SLURM_NODE_ARGS=$(start_args "$i" "$name") srun --overlap --nodes=1 --ntasks=1 -w "$name" \
    --job-name="ray_node_$i" --output="$logs/ray-$i-$name.log" "$self" __node &
  srun_pids+=($!)
}
wait_up() {  # index, node name
  local log="$logs/ray-$1-$2.log" deadline=$((SECONDS + ${RAY_START_TIMEOUT:-180}))
  until grep -q "Ray runtime started" "$log" 2>/dev/null; do
    if ! kill -0 "${srun_pids[$1]}" 2>/dev/null || ((SECONDS >= deadline)); then
      echo "ray_on_slurm: node $1 ($2) did not start; last lines of $log:" >&2
      tail -n 20 "$log" >&2 2>/dev/null || true
      exit 3
    fi
    sleep 0.5
  done
}

echo "ray_on_slurm: job $job, nodes ${nodes[*]}, head ${nodes[0]} at $head_ip:$head_port (emulated=$emulated)"
start_node 0 "${nodes[0]}"
wait_up 0 "${nodes[0]}"
for ((i = 1; i < ${#nodes[@]}; i++)); do start_node "$i" "${nodes[$i]}"; done
for ((i = 1; i < ${#nodes[@]}; i++)); do wait_up "$i" "${nodes[$i]}"; done
echo "ray_on_slurm: ${#nodes[@]} node(s) up; driver: $*"

export RAY_ADDRESS="$head_ip:$head_port"
((emulated)) && export RAY_API_SERVER_ADDRESS="http://$head_ip:$((head_port + 1))"
set +e
"$@" &
driver_pid=$!
wait "$driver_pid"
status=$?
set -e
driver_pid=""
echo "ray_on_slurm: driver exited with status $status"
teardown
exit "$status"

#!/usr/bin/env bash
# Start a Ray cluster over every node of the current Slurm job, run a driver command on the head node, tear down.
#
# Usage (inside an allocation, e.g. the train_ppo rule's shell; `ray` must be on PATH, the env activated):
#   ray_on_slurm.sh --logs DIR [--nodes N] [--single-host] -- DRIVER COMMAND...
#     --logs DIR      required: per-node `ray start` logs (ray-<i>-<node>.log) and launcher.log go here
#     --nodes N       expected node count; the launcher fails (exit 2) when the job has another number
#     --single-host   no Slurm: start N emulated Ray nodes on this host (plain processes instead of srun steps);
#                     the CPU rehearsal uses it where no Slurm is running
#   Exit status: the driver's; 2 bad arguments / not in a Slurm job / wrong node count; 3 a Ray node failed to start.
#
# How (docs/design.md#ray-inside-one-slurm-job):
#   - node list: `scontrol show hostnames` of `squeue -j $SLURM_JOB_ID -o %N` (snakemake's jobstep plugin strips
#     SLURM_JOB_NODELIST from the rule's environment; SLURM_JOB_NODELIST is used when present);
#   - head on node 0, workers on the others, each `ray start --block` in its own `srun --overlap` step named
#     ray_node_<i> (--block keeps every Ray process inside the step; --overlap lets the driver's steps share nodes);
#   - a node counts as up when its log says "Ray runtime started"; the driver runs here (the batch step, on the head
#     node) with RAY_ADDRESS exported, in the background so that TERM/INT (scancel, time limit) reach the trap;
#   - teardown on exit, failure or cancellation: SIGTERM to the node steps (scancel -s TERM <job>.<step>, falling back
#     to the srun clients), then SIGKILL after RAY_STOP_TIMEOUT, then every leftover process of the launch on each
#     host (what Ray started carries RAY_SLURM_RAY in its environment: sweep), then the per-job temp dirs are removed;
#   - `ray start` runs through a shim that ignores a second SIGTERM (Slurm sends two at a time limit, and a second
#     one deadlocks `ray start --block` in Ray 2.55); RAY_SLURM_SIGTERM_ONCE=0 runs plain `ray start`;
#   - every node step gets the node's CPUs (--cpus-per-task, --cpu-bind=none): the jobstep plugin strips
#     SLURM_CPUS_PER_TASK from the rule's environment, and without them a step is bound to one CPU on clusters that
#     constrain cores; Ray gets --num-cpus and --num-gpus explicitly (its autodetection reads the whole machine);
#   - emulated clusters (several Slurm nodes on one host, as in CI): decided from THIS job's nodes only (two of them
#     resolving to one NodeAddr), never from the cluster-wide node list; each node gets its own --temp-dir, port
#     block and loopback IP 127.0.0.<2+i>. The slurm profile's clusters are real: set RAY_SLURM_EMULATED=0 there.
# Environment knobs: RAY_NUM_CPUS (default: the job's CPUs per task, else the node's CPUTot, else nproc),
#   RAY_NUM_GPUS (default: entries of CUDA_VISIBLE_DEVICES), RAY_START_TIMEOUT (180 s),
#   RAY_STOP_TIMEOUT (30 s), RAY_SLURM_EMULATED (auto|1|0), RAY_PORT_BASE (emulated: 20000 + k * 1250 for the first of 10 blocks, from the job id on,
#   that no other launch on this host holds), RAY_PORT_LOCK_DIR (/tmp: where those blocks' locks live),
#   RAY_OBJECT_STORE_MEMORY (emulated: 268435456), RAY_EXTRA_START_ARGS, RAY_SLURM_KEEP_TMP=1,
#   RAY_SLURM_IFACE (real clusters: bind every Ray node, and reach the head, on this interface's IPv4 address, e.g.
#   ib0, instead of the Slurm NodeAddr, which is often the management Ethernet; each node reads its own address).
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "ray_on_slurm: $*" >&2; exit 2; }

logs="" expected="" single_host=0
while (($#)); do
  case "$1" in
    --single-host) single_host=1; shift ;;
    --logs) [[ $# -ge 2 ]] || usage; logs=$2; shift 2 ;;
    --nodes) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--nodes needs a positive integer"; expected=$2; shift 2 ;;
    --) shift; break ;;
    __node) shift; break ;;  # internal: this process is one node's step (see node_main)
    -h|--help) usage ;;
    *) die "unknown argument '$1' (usage: ray_on_slurm.sh --logs DIR [--nodes N] -- COMMAND...)" ;;
  esac
done

# ------------------------------------------------------------------------------------------- cleanup
# Every process Ray starts for node i of this launch carries RAY_SLURM_RAY=<launch id>/<i> in its environment (set
# only for `ray start`, so the launcher's own helpers do not). Ray does not reap all of its descendants when it
# stops: vLLM engine cores and their workers were seen outliving a clean stop (12 GB of orphans after two runs on
# one host), and a linuxproc Slurm misses re-parented ones too. `sweep PATTERN` SIGKILLs what is left on this host:
# a node step sweeps its own node once Ray has stopped, the launcher every node of the launch at the very end.
sweep() {  # $1: a grep pattern for the value after RAY_SLURM_RAY=
  local p
  [[ -n ${RAY_SLURM_LAUNCH:-} ]] || return 0
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    grep -qzx "RAY_SLURM_RAY=$1" "/proc/$p/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  return 0
}

# ------------------------------------------------------------------------------------------- one node's step
iface_ip() {  # the IPv4 address of network interface $1 on this host (empty if none)
  ip -4 -o addr show dev "$1" 2>/dev/null | awk '{print $4; exit}' | cut -d/ -f1
}

node_main() {  # env: RAY_SLURM_NODE_ARGS (the ray start arguments), RAY_SLURM_NODE_IFACE
  local pid addr
  read -r -a args <<<"$RAY_SLURM_NODE_ARGS"
  if [[ -n ${RAY_SLURM_NODE_IFACE:-} ]]; then  # bind on the chosen interface of THIS node
    addr=$(iface_ip "$RAY_SLURM_NODE_IFACE")
    [[ -n $addr ]] || { echo "ray_on_slurm: $(hostname) has no IPv4 address on $RAY_SLURM_NODE_IFACE (RAY_SLURM_IFACE)" >&2; exit 3; }
    args+=("--node-ip-address=$addr")
  fi
  export RAY_SLURM_RAY=${RAY_SLURM_LAUNCH:-}/${RAY_SLURM_NODE_INDEX:-0}  # inherited by Ray's processes only (sweep)
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
  trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" || true; sweep "$RAY_SLURM_RAY"; exit 0' TERM INT
  wait "$pid"
}
if [[ ${RAY_SLURM_NODE_ARGS:-} != "" && $# -eq 0 ]]; then node_main; exit $?; fi

# ------------------------------------------------------------------------------------------- checks
[[ -n $logs ]] || die "--logs DIR is required"
(($#)) || die "no driver command after --"
if ((single_host)); then
  job=local$$
else
  job=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
  [[ -n $job ]] || die "not inside a Slurm job (SLURM_JOB_ID is unset; --single-host runs without Slurm)"
fi
command -v ray >/dev/null || die "ray is not on PATH (activate the training environment first)"
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
exec > >(tee -a "$logs/launcher.log") 2>&1
export RAY_SLURM_LAUNCH="$job-$$-$RANDOM"  # after tee: the log writer must outlive the sweep

if ((single_host)); then
  nodes=()
  for ((i = 0; i < ${expected:-1}; i++)); do nodes+=("local$i"); done
else
  nodelist=${SLURM_JOB_NODELIST:-$(squeue -h -j "$job" -o %N)}
  mapfile -t nodes < <(scontrol show hostnames "$nodelist")
  ((${#nodes[@]})) || die "no nodes found for job $job (node list '$nodelist')"
  if [[ -n $expected && ${#nodes[@]} -ne $expected ]]; then
    die "expected $expected nodes, job $job has ${#nodes[@]}: ${nodes[*]}"
  fi
fi

node_field() {  # field $2 (e.g. NodeAddr, CPUTot) of Slurm node $1
  scontrol show node "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
node_addr() {  # the address Ray should bind on node $1 (NodeAddr resolved to an IPv4 address)
  local addr
  addr=$(node_field "$1" NodeAddr)
  addr=${addr:-$1}
  # ahostsv4, not hosts: glibc's `getent hosts` answers with an IPv6 record first where a node has one, and Ray's
  # --node-ip-address / --address=<ip>:<port> need the IPv4 form
  getent ahostsv4 "$addr" 2>/dev/null | awk '{print $1; exit}' || true
}

emulated=${RAY_SLURM_EMULATED:-auto}
if ((single_host)); then
  emulated=1
elif [[ $emulated == auto ]]; then  # two nodes of THIS job on one address = one host pretending to be a cluster
  emulated=0
  if ((${#nodes[@]} > 1)); then
    for n in "${nodes[@]}"; do addr=$(node_addr "$n"); echo "${addr:-$n}"; done | sort | uniq -d | grep -q . && emulated=1
  fi
fi

# CPUs Ray may use on each node: explicit, else what the job holds per task (one task per node), else the node's
cpus=${RAY_NUM_CPUS:-}
if [[ -z $cpus ]] && ((!single_host)); then
  cpus=$(scontrol show job "$job" 2>/dev/null | tr ' ' '\n' | sed -n 's|^CPUs/Task=||p' | head -1)
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || cpus=$(node_field "${nodes[0]}" CPUTot)
fi
[[ $cpus =~ ^[1-9][0-9]*$ ]] || cpus=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS

job_number=${job//[^0-9]/}
# Emulated launches share one host's loopback addresses, so each needs its own port block. Derived from the job id
# alone, two concurrent jobs (e.g. 21 and 31 with 10 blocks) took the same ports and the second head failed to start.
# A block is held with flock on $RAY_PORT_LOCK_DIR/ray_ports_<k>.lock (default /tmp) for the launcher's lifetime,
# released even on SIGKILL. The blocks (20000-32499) stay below Linux's ephemeral ports (32768-60999 by default):
# a block in that range lost its head port to any process's outgoing connection ("Failed to start GCS ... port
# 33750 ... Address already in use", seen in CI); and above the local Slurm's slurmd ports (17001-17009 in CI),
# which took a block's dashboard port when the blocks began at 12000.
port_blocks=10 port_block_size=1250 port_first=20000
claim_port_block() {  # sets port_base; the lock's descriptor stays open in this shell (and what it starts)
  local t k
  for ((t = 0; t < port_blocks; t++)); do
    k=$(((job_number + t) % port_blocks))
    exec {port_lock_fd}>"${RAY_PORT_LOCK_DIR:-/tmp}/ray_ports_$k.lock"
    if flock -n "$port_lock_fd"; then port_base=$((port_first + k * port_block_size)); return 0; fi
    exec {port_lock_fd}>&-
  done
  die "no free Ray port block on this host: $port_blocks emulated launches hold ${RAY_PORT_LOCK_DIR:-/tmp}/ray_ports_*.lock"
}
port_base=${RAY_PORT_BASE:-20000}
if [[ -z ${RAY_PORT_BASE:-} ]] && ((emulated)); then claim_port_block; fi
if ((emulated)); then
  head_ip=127.0.0.2 head_port=$port_base
elif [[ -n ${RAY_SLURM_IFACE:-} ]]; then  # the launcher runs on the head node (the batch step)
  head_ip=$(iface_ip "$RAY_SLURM_IFACE") head_port=6379
  [[ -n $head_ip ]] || die "the head node $(hostname) has no IPv4 address on $RAY_SLURM_IFACE (RAY_SLURM_IFACE)"
else
  head_ip=$(node_addr "${nodes[0]}"); head_ip=${head_ip:-${nodes[0]}} head_port=6379
fi
node_iface=""
((emulated)) || node_iface=${RAY_SLURM_IFACE:-}
gpus=${RAY_NUM_GPUS:-}
if [[ -z $gpus && -n ${CUDA_VISIBLE_DEVICES:-} ]]; then gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi

start_args() {  # ray start arguments of node $1 (index), name $2
  local i=$1 name=$2 b a
  a="start --block --disable-usage-stats --resources={\"slurm_node_$name\":1} --num-cpus=$cpus"
  [[ -n $gpus ]] && a+=" --num-gpus=$gpus"
  if ((emulated)); then
    b=$((port_base + 50 + 100 * i))
    a+=" --temp-dir=/tmp/ray_${job}_$i --node-ip-address=127.0.0.$((2 + i))"
    a+=" --node-manager-port=$b --object-manager-port=$((b + 1)) --dashboard-agent-listen-port=$((b + 2))"
    a+=" --dashboard-agent-grpc-port=$((b + 3)) --runtime-env-agent-port=$((b + 4)) --metrics-export-port=$((b + 5))"
    a+=" --min-worker-port=$((b + 10)) --max-worker-port=$((b + 99))"
    a+=" --object-store-memory=${RAY_OBJECT_STORE_MEMORY:-268435456}"
  elif [[ -z $node_iface ]]; then  # with RAY_SLURM_IFACE each node step adds its own address
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
  steps=""
  ((single_host)) || steps=$(squeue -h -s -j "$job" -o '%i %j' 2>/dev/null | awk '$2 ~ /^ray_node_/ {print $1}' || true)
  if [[ -n $steps ]]; then
    # shellcheck disable=SC2086
    scancel -s TERM $steps 2>/dev/null || true
  else
    for pid in "${srun_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  fi
  deadline=$((SECONDS + ${RAY_STOP_TIMEOUT:-30}))
  for pid in "${srun_pids[@]}" $driver_pid; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5 || true; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  for pid in "${srun_pids[@]}" $driver_pid; do wait "$pid" 2>/dev/null || true; done  # not a bare wait: tee
  sweep "$RAY_SLURM_LAUNCH/[0-9]*"  # what Ray left on this host (each node step swept its own node)
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
  if ((single_host)); then
    RAY_SLURM_NODE_INDEX=$i RAY_SLURM_NODE_ARGS=$(start_args "$i" "$name") "$self" __node >"$logs/ray-$i-$name.log" 2>&1 &
  else
    RAY_SLURM_NODE_IFACE=$node_iface RAY_SLURM_NODE_INDEX=$i RAY_SLURM_NODE_ARGS=$(start_args "$i" "$name") srun --overlap --nodes=1 --ntasks=1 \
      --cpus-per-task="$cpus" \
      --cpu-bind=none -w "$name" --job-name="ray_node_$i" --output="$logs/ray-$i-$name.log" "$self" __node &
  fi
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

[[ -n $gpus ]] || echo "ray_on_slurm: warning: no GPU count (RAY_NUM_GPUS unset, CUDA_VISIBLE_DEVICES empty): Ray autodetects"
echo "ray_on_slurm: job $job, nodes ${nodes[*]}, head ${nodes[0]} at $head_ip:$head_port (emulated=$emulated," \
  "$cpus CPUs and ${gpus:-autodetected} GPUs per node)"
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

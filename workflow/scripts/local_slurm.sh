#!/usr/bin/env bash
# local_slurm.sh -- a real Slurm on ONE Debian host, for CI and development of the slurm profile.
#
# Debian's slurm-wlm (22.05) is built with MULTIPLE_SLURMD, so every emulated node is its own slurmd process on
# this host: GPU nodes gpu01..gpuNN (partition h100, 8 fake H100 each: gres File= symlinks to /dev/null, which
# Slurm accepts as character devices) and one CPU node cpu01 (partition cpu). slurmdbd + MariaDB give `sacct`,
# which the executor plugin uses for job status (without accounting it hangs after failed status queries).
# No systemd is assumed: daemons are started by hand and stopped by their PID files only.
#
# Usage (root):  local_slurm.sh start    install what is missing, (re)configure, start, smoke-test (idempotent)
#                local_slurm.sh stop     stop the daemons this script started (PID files), packages stay
#                local_slurm.sh status   daemons and nodes
# Env: LOCAL_SLURM_GPU_NODES (8), LOCAL_SLURM_GPUS_PER_NODE (8), LOCAL_SLURM_GPU_TYPE (h100),
#      LOCAL_SLURM_CPUS (16), LOCAL_SLURM_MEM_MB (64000): what each emulated node advertises (config_overrides).
set -euo pipefail

GPU_NODES=${LOCAL_SLURM_GPU_NODES:-8}
GPUS_PER_NODE=${LOCAL_SLURM_GPUS_PER_NODE:-8}
GPU_TYPE=${LOCAL_SLURM_GPU_TYPE:-h100}
CPUS=${LOCAL_SLURM_CPUS:-16}
MEM_MB=${LOCAL_SLURM_MEM_MB:-64000}
CLUSTER=ci
HOST=$(hostname -s)
ETC=${LOCAL_SLURM_ETC:-/etc/slurm}
MARKER="# written by workflow/scripts/local_slurm.sh"
STATE=/var/lib/slurm
LOGDIR=/var/log/slurm
FAKE_GPUS=$STATE/fake_gpus
DB_PASS=slurmci # throw-away password of a database that only listens on 127.0.0.1
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
PIDFILES=(/run/slurmd-*.pid /run/slurmctld.pid /run/slurmdbd.pid /run/mysqld/mysqld.pid /run/munge/munged.pid)

T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
log() { echo "[local_slurm +$(elapsed)s] $*"; }
die() {
  echo "[local_slurm] ERROR: $*" >&2
  exit 1
}

node_names() {
  local i
  for ((i = 1; i <= GPU_NODES; i++)); do printf 'gpu%02d ' "$i"; done
  echo cpu01
}

alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# SIGTERM every daemon named by the given PID files at once (sequential stops take 10x longer), wait, SIGKILL
# what is left. Only processes recorded in our PID files are touched.
stop_pidfiles() {
  local f p i any pids=()
  for f in "$@"; do
    [[ -e $f ]] || continue
    if alive "$f"; then
      pids+=("$(cat "$f")")
      kill "$(cat "$f")" 2>/dev/null || true
    fi
  done
  for ((i = 0; i < 100; i++)); do
    any=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && any=1; done
    ((any)) || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null; done
  for f in "$@"; do rm -f "$f"; done
  return 0
}

# exit 0 only when the running controller is the one this script started: its configuration is ours (a site's Slurm
# on a login node answers `scontrol ping` too, and must never get the rehearsal's jobs)
owned() {
  local first running
  alive /run/slurmctld.pid || return 1
  [[ -f $ETC/slurm.conf ]] || return 1
  read -r first <"$ETC/slurm.conf"
  [[ $first == "$MARKER"* ]] || return 1
  running=$(scontrol show config 2>/dev/null) || return 1 # captured whole: grep -q on a pipe would SIGPIPE it
  grep -Eq "^ClusterName += $CLUSTER\$" <<<"$running"
}

status() {
  local f
  for f in "${PIDFILES[@]}"; do
    [[ -e $f ]] || continue
    if alive "$f"; then echo "running $(cat "$f") $f"; else echo "dead    $f"; fi
  done
  sinfo -N -o '%N %P %T %c %m %G' 2>/dev/null || echo "controller not reachable"
}

install_packages() {
  local p missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
  log "installing ${missing[*]}"
  # containers deny service starts during apt (policy-rc.d); the daemons are started below by hand
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  log "packages installed"
}

write_configs() { # sets CHANGED=1 when a file's content changed
  local last ports gpu_nodes conf gres dbd
  last=$(printf '%02d' "$GPU_NODES")
  gpu_nodes="gpu[01-$last]"
  ports="[17001-$((17000 + GPU_NODES))]"
  ((GPU_NODES == 1)) && { gpu_nodes=gpu01; ports=17001; }
  conf=$(
    cat <<EOF
$MARKER: a local CI Slurm, every node emulated on host $HOST
ClusterName=$CLUSTER
SlurmctldHost=$HOST
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd-%n.log
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# impossible requests fail at sbatch time instead of pending forever
EnforcePartLimits=ALL
MinJobAge=600
KillWait=30
# nodes advertise more CPUs and memory than the host has (tiny CI jobs oversubscribe it)
SlurmdParameters=config_overrides
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
NodeName=$gpu_nodes NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$ports CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:$GPU_TYPE:$GPUS_PER_NODE State=UNKNOWN
NodeName=cpu01 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((17001 + GPU_NODES)) CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=$GPU_TYPE Nodes=$gpu_nodes Default=YES MaxTime=INFINITE State=UP
PartitionName=cpu Nodes=cpu01 MaxTime=INFINITE State=UP
EOF
  )
  gres=$(
    cat <<EOF
AutoDetect=off
NodeName=$gpu_nodes Name=gpu Type=$GPU_TYPE File=$FAKE_GPUS/nvidia[0-$((GPUS_PER_NODE - 1))]
EOF
  )
  dbd=$(
    cat <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
LogFile=$LOGDIR/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  )
  CHANGED=0
  put "$ETC/slurm.conf" "$conf" 644
  put "$ETC/gres.conf" "$gres" 644
  put "$ETC/slurmdbd.conf" "$dbd" 600
}

put() { # path content mode
  if [[ ! -f $1 || "$(cat "$1")" != "$2" ]]; then
    printf '%s\n' "$2" >"$1"
    CHANGED=1
  fi
  chmod "$3" "$1"
}

start_database() {
  if ! alive /run/mysqld/mysqld.pid; then
    mkdir -p /run/mysqld
    chown mysql:mysql /run/mysqld
    [[ -d /var/lib/mysql/mysql ]] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --pid-file=/run/mysqld/mysqld.pid \
      --innodb-buffer-pool-size=64M --log-error="$LOGDIR/mariadb.log" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 120); do
      mysqladmin ping >/dev/null 2>&1 && break
      sleep 0.25
    done
    mysqladmin ping >/dev/null 2>&1 || die "MariaDB did not start (see $LOGDIR/mariadb.log)"
    log "mariadb started"
  fi
  mysql -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
            CREATE DATABASE IF NOT EXISTS slurm_acct_db;
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  if ! alive /run/slurmdbd.pid; then
    /usr/sbin/slurmdbd
    for _ in $(seq 80); do
      sacctmgr -n list cluster >/dev/null 2>&1 && break
      sleep 0.25
    done
    log "slurmdbd started"
  fi
  sacctmgr -n list cluster format=cluster%30 2>/dev/null | grep -qw "$CLUSTER" ||
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
}

start_slurm() {
  local n want up
  if ! alive /run/slurmctld.pid; then
    /usr/sbin/slurmctld -i
    for _ in $(seq 80); do
      scontrol ping 2>/dev/null | grep -q UP && break
      sleep 0.25
    done
    log "slurmctld started"
  fi
  for n in $(node_names); do alive "/run/slurmd-$n.pid" || /usr/sbin/slurmd -N "$n"; done
  want=$(node_names | wc -w)
  up=0
  for i in $(seq 120); do
    up=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 ~ /^(idle|mixed|allocated)$/ {print $1}' | sort -u | wc -l)
    ((up >= want)) && break
    # nodes drained by an earlier layout come back once
    ((i == 20)) && { scontrol update nodename=ALL state=resume >/dev/null 2>&1 || true; }
    sleep 0.25
  done
  ((up >= want)) || {
    sinfo -N
    die "only $up of $want nodes usable (see $LOGDIR/slurmd-*.log)"
  }
  log "$want nodes up: $(sinfo -h -o '%P=%D' | tr '\n' ' ')"
}

smoke_test() {
  local jid state=""
  jid=$(sbatch --parsable -p "$GPU_TYPE" --gres="gpu:$GPU_TYPE:1" -t 1 --mem=100 -o /dev/null \
    --wrap 'test -n "$CUDA_VISIBLE_DEVICES"')
  for _ in $(seq 150); do
    state=$(sacct -n -X -j "$jid" -o State 2>/dev/null | tr -d ' ' || true)
    [[ $state == COMPLETED || $state == FAILED ]] && break
    sleep 0.2
  done
  [[ $state == COMPLETED ]] || die "smoke-test job $jid: sacct state '$state'"
  log "smoke test job $jid COMPLETED in sacct; ready"
}

start() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (installs packages, writes /etc/slurm, starts daemons)"
  install_packages
  getent hosts "$HOST" >/dev/null || echo "127.0.0.1 $HOST" >>/etc/hosts
  mkdir -p "$ETC" "$STATE/slurmctld" "$LOGDIR" "$FAKE_GPUS" /run/munge
  local n g
  for n in $(node_names); do mkdir -p "$STATE/slurmd/$n"; done
  chown munge:munge /run/munge
  if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
  fi
  for ((g = 0; g < GPUS_PER_NODE; g++)); do ln -sfn /dev/null "$FAKE_GPUS/nvidia$g"; done
  write_configs
  if ((CHANGED)); then
    log "configuration changed: restarting Slurm daemons"
    stop_pidfiles /run/slurmd-*.pid /run/slurmctld.pid /run/slurmdbd.pid
    # the node layout may differ; job_state stays so job ids keep increasing (slurmdbd keys on them)
    rm -f "$STATE"/slurmctld/node_state* "$STATE"/slurmctld/part_state*
  fi
  alive /run/munge/munged.pid || { runuser -u munge -- /usr/sbin/munged --force && log "munged started"; }
  start_database
  start_slurm
  smoke_test
}

case "${1:-start}" in
start) start ;;
stop)
  stop_pidfiles "${PIDFILES[@]}"
  log "stopped"
  ;;
status) status ;;
owned) owned ;;
*) die "usage: $0 start|stop|status|owned" ;;
esac

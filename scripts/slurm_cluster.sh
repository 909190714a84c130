#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine (slurmctld + slurmd + munged, Debian's
# slurm-wlm and munge), private to one folder: for CI (scripts/ci_slurm.sh) and for trying
# executor=slurm on a laptop.
#
#   source <(bash scripts/slurm_cluster.sh start DIR)   # prints the exports clients need
#   bash scripts/slurm_cluster.sh stop DIR
#
# Everything lives under DIR: its own munge key and socket, slurm.conf, state, logs and
# pid files, and free loopback ports, so it never touches (nor is touched by) a Slurm or
# munge already configured on the machine. The node is this machine, named "pgarena",
# with two partitions: "debug" (the default, no time limit) and "short" (2 minutes, for
# the time-limit check). Clients find it through SLURM_CONF (printed by start).
# Processes run with proctrack/linuxproc and no task plugin: no cgroups needed, so it
# works inside a container. Needs root (slurmd starts jobs as their user).
set -euo pipefail
cmd="${1:-}"
DIR="${2:-}"
if [ -z "$cmd" ] || [ -z "$DIR" ]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

stop_pidfile() {   # stop the daemon whose pid is in $1 (only that one), waiting up to 20 s
    local pid
    [ -f "$1" ] || return 0
    pid="$(cat "$1" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}

if [ "$cmd" = stop ]; then
    # jobs first (their processes are slurmd's children), then the daemons
    if [ -f "$DIR/slurm.conf" ] && [ -f "$DIR/slurmctld.pid" ]; then
        SLURM_CONF="$DIR/slurm.conf" timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    fi
    stop_pidfile "$DIR/slurmd.pid"
    stop_pidfile "$DIR/slurmctld.pid"
    stop_pidfile "$DIR/munged.pid"
    exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol; do
    command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin"
    command -v "$tool" >/dev/null 2>&1 || {
        echo "slurm_cluster: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done

free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
USER_NAME="$(id -un)"
mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
chmod 700 "$DIR/munge"

# munge: a key of this cluster only, a socket of its own
[ -f "$DIR/munge/munge.key" ] || mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null 2>&1 \
    || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$DIR/munge/munge.key"
SOCKET="$DIR/munge/munge.socket"
munged --force --socket="$SOCKET" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" --num-threads=2

cat > "$DIR/slurm.conf" <<EOF
ClusterName=pgarena
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$USER_NAME
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$SOCKET,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
# Schedule every 2 s (defaults: 30-60 s): a requeued task starts again within seconds.
SchedulerParameters=bf_interval=2,sched_interval=2
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
KillWait=5
InactiveLimit=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=pgarena NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=pgarena Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=short Nodes=pgarena Default=NO MaxTime=2 State=UP
EOF
# Slurm >= 23.02 loads a cgroup plugin even with proctrack/linuxproc unless told not to (22.05
# has no "disabled" and needs no cgroup.conf).
version="$(slurmd -V | awk '{print $2}')"
if [ "$(printf '%s\n23.02\n' "$version" | sort -V | head -1)" = 23.02 ]; then
    printf 'CgroupPlugin=disabled\n' > "$DIR/cgroup.conf"
else
    rm -f "$DIR/cgroup.conf"
fi
export SLURM_CONF="$DIR/slurm.conf"

slurmctld -i -f "$SLURM_CONF" >> "$DIR/log/slurmctld.stdout" 2>&1
slurmd -N pgarena -f "$SLURM_CONF" >> "$DIR/log/slurmd.stdout" 2>&1

# ready when the node is idle
for i in $(seq 1 60); do
    state="$(sinfo -h -n pgarena -o %T 2>/dev/null | head -1 || true)"
    case "$state" in idle*|mixed*|allocated*) break ;; esac
    if [ "$i" = 60 ]; then
        echo "slurm_cluster: the node did not come up (state: ${state:-none}); logs in $DIR/log:" >&2
        tail -20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
        exit 1
    fi
    [ "$state" = "down" ] || [ "$state" = "drained" ] && scontrol update nodename=pgarena state=resume >/dev/null 2>&1 || true
    sleep 1
done
echo "export SLURM_CONF=$SLURM_CONF"

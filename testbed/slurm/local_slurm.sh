#!/usr/bin/env bash
# A real Slurm on this machine, for tests: munged, slurmctld and one slurmd (node "localhost", 127.0.0.1) from
# Debian's slurm-wlm and munge, each with its own key, sockets, ports, state and logs in DIR; nothing under /etc
# is touched and nothing listens beyond loopback. Needs root (slurmd runs the jobs' tasks as their users).
#
#   local_slurm.sh up DIR      start it; prints `export SLURM_CONF=DIR/slurm.conf` for the clients (srun, sbatch)
#   local_slurm.sh down DIR    stop every daemon it started (their pid files are in DIR)
#   local_slurm.sh check       exit 0 if it can run here, else print why (a "SKIPPED:" line) and exit 77
set -euo pipefail

check() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: a local Slurm needs root (slurmd starts the tasks)"
    exit 77
  fi
  local missing=()
  for tool in slurmctld slurmd munged srun sbatch scontrol squeue; do
    command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "SKIPPED: no ${missing[*]} here [missing: slurm-wlm munge]"
    exit 77
  fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s; fails with the daemons' logs after SECONDS.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "local_slurm: $what did not happen within $seconds s" >&2
      tail -n 20 "$dir"/*.log >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

up() {
  check
  export PATH=$PATH:/usr/sbin
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
  cat >"$dir/slurm.conf" <<EOF
ClusterName=megascale-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
KillWait=10
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=1024 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=30 State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" -i
  wait_for 30 "slurmctld answering" scontrol ping
  slurmd -f "$SLURM_CONF" -N localhost
  wait_for 30 "node localhost idle" bash -c "sinfo -h -n localhost -o %t | grep -q idle"
  echo "export SLURM_CONF=$SLURM_CONF"
}

down() {
  for daemon in slurmd slurmctld munged; do
    local pid_file=$dir/$daemon.pid
    [ -s "$pid_file" ] || continue
    local pid
    pid=$(cat "$pid_file")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}

case ${1:-} in
  check) check ;;
  up) dir=$(realpath "${2:?usage: local_slurm.sh up DIR}"); up ;;
  down) dir=$(realpath "${2:?usage: local_slurm.sh down DIR}"); down ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac

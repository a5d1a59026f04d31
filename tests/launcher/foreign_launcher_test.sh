#!/usr/bin/env bash
# The same binary under other launchers' environments: starts N processes by hand with the variables that
# torchrun, srun or mpirun would set (rank 0 serves the store at MASTER_ADDR:MASTER_PORT) and expects all
# of them to pass. Usage: foreign_launcher_test.sh torchrun|slurm|openmpi N program [args...]
set -euo pipefail
style=$1 n=$2
shift 2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
export MEGASCALE_JOB_SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
for ((r = 0; r < n; r++)); do
  case $style in
    torchrun) env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n TORCHELASTIC_RUN_ID=test "$@" & ;;
    slurm) env SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SLURM_NTASKS_PER_NODE=$n SLURM_JOB_ID=1 "$@" & ;;
    openmpi) env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r \
               OMPI_COMM_WORLD_LOCAL_SIZE=$n "$@" & ;;
    *) echo "unknown style $style" >&2; exit 2 ;;
  esac
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status

#!/usr/bin/env bash
# The real Open MPI mpirun (Debian's openmpi-bin) starts a megascale program with nothing else set: no
# MASTER_ADDR, no MEGASCALE_STORE, no secret. Rank 0 hands the others its store through mpirun's PMIx server
# and the collectives must be right. Open MPI's runtime stays on loopback. Skips (exit 77) without mpirun.
# Usage: mpirun_test.sh N program [args...]
set -euo pipefail
n=$1
shift
if ! command -v mpirun >/dev/null; then
  echo "SKIPPED: mpirun not found [missing: openmpi-bin]"
  exit 77
fi
unset MASTER_ADDR MASTER_PORT MEGASCALE_STORE MEGASCALE_JOB_SECRET MEGASCALE_UNIQUE_ID
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
forward=()
for v in $(env | grep -o '^MEGASCALE_[A-Z_]*'); do forward+=(-x "$v"); done
exec timeout 240 mpirun -np "$n" --oversubscribe --bind-to none --mca oob_tcp_if_include lo \
  --mca btl_tcp_if_include lo "${forward[@]}" "$@"

#!/usr/bin/env bash
# megascale-run across "nodes" of a Slurm allocation, without Slurm: two megascale-run started with the variables
# srun gives one task per node of a 2-node job (node names both localhost, so all traffic stays on loopback).
# Node 0's megascale-run serves the store at the port both derive; neither is told the world size, its rank
# offset, the store or the job id; the 2 x N ranks pass collective_check. Then the batch script of that job
# (no step) is refused with the srun line to use.
# Usage: slurm_nodes_test.sh MEGASCALE_RUN RANKS_PER_NODE PROGRAM [args...]
set -euo pipefail
run=$1 per_node=$2
shift 2
job=$((RANDOM * 32768 + RANDOM))
export MEGASCALE_JOB_SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
common=(SLURM_JOB_ID=$job SLURM_JOB_NODELIST=localhost,localhost SLURM_NNODES=2 SLURM_NTASKS_PER_NODE=$per_node)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
last=$((2 * per_node - 1))
# both_nodes [megascale-run options]: the two nodes' megascale-run side by side; both must end well.
both_nodes() {
  local pids=() node
  for node in 0 1; do
    env "${common[@]}" SLURM_NODEID=$node SLURM_STEP_ID=0 SLURM_PROCID=$node "$run" "$@" "${program[@]}" \
      >"$out/$node.log" 2>&1 &
    pids+=($!)
  done
  for node in 0 1; do wait "${pids[$node]}" || { status=1; echo "FAIL ($*): node $node's megascale-run failed"; }; done
  cat "$out/0.log" "$out/1.log"
  grep -q "Slurm job $job (run 0): node 0 (localhost) of 2, ranks 0-$((per_node - 1)) of $((2 * per_node)), store tcp://localhost:[0-9]* served here" "$out/0.log" ||
    { status=1; echo "FAIL ($*): node 0 did not serve the store for ranks 0-$((per_node - 1))"; }
  grep -q "node 1 (localhost) of 2, ranks $per_node-$last of $((2 * per_node))" "$out/1.log" ||
    { status=1; echo "FAIL ($*): node 1 did not take ranks $per_node-$last"; }
}
program=("$@")
both_nodes
# With restarts the two megascale-run are executors driven through node 0's store, which must outlive node 0's
# own ranks until node 1 has read the job's end.
job=$((job + 1))
common[0]=SLURM_JOB_ID=$job
both_nodes --max-restarts 1
if env "${common[@]}" SLURM_NODEID=0 "$run" "${program[@]}" >"$out/batch.log" 2>&1; then
  status=1
  echo "FAIL: megascale-run in a 2-node job's batch script started alone"
fi
grep -q "start one per node (srun -N 2 -n 2 megascale-run ...)" "$out/batch.log" ||
  { status=1; echo "FAIL: the batch script's megascale-run did not say how to start it:"; cat "$out/batch.log"; }
exit $status

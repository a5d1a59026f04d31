# What the benchmarks across emulated hosts share (source after testbed/emulated_cluster.sh; needs $build):
#   median              the median of the numbers on stdin
#   busbw FILE FACTOR   GB/s of the first out-of-place row of an nccl-tests table: size / time x FACTOR
#   ratio A B           A / B with two decimals ("n/a" when B is 0); verdict V T: PASS when V >= T
#   bench_start NAME [roce]  skip (77) without root, fail (2) when asked for the emulated RoCE device and $build
#                       has none; then a fresh job secret, $tmp, and an EXIT trap removing the store, $tmp, the cluster
#   start_store         a megascale-store inside host 0 on a fresh port ($store_port; $store_pid)
#   ours PER_HOST OUTPUT PROGRAM ARGS...  one megascale-run per host, PER_HOST ranks each; host 0's output in
#                       OUTPUT, host i's in OUTPUT.host<i>
#   failure_tails OUTPUT   the last lines of every host's output of that run (what failed, and where)
store_port=${store_port:-29800} run_id=${run_id:-0}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# (the table's own busbw column has two decimals: recomputed from its size and time)
busbw() {
  sed 's/^\[[0-9]*\] //' "$1" | awk -v f="$2" '$1 ~ /^[0-9]+$/ && NF >= 9 {printf "%.5f\n", $1 / $6 / 1e3 * f; exit}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2f" : "n/a"), (b > 0 ? a / b : 0) }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t ? "PASS" : "FAIL") }'; }

bench_start() {
  local name=$1 needs=${2:-}
  [ "$(id -u)" = 0 ] || { echo "SKIPPED: $name: the emulated cluster needs root"; exit 77; }
  if [ "$needs" = roce ] && [ ! -e "$build/testbed/roce/libibverbs.so.1" ]; then
    echo "$name: $build has no emulated RoCE device (rdma-core headers)"
    exit 2
  fi
  MEGASCALE_JOB_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  export MEGASCALE_JOB_SECRET
  tmp=$(mktemp -d)
  trap 'kill $store_pid 2>/dev/null; rm -rf "$tmp"; cluster_down' EXIT
}

start_store() {
  store_port=$((store_port + 1))
  ip netns exec "$(host_name 0)" "$build/launcher/megascale-store" --host "$(host_addr 0)" --port "$store_port" > /dev/null &
  store_pid=$!
}

ours() {
  local per_host=$1 output=$2 i pids=() status=0
  shift 2
  run_id=$((run_id + 1))
  for ((i = 0; i < EMU_HOSTS; i++)); do
    on_host "$i" "$build/launcher/megascale-run" --store "tcp://$(host_addr 0):$store_port" --job-id "mh$run_id" \
      --world-size $((EMU_HOSTS * per_host)) --rank-offset $((i * per_host)) -n "$per_host" "$@" \
      > "$([ "$i" = 0 ] && echo "$output" || echo "$output.host$i")" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || status=$?; done
  return "$status"
}

failure_tails() {
  local f
  for f in "$1" "$1".host*; do
    [ -e "$f" ] && tail -n 4 "$f" | sed "s|^|#   ${f##*/}: |"
  done
  return 0
}

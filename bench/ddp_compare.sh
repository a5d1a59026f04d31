#!/usr/bin/env bash
# megascale-train (data parallel, ZeRO-2, every overlap on) against PyTorch DistributedDataParallel (gloo,
# bucketed all-reduce overlapped with backward; bench/baselines/torch_ddp_gpt.py) on the same emulated hosts
# (testbed/emulated_cluster.sh, one rank per host, each pinned to a core of its own while there are enough),
# the same GPT and global batch, at a link rate. Prints tokens/s and exposed communication per step side by
# side, both as the step at the rate less the step with free communication (ours: unlimited links; DDP:
# no_sync). In fp32 and in bf16 mixed precision (ours --precision bf16; DDP under autocast, PyTorch's way);
# ours moves gradients and parameters in bf16 in bf16 mode (Megatron's way; DDP under autocast keeps fp32
# gradients), fp32 otherwise. Needs root.
#   PRECISIONS="fp32 bf16" bench/ddp_compare.sh [BUILD_DIR] [RATE_MBIT] [HOSTS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rate=${2:-400}
shift $(( $# >= 2 ? 2 : $# ))
host_counts=("$@")
[ ${#host_counts[@]} -gt 0 ] || host_counts=(2 4)
source testbed/emulated_cluster.sh
out=$(mktemp -d)
trap 'hosts_down; rm -rf "$out"' EXIT
cores=$(nproc)
steps=12
shape=(--layers 4 --d-model 256 --heads 4 --seq-len 128 --window 64 --batch-size 16)
text=$out/text.txt
/usr/bin/python3 -c "import random; random.seed(1); print(' '.join(random.choice(['alpha','beta','gamma','delta']) for _ in range(200000)))" > "$text"

ours() {  # ours HOSTS NAME: sets STEP_S and WAIT_S (medians over steps 3..)
  local hosts=$1 name=$2 i pids=() port=$((32000 + RANDOM % 1000))
  local secret
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  MEGASCALE_JOB_SECRET=$secret ip netns exec "${EMU_TAG}h0" "$build/launcher/megascale-store" \
    --host "$(host_addr 0)" --port "$port" > /dev/null &
  local store=$!
  sleep 0.3
  for ((i = 0; i < hosts; i++)); do
    MEGASCALE_RANKS_SHARING_CORES=$hosts MEGASCALE_JOB_SECRET=$secret ip netns exec "${EMU_TAG}h$i" \
      taskset -c $((i % cores)) "$build/launcher/megascale-run" --store "tcp://$(host_addr 0):$port" \
      --job-id "$name" --world-size "$hosts" --rank-offset "$i" -n 1 "$build/trainer/megascale-train" "${shape[@]}" \
      --steps "$steps" --threads 1 --precision "$precision" --tokenizer bytes --gemm ours-avx512 --data "$text" --log-every 1000 \
      --csv "$out/$name.csv" > "$out/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { tail -n 5 "$out/$name".*.log >&2; exit 1; }; done
  kill "$store" 2>/dev/null; wait "$store" 2>/dev/null || true
  read -r STEP_S WAIT_S < <(/usr/bin/python3 - "$out/$name.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))[2:]
print(statistics.median(float(r["step_seconds"]) for r in rows),
      statistics.median(float(r["tp_wait_s"]) + float(r["pp_wait_s"]) + float(r["dp_wait_s"]) for r in rows))
PY
)
}

ddp() {  # ddp HOSTS: sets DDP_JSON
  local hosts=$1 i pids=() port=$((33000 + RANDOM % 1000))
  for ((i = 0; i < hosts; i++)); do
    ip netns exec "${EMU_TAG}h$i" env RANK=$i WORLD_SIZE="$hosts" MASTER_ADDR="$(host_addr 0)" MASTER_PORT=$port \
      GLOO_SOCKET_IFNAME=rail0 taskset -c $((i % cores)) /usr/bin/python3 bench/baselines/torch_ddp_gpt.py \
      "${shape[@]}" --steps "$steps" --threads 1 --precision "$precision" > "$out/ddp.$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { tail -n 5 "$out"/ddp.*.log >&2; exit 1; }; done
  DDP_JSON=$(tail -n 1 "$out/ddp.0.log")
}

echo "megascale vs PyTorch DDP (gloo) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $cores cores;" \
     "model ${shape[*]}; links ${rate} Mbit/s; ours' GEMM: ours-avx512 (its bf16 kernel in bf16)"
printf "%-6s %-10s %12s %14s %12s %16s %10s %12s\n" hosts layout "ours tok/s" "DDP tok/s" "ratio" "ours exposed ms" \
  "DDP exp ms" "ratio"
for hosts in "${host_counts[@]}"; do
  hosts_down
  hosts_up "$hosts"
  for precision in ${PRECISIONS:-fp32 bf16}; do
  hosts_rate none
  ours "$hosts" "free$hosts$precision"
  free_wait=$WAIT_S free_step=$STEP_S
  hosts_rate "${rate}mbit"
  ours "$hosts" "ours$hosts$precision"
  ddp "$hosts"
  /usr/bin/python3 - "$hosts" "$STEP_S" "$WAIT_S" "$free_wait" "$free_step" "$DDP_JSON" "$precision" <<'PY'
import json, sys
hosts, step, wait, free, free_step = int(sys.argv[1]), *map(float, sys.argv[2:6])
d = json.loads(sys.argv[6])
precision = sys.argv[7]
ours_tps = 16 * 128 / step
# Measured as DDP's is: the step at the link rate less the step with communication free (unlimited links; DDP:
# no_sync). The timers' waits beyond the free run's are printed too.
ours_exposed = max(0.0, step - free_step)
timers_exposed = max(0.0, wait - free)
print(f"{hosts:<6} {'dp' + str(hosts) + ' ' + precision:<10} {ours_tps:12.0f} {d['tokens_per_s']:14.0f} {ours_tps / d['tokens_per_s']:11.2f}x "
      f"{ours_exposed * 1e3:16.1f} {d['exposed_comm_s'] * 1e3:10.1f} "
      f"{(ours_exposed / d['exposed_comm_s']) if d['exposed_comm_s'] > 0 else float('nan'):11.2f}x")
print(f"       ours: free-link step {free_step * 1e3:.0f} ms, waits beyond the free run's {timers_exposed * 1e3:.1f} ms")
print(f"       targets: ours >= 2x DDP's tokens/s; ours' exposed communication <= 0.5x DDP's "
      f"(DDP step {d['step_s'] * 1e3:.0f} ms, no_sync {d['no_sync_step_s'] * 1e3:.0f} ms; torch {d['torch']}, GEMM {d['gemm']})")
PY
  done
done

#!/usr/bin/env bash
# MegaScale's Table 3 for this machine: the 3D-parallel trainer on 2 and 4 emulated hosts (network namespaces
# through a bridge, testbed/emulated_cluster.sh), one rank per host, with each kind of overlap switched on in
# turn. The link rate (the emulated links' shaper) is picked by the script so that communication takes 30-60% of a step with every
# overlap off. Columns: step time, tokens/s, exposed communication per step (the ranks' waits beyond the
# compute-only run's, which are pipeline bubble), and the compute-only step (same layout, links unlimited)
# as the ideal. Needs root.
# Each row (and the ideal) is the best of REPEATS runs (default 3), run in rounds of one run per configuration:
# ranks time-sharing 2 cores make whole runs of one configuration differ by 10-25%, and a slow spell of the
# machine then falls on every row of a round alike instead of on one row. Pipeline traffic is marked DSCP 46 (--pp-traffic-class), which the
# emulated switch ports queue ahead of the data-parallel bulk, as a cluster's traffic classes would.
#   REPEATS=N PRECISION=fp32|bf16 HOSTS="2 4" EXTRA="FLAGS" bench/parallel_ablation.sh [BUILD_DIR] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${2:-14}
# 2 hosts: micro-batches of one sequence (as many as a pipeline needs to amortize its fill and drain) and eager
# 1F1B 2 deep: a hop then takes about a micro-batch's forward + backward at the calibrated rate, which 2 extra
# forwards in flight hide; only the fill's and drain's hops stay.
# 4 hosts: interleaved 1F1B with 2 model chunks per rank. Data parallelism's reduce-scatter can only start once
# a chunk's last backward ran, and its all-gather must end before that chunk's first forward; with one chunk
# both sit at the step's edges, with two the second chunk's traffic runs beside the first chunk's computes:
# in groups of 8 micro-batches (--microbatch-group-size) 8 of them rather than P = 2. The first chunk's pair
# stays at the edges (MegaScale §3.2: they cannot be hidden): at the calibrated rate (~290 Mbit/s) each moves
# ~0.9 MB per rank, ~25 ms, whatever the batch. So the global batch is 128 (64 micro-batches per pipeline, 32
# per pipeline stage and chunk, as a real run has many more micro-batches than stages): with 64 the edges
# were ~7% of a step and the step stayed +17% over compute-only (59% hidden); with 128, +9% (77% hidden).
# More chunks per rank (8 layers, 4 chunks of one) shrink the edges too, but doubled the pipeline's hops and
# ran +20%.
pp_extra_warmup=${PP_EXTRA_WARMUP:-2}
pp_traffic_class=184  # DSCP 46 (expedited forwarding) << 2
source testbed/emulated_cluster.sh
out=$(mktemp -d)
trap 'hosts_down; rm -rf "$out"' EXIT
[ -x "$build/trainer/megascale-train" ] || { echo "parallel_ablation: build first" >&2; exit 2; }

text=$out/text.txt
if [ -r /usr/share/doc/jargon-text/jargon.txt.gz ]; then zcat /usr/share/doc/jargon-text/jargon.txt.gz > "$text"
else /usr/bin/python3 -c "import random; random.seed(1); print(' '.join(random.choice(['alpha','beta','gamma']) for _ in range(400000)))" > "$text"; fi
cores=$(nproc)
# bf16 mixed precision by default, as MegaScale's Table 3 trains (fp32 master weights; data-parallel and
# pipeline traffic in bf16, Megatron-LM's defaults). PRECISION=fp32 trains in fp32: its data-parallel traffic,
# twice the bytes, makes the first chunk's all-gather and reduce-scatter at the step's edges twice as long.
# EXTRA: more megascale-train flags for every run.
precision=${PRECISION:-bf16}
model=(--precision "$precision" --layers 4 --d-model 256 --heads 4 --seq-len 128 --window 64 --tokenizer bytes
       --steps "$steps" --lr 1e-3 --warmup 2 --gemm ours-avx512 --log-every 1000 --data "$text")
run=0

# run_ours HOSTS NAME OVERLAP ARGS...: one rank per host; sets RESULT to the reporter's summary JSON.
run_ours() {
  local hosts=$1 name=$2 overlap=$3 i pids=() port
  shift 3
  [[ ",$overlap," != *,pp,* ]] || [ "$hosts" != 2 ] || set -- "$@" --pp-extra-warmup "$pp_extra_warmup"
  run=$((run + 1))
  port=$((31000 + run))
  local secret
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  MEGASCALE_JOB_SECRET=$secret ip netns exec "${EMU_TAG}h0" "$build/launcher/megascale-store" \
    --host "$(host_addr 0)" --port "$port" > /dev/null &
  local store=$!
  sleep 0.3
  for ((i = 0; i < hosts; i++)); do
    # Emulated hosts get cores of their own while there are enough. With more hosts than cores they float:
    # this VM's cores differ (one ran 11% slower alone, and takes most of the emulated network's softirqs), and
    # pinning put that core's deficit on one pipeline or one stage, which every other rank then waited for.
    local pin=(taskset -c $((i % cores)))
    [ "$hosts" -le "$cores" ] || pin=()
    MEGASCALE_RANKS_SHARING_CORES=$hosts MEGASCALE_JOB_SECRET=$secret MEGASCALE_TIMEOUT_MS=120000 \
      ip netns exec "${EMU_TAG}h$i" "${pin[@]}" "$build/launcher/megascale-run" \
      --store "tcp://$(host_addr 0):$port" --job-id "ab$run" --world-size "$hosts" --rank-offset "$i" -n 1 \
      "$build/trainer/megascale-train" "${model[@]}" ${EXTRA:-} --threads 1 \
      --overlap "$overlap" --pp-traffic-class "$pp_traffic_class" --summary-json "$out/$name.json" --csv "$out/$name.csv" "$@" > "$out/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  kill "$store" 2>/dev/null; wait "$store" 2>/dev/null || true
  if [ "$failed" = 1 ]; then
    echo "parallel_ablation: run $name failed:" >&2
    tail -5 "$out/$name".*.log >&2
    exit 1
  fi
  RESULT=$out/$name.json
}

field() { /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, s))" "$@"; }
# Medians over the steps after the first two (warm-up, connections) of the reporting rank's CSV: 4 ranks
# time-sharing 2 cores make single steps noisy.
median() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1].replace(".json", ".csv"))))[2:]
key = sys.argv[2]
value = (lambda r: float(r["tp_wait_s"]) + float(r["pp_wait_s"]) + float(r["dp_wait_s"])) if key == "waits" else \
        (lambda r: float(r[key]))
print(statistics.median(value(r) for r in rows))
PY
}
step_s() { median "$1" step_seconds; }
# shorter NAME: RESULT becomes the run with the shorter median step of RESULT and the best kept for NAME so far.
declare -A best_run
shorter() {
  local kept=${best_run[$1]:-}
  if [ -n "$kept" ] && /usr/bin/python3 -c "import sys; sys.exit(0 if $(step_s "$kept") <= $(step_s "$RESULT") else 1)"; then
    RESULT=$kept
  fi
  best_run[$1]=$RESULT
}
echo "megascale parallel ablation (MegaScale Table 3) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $cores cores"
echo "GEMM: ours-avx512 for every run; model: ${model[*]:0:14}"
for hosts in ${HOSTS:-2 4}; do
  if [ "$hosts" = 2 ]; then desc="pp2 x dp1, global batch 32" micro=32 layout=(--pp 2 --batch-size 32 --micro-batches 32)
  else desc="pp2 x dp2, 2 virtual stages in groups of 8, global batch 128" micro=64
    layout=(--pp 2 --virtual-stages 2 --microbatch-group-size 8 --batch-size 128 --micro-batches 64); fi
  hosts_down
  hosts_up "$hosts"
  hosts_rate none
  # Two ideal runs (rounds 1 and 2's) before calibrating: one slow run would skew the rate.
  for round in 1 2; do
    run_ours "$hosts" "ideal$hosts.$round" tp,pp,dp "${layout[@]}"
    shorter "ideal$hosts"
  done
  ideal_step=$(step_s "$RESULT")
  # The rate: communication 30-60% of a step with every overlap off, aimed at a third (the low end, where a
  # pipeline hop is still shorter than a micro-batch's compute). Communication time goes as 1 / rate, so the
  # next try scales the rate by the measured comm/compute ratio over the aimed one; accepted within 30-36%.
  rate=400 calibrated=0
  for attempt in 1 2 3 4 5 6; do
    hosts_rate "${rate}mbit"
    run_ours "$hosts" "none$hosts.$rate" none "${layout[@]}"
    share=$(/usr/bin/python3 -c "print(max(0.0, $(step_s "$RESULT") - $ideal_step) / $(step_s "$RESULT"))")
    echo "  calibration: ${rate} Mbit/s per host link: communication ${share} of a step (overlap off)"
    if /usr/bin/python3 -c "import sys; sys.exit(0 if 0.3 <= $share <= 0.36 else 1)"; then calibrated=1; break; fi
    # Clamped to 0.6-1.6x a try: single runs are noisy, and latency the rate does not scale (connection
    # setup, the pipeline's fill) keeps the share from moving quite as 1 / rate.
    rate=$(/usr/bin/python3 -c "s = min(max($share, 0.05), 0.9); print(max(10, round($rate * min(1.6, max(0.6, (s / (1 - s)) / (1 / 2))))))")
  done
  # The accepted calibration run is round 1's "none"; without one the rate below was never measured.
  [ "$calibrated" = 0 ] || shorter "row$hosts.none"
  # Rounds: each runs the ideal and every row once, so a slow spell of the machine (whole runs of one
  # configuration differ by 10-25% here) falls on all of them alike; each keeps the best of its REPEATS runs.
  for ((round = 1; round <= ${REPEATS:-3}; round++)); do
    if ((round > 2)); then
      hosts_rate none
      run_ours "$hosts" "ideal$hosts.$round" tp,pp,dp "${layout[@]}"
      shorter "ideal$hosts"
    fi
    hosts_rate "${rate}mbit"
    for overlap in none dp dp,pp dp,pp,tp tp,pp,dp; do
      ((round > 1)) || [ "$overlap" != none ] || [ "$calibrated" = 0 ] || continue
      run_ours "$hosts" "row$hosts.$overlap.$round" "$overlap" "${layout[@]}"
      shorter "row$hosts.$overlap"
    done
  done
  ideal=${best_run[ideal$hosts]}
  ideal_step=$(step_s "$ideal")
  ideal_wait=$(median "$ideal" waits)
  echo
  echo "$hosts emulated hosts, one rank each ($desc, $micro micro-batches), links ${rate} Mbit/s"
  # "over ideal" = step - compute-only step: every cost of communicating, the CPU the transfers take included;
  # "exposed (timers)" = the reporting rank's waits beyond the compute-only run's (those are pipeline bubble).
  printf "  %-22s %10s %10s %16s %14s %10s\n" overlap "step ms" "tokens/s" "exposed (timers)" "over ideal ms" "vs ideal"
  base_exposed="" base_over=""
  for row in "none:none" "+DP:dp" "+DP+PP:dp,pp" "+TP (no TP across hosts):dp,pp,tp" "all:tp,pp,dp"; do
    label=${row%%:*} overlap=${row#*:}
    json=${best_run[row$hosts.$overlap]}
    step=$(step_s "$json")
    exposed=$(/usr/bin/python3 -c "print(max(0.0, $(median "$json" waits) - $ideal_wait))")
    over=$(/usr/bin/python3 -c "print(max(0.0, $step - $ideal_step))")
    [ -n "$base_exposed" ] || base_exposed=$exposed base_over=$over
    printf "  %-22s %10.1f %10.0f %16.1f %14.1f %9.2fx\n" "$label" "$(python3 -c "print($step*1e3)")" \
      "$(python3 -c "print($(field "$json" tokens_per_step) / $step)")" "$(python3 -c "print($exposed*1e3)")" \
      "$(python3 -c "print($over*1e3)")" "$(python3 -c "print($step/$ideal_step)")"
    last_exposed=$exposed last_step=$step last_over=$over
  done
  printf "  %-22s %10.1f %10.0f %16s %14s %10s\n" "compute only (ideal)" "$(python3 -c "print($ideal_step*1e3)")" \
    "$(python3 -c "print($(field "$ideal" tokens_per_step) / $ideal_step)")" "-" "-" "1.00x"
  hidden=$(/usr/bin/python3 -c "print(1 - $last_over / $base_over if $base_over > 0 else 0)")
  hidden_timers=$(/usr/bin/python3 -c "print(1 - $last_exposed / $base_exposed if $base_exposed > 0 else 0)")
  over=$(/usr/bin/python3 -c "print($last_step / $ideal_step - 1)")
  echo "  hidden with every overlap on: $(python3 -c "print(f'{$hidden:.0%}')") of the time over compute-only" \
       "(timers: $(python3 -c "print(f'{$hidden_timers:.0%}')") of the exposed waits; target >= 70%);" \
       "step $(python3 -c "print(f'{$over:+.0%}')") vs compute only (target <= +15%)"
done

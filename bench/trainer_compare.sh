#!/usr/bin/env bash
# Trains the issue's shape in megascale-train and in PyTorch (CPU, 2 threads) in one run and prints
# tokens/s side by side with the ratio and our MFU. PyTorch runs twice: with the environment as it is and
# with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (its best case); the faster one is the baseline.
#   bench/trainer_compare.sh [BUILD_DIR] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${2:-30}
shape=(--layers 6 --d-model 384 --heads 6 --seq-len 256 --batch-size 8 --vocab 256 --block serial)
threads=2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [ ! -x "$build/trainer/megascale-train" ]; then
  echo "trainer_compare: build first (cmake --build $build)" >&2
  exit 2
fi
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "trainer_compare: PyTorch is missing (scripts/setup.sh installs python3-torch)" >&2
  exit 2
fi
# Training text: the Jargon File when installed, else generated words (the speed does not depend on it).
text=$out/text.txt
if [ -r /usr/share/doc/jargon-text/jargon.txt.gz ]; then
  zcat /usr/share/doc/jargon-text/jargon.txt.gz > "$text"
else
  /usr/bin/python3 -c "import random; random.seed(1); print(' '.join(random.choice(['alpha','beta','gamma','delta']) for _ in range(400000)))" > "$text"
fi

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>}"
echo "# shape: ${shape[*]}, $steps timed steps, fp32, $threads threads"

run_ours() {  # run_ours PRECISION
  "$build/trainer/megascale-train" "${shape[@]}" --data "$text" --steps $((steps + 1)) --threads $threads \
    --precision "$1" --log-every 1000 --summary-json "$out/ours-$1.json" > "$out/ours-$1.log" 2>&1 || {
    cat "$out/ours-$1.log" >&2
    return 1
  }
  grep -E '^(bf16 )?GEMM:' "$out/ours-$1.log" | sed "s/^/# ours $1: /"
}
run_torch() {  # run_torch NAME [env -u ...]
  local name=$1
  shift
  "$@" /usr/bin/python3 bench/trainer/torch_gpt.py "${shape[@]}" --steps "$steps" --threads $threads > "$out/$name.json"
}

run_ours fp32
run_torch torch-env env
run_torch torch-unset env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
bf16_note=""
if run_ours bf16 2>/dev/null; then :; else bf16_note="bf16: $(tail -1 "$out/ours-bf16.log")"; fi

/usr/bin/python3 - "$out" "$bf16_note" <<'PY'
import json, os, sys
out, note = sys.argv[1], sys.argv[2]
load = lambda name: json.load(open(os.path.join(out, name + ".json")))
ours = load("ours-fp32")
env, unset = load("torch-env"), load("torch-unset")
best = max(env["tokens_per_s"], unset["tokens_per_s"])
print(f"{'run':<44}{'tokens/s':>10}{'vs PyTorch':>12}{'MFU':>8}")
print(f"{'PyTorch ' + env['torch'] + ' fp32, environment as is':<44}{env['tokens_per_s']:>10.0f}{env['tokens_per_s'] / best:>11.2f}x{'':>8}")
print(f"{'PyTorch fp32, OPENBLAS_* unset':<44}{unset['tokens_per_s']:>10.0f}{unset['tokens_per_s'] / best:>11.2f}x{'':>8}")
print(f"{'megascale-train fp32 (' + ours['gemm_backend'] + ')':<44}{ours['tokens_per_s']:>10.0f}{ours['tokens_per_s'] / best:>11.2f}x{100 * ours['mfu']:>7.1f}%")
if os.path.exists(os.path.join(out, "ours-bf16.json")):
    b = load("ours-bf16")
    print(f"{'megascale-train bf16 (' + b['gemm_backend'] + ')':<44}{b['tokens_per_s']:>10.0f}{b['tokens_per_s'] / best:>11.2f}x{100 * b['mfu']:>7.1f}%")
elif note:
    print(note)
peaks = f"fp32 {ours['gemm_peak_gflops']:.0f}"
if os.path.exists(os.path.join(out, "ours-bf16.json")):
    peaks += f", bf16 {load('ours-bf16')['gemm_peak_gflops']:.0f}"
print(f"# MFU: model FLOPs ({ours['model_flops_per_token'] / 1e6:.1f} MFLOP/token) x tokens/s / the GEMM peak of that precision measured at start-up ({peaks} GFLOP/s)")
print(f"# targets: fp32 >= 2x PyTorch and MFU >= 50%; bf16 >= 3x PyTorch")
PY

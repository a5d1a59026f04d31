#!/usr/bin/env bash
# Sets up, builds and runs the main job on the embedded defaults: megascale-train trains a small GPT
# (trainer/configs/main_job.conf) on the Jargon File for a few hundred steps, 3D-parallel on local ranks:
# megascale-run starts RANKS processes (default 8 = tensor parallel 2 x pipeline 2 x data parallel 2) that
# share this host's cores. The reporting rank prints a progress line per 10 steps; outputs (sharded
# checkpoints, CSV, summary JSON, loss curve, trace) go to build/main-job/. Only what the job runs is built
# (the library, megascale-run, megascale-train with its plots); the test command builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s.%N)

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target megascale-run megascale-train

out=build/main-job
rm -rf "$out"
mkdir -p "$out"
data=/usr/share/doc/jargon-text/jargon.txt.gz
if [ ! -r "$data" ]; then  # minimal images may drop /usr/share/doc from packages: take the text from the .deb
  mkdir -p build/data
  (cd build/data && rm -f jargon-text_*.deb && apt-get download -q jargon-text >/dev/null && dpkg -x jargon-text_*.deb deb)
  data=build/data/deb/usr/share/doc/jargon-text/jargon.txt.gz
fi
# The first row of the step CSV is the first finished training step: say how long it took from this script's start.
(
  while [ ! -s "$out/steps.csv" ] || [ "$(wc -l <"$out/steps.csv")" -lt 2 ]; do sleep 0.2; done
  echo "run.sh: first training step done $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s after run.sh started"
) &
first_step_watch=$!
trap 'kill $first_step_watch 2>/dev/null || true' EXIT
build/launcher/megascale-run -n "${RANKS:-8}" build/trainer/megascale-train --config trainer/configs/main_job.conf \
  --data "$data" --checkpoint-dir "$out/checkpoints" --csv "$out/steps.csv" --summary-json "$out/summary.json" \
  --plot "$out/loss.png" --trace "$out/trace.json" "$@"
echo "outputs: $out/steps.csv, $out/summary.json, $out/loss.png, $out/trace.json, $out/checkpoints/"

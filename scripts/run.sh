#!/usr/bin/env bash
# Sets up, builds and runs the main job on the embedded defaults: megascale-train trains a small GPT
# (trainer/configs/main_job.conf) on the Jargon File for a few hundred steps on this CPU, printing a
# progress line per 10 steps; outputs (checkpoints, CSV, summary JSON, loss curve) go to build/main-job/.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"

out=build/main-job
rm -rf "$out"
mkdir -p "$out"
data=/usr/share/doc/jargon-text/jargon.txt.gz
if [ ! -r "$data" ]; then  # minimal images may drop /usr/share/doc from packages: take the text from the .deb
  mkdir -p build/data
  (cd build/data && rm -f jargon-text_*.deb && apt-get download -q jargon-text >/dev/null && dpkg -x jargon-text_*.deb deb)
  data=build/data/deb/usr/share/doc/jargon-text/jargon.txt.gz
fi
build/trainer/megascale-train --config trainer/configs/main_job.conf --data "$data" --checkpoint-dir "$out/checkpoints" \
  --csv "$out/steps.csv" --summary-json "$out/summary.json" --plot "$out/loss.png" "$@"
echo "outputs: $out/steps.csv, $out/summary.json, $out/loss.png, $out/checkpoints/"

#!/usr/bin/env bash
# Process-group initialization against PyTorch, in one run (issues 17 and 38). Ours: bench/init_scale (the real
# init path, ranks simulated over processes; see its header) at 1,024 to 16,384 ranks, tp 8 x pp 4: each rank
# with its own store connection and listener, ready after an 8 B all-reduce in the world, TP, PP and DP
# ("ours"), next to the previous setup (a store connection per process, one ring exchange on the world:
# "ours-prev"). At 1,024 ranks: PyTorch's TCPStore with one client per rank in threads doing the same store
# work (bench/baselines/torch_store_scale.py: "torch-store"), and ours doing only that store work
# ("ours-store"). PyTorch, process per rank:
# bench/baselines/torch_init_scale.py, one process per rank (TCPStore + gloo, Megatron's new_group calls, a
# ring exchange), at doubling rank counts until one fails or passes TORCH_MAX_S; then ours at PyTorch's
# largest. Writes the table and init_scale.png (microseconds per rank against ranks, log scales; a flat line is
# time per rank that does not grow) to OUT_DIR.
#   TORCH_RANKS="32 64 128 256" TORCH_MAX_S=240 OURS_RANKS="1024 ... 16384" bench/init_scale.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/init_scale}
mkdir -p "$out"
ours_ranks=${OURS_RANKS:-"1024 2048 4096 8192 16384"}
torch_ranks=${TORCH_RANKS-"32 64 128 256"}
torch_max_s=${TORCH_MAX_S:-240}

echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
: > "$out/ours.csv"
: > "$out/torch.csv"
point() {  # point RANKS SECONDS: ranks, microseconds per rank
  awk -v s="$2" -v n="$1" 'BEGIN {print n "," s * 1e6 / n}'
}
row() {  # row NAME RANKS SECONDS
  printf '%-8s %8d %10.3f %12.1f\n' "$1" "$2" "$3" "$(awk -v s="$3" -v n="$2" 'BEGIN {print s * 1e6 / n}')"
}
echo "# store: tcp (ours); table: who, ranks, seconds to the last rank ready, microseconds per rank"
results=()
: > "$out/ours_prev.csv"
for n in $ours_ranks; do
  # The previous setup in full: its process count too (2,048 ranks per process, at least 2).
  prev_processes=$(( n / 2048 > 2 ? n / 2048 : 2 ))
  line=$("$build/bench/init_scale" --ranks "$n" --tp 8 --pp 4 --shared-store --world-ring-only --processes "$prev_processes" | tail -1)
  s=$(echo "$line" | awk '{print $5}')
  results+=("$(row ours-prev "$n" "$s")")
  point "$n" "$s" >> "$out/ours_prev.csv"
  line=$("$build/bench/init_scale" --ranks "$n" --tp 8 --pp 4 | tee "$out/ours_$n.txt" | tail -1)
  s=$(echo "$line" | awk '{print $5}')
  results+=("$(row ours "$n" "$s")")
  point "$n" "$s" >> "$out/ours.csv"
  grep -E '^ +[0-9]|^# store' "$out/ours_$n.txt"
done
# The store work alone at 1,024 ranks, PyTorch's TCPStore and ours, then ours in full again: one run, one machine.
store_ranks=${STORE_RANKS:-1024}
torch_store=$(/usr/bin/python3 bench/baselines/torch_store_scale.py --ranks "$store_ranks" | tail -1 | awk '{print $5}')
results+=("$(row torch-store "$store_ranks" "$torch_store")")
ours_store=$("$build/bench/init_scale" --ranks "$store_ranks" --tp 8 --pp 4 --store-only | tail -1 | awk '{print $5}')
results+=("$(row ours-store "$store_ranks" "$ours_store")")
ours_full=$("$build/bench/init_scale" --ranks "$store_ranks" --tp 8 --pp 4 | tail -1 | awk '{print $5}')
results+=("$(row ours "$store_ranks" "$ours_full")")
echo "# at $store_ranks ranks: PyTorch's TCPStore (same store work, a client per rank) $torch_store s;" \
  "ours, that store work $ours_store s ($(awk -v t="$torch_store" -v s="$ours_store" 'BEGIN {printf "%.1f", t / s}')x)," \
  "the whole init $ours_full s ($(awk -v t="$torch_store" -v s="$ours_full" 'BEGIN {printf "%.1f", t / s}')x)"
torch_largest=0
torch_seconds=0
for n in $torch_ranks; do
  avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  # A torch process with gloo holds ~115 MiB of its own (Private_Dirty after init_process_group) besides the
  # shared library pages: 256 of them do not fit 24 GiB.
  if (( avail_kb < n * 130 * 1024 )); then
    echo "# torch at $n ranks skipped: $((avail_kb / 1024)) MiB available, ~130 MiB per process needed"
    break
  fi
  if ! line=$(timeout $((torch_max_s + 600)) /usr/bin/python3 bench/baselines/torch_init_scale.py --ranks "$n" --timeout "$torch_max_s" | tail -1); then
    echo "# torch at $n ranks: ${line:-failed}"
    break
  fi
  echo "$line"
  s=$(echo "$line" | awk '{print $5}')
  torch_largest=$n
  torch_seconds=$s
  results+=("$(row torch "$n" "$s")")
  point "$n" "$s" >> "$out/torch.csv"
  if awk -v s="$s" -v m="$torch_max_s" 'BEGIN {exit !(s > m)}'; then break; fi
done
if (( torch_largest > 0 )); then
  line=$("$build/bench/init_scale" --ranks "$torch_largest" --tp 8 --pp 4 | tail -1)
  s=$(echo "$line" | awk '{print $5}')
  results+=("$(row ours "$torch_largest" "$s")")
  echo "# at $torch_largest ranks: PyTorch $torch_seconds s, ours $s s: $(awk -v t="$torch_seconds" -v s="$s" 'BEGIN {printf "%.0f", t / s}')x faster"
fi
series=("megascale=$out/ours.csv" "megascale, previous setup=$out/ours_prev.csv")
[ ! -s "$out/torch.csv" ] || series+=("PyTorch (TCPStore + gloo)=$out/torch.csv")
"$build/bench/plot_lines" "$out/init_scale.png" --title "Process-group initialization: time per rank" \
  --x-label "ranks (log scale)" --y-label "microseconds per rank (log scale)" --log-x --log-y "${series[@]}"
echo "# figure: $out/init_scale.png (microseconds per rank against ranks, both log scales; a flat line is time per rank that does not grow)"
printf '%-8s %8s %10s %12s\n' who ranks seconds us/rank
printf '%s\n' "${results[@]}"

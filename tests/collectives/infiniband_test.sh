#!/usr/bin/env bash
# Collectives over the ibverbs transport on an InfiniBand port (the emulated device's EMU_ROCE_LINK_LAYER=
# infiniband: queue pairs addressed by LID, no GRH): 3 ranks, all-reduce, all-gather and reduce-scatter exact,
# and every rank's device log says it took the InfiniBand port by LID.
#   infiniband_test.sh MEGASCALE_RUN COLLECTIVE_CHECK EMULATED_VERBS_DIR
set -euo pipefail
run=$1 check=$2 verbs_dir=$3
out=$(LD_LIBRARY_PATH=$verbs_dir EMU_ROCE_NETDEVS=lo EMU_ROCE_LINK_LAYER=infiniband MEGASCALE_TRANSPORT=ibverbs \
      MEGASCALE_DEBUG=1 MEGASCALE_TIMEOUT_MS=60000 \
      "$run" -n 3 "$check" --describe --collectives all_reduce,all_gather,reduce_scatter --dtypes float,int32 \
      --ops sum,max 1 1000 70001 2>&1) || { echo "$out"; echo "FAIL: collectives over InfiniBand failed"; exit 1; }
grep -q " 0 wrong over all ranks" <<< "$out" || { echo "$out"; echo "FAIL: wrong elements"; exit 1; }
ib_ranks=$(grep -c "emroce0 port 1 (InfiniBand, LID 1): GID index 0, IB" <<< "$out" || true)
[ "$ib_ranks" = 3 ] || { echo "$out"; echo "FAIL: $ib_ranks of 3 ranks logged the InfiniBand port by LID"; exit 1; }
grep -q "transport: ibverbs" <<< "$out" || { echo "$out"; echo "FAIL: the ranks did not use ibverbs"; exit 1; }
echo "ok: all-reduce, all-gather and reduce-scatter exact over ibverbs on an InfiniBand port (LID addressing)"

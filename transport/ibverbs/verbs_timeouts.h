// The ibverbs equivalents of our retransmission budgets, computed in one place for the ibverbs transport (the
// defaults of MEGASCALE_IB_TIMEOUT and MEGASCALE_IB_RETRY_CNT): the
// QP's local ACK timeout is 4.096 us x 2^timeout, retried retry_cnt times (at most 7) before the work request
// fails with IBV_WC_RETRY_EXC_ERR; RNR retries are separate (7 = forever).
#pragma once

#include <cstdint>

#include "common/picoseconds.h"

namespace megascale::transport {

struct VerbsRetry {
  uint8_t timeout = 0;        // ibv_qp_attr.timeout (5 bits); 0 waits forever
  uint8_t retry_cnt = 7;      // ibv_qp_attr.retry_cnt (3 bits)
  uint8_t rnr_retry = 7;      // infinite, as NCCL sets it
  uint8_t min_rnr_timer = 12;  // 0.64 ms, as NCCL sets it
};

/// 4.096 us x 2^exponent (exponent 1..31); kNever for 0, which the hardware treats as no timeout.
Picoseconds verbsAckTimeout(int exponent);

/// How long a QP keeps retrying before it fails: (retry_cnt + 1) ACK timeouts.
Picoseconds verbsGiveUpAfter(const VerbsRetry& retry);

/// The settings that ride out a link outage of `ride_through` (MegaScale: a few seconds of flapping must not
/// fail the job): `retry_cnt` retries (all 7 by default), and the smallest timeout whose retry_cnt + 1 waits
/// cover it, so that shorter outages
/// still recover after one short timeout. Longer than 8 x 2^31 x 4.096 us (~20 hours) is capped.
VerbsRetry verbsRetryFor(Picoseconds ride_through, uint8_t retry_cnt = 7);

}  // namespace megascale::transport

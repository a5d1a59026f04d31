#include "transport/ibverbs/verbs_timeouts.h"

namespace megascale::transport {

namespace {
constexpr Picoseconds kAckTimeoutUnit = 4096 * kNanosecond;  // 4.096 us
}

Picoseconds verbsAckTimeout(int exponent) {
  if (exponent <= 0) return kNever;
  return kAckTimeoutUnit << (exponent > 31 ? 31 : exponent);
}

Picoseconds verbsGiveUpAfter(const VerbsRetry& retry) {
  const Picoseconds each = verbsAckTimeout(retry.timeout);
  return each == kNever ? kNever : each * (retry.retry_cnt + 1);
}

VerbsRetry verbsRetryFor(Picoseconds ride_through, uint8_t retry_cnt) {
  VerbsRetry r;
  r.retry_cnt = retry_cnt;
  for (int t = 1; t <= 31; ++t) {
    r.timeout = static_cast<uint8_t>(t);
    if (verbsGiveUpAfter(r) >= ride_through) break;
  }
  return r;
}

}  // namespace megascale::transport

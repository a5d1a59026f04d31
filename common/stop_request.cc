#include "common/stop_request.h"

#include <atomic>

namespace megascale::stop_request {

namespace {

std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void onStopSignal(int) { g_requested.store(true, std::memory_order_relaxed); }

}  // namespace

void install() {
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking calls go on; the program looks at requested() between steps
  sigaction(kStopSignal, &action, nullptr);
}

bool requested() { return g_requested.load(std::memory_order_relaxed); }

}  // namespace megascale::stop_request

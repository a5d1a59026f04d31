#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "common/config.h"
#include "common/status.h"

namespace megascale::log {

namespace {
std::atomic<int> g_rank{-1};

// Read through the config registry like every knob; a malformed level must not stop logging.
int levelFromEnv() {
  try {
    return static_cast<int>(config::getInt("MEGASCALE_DEBUG"));
  } catch (const Error& e) {
    std::fprintf(stderr, "megascale: %s; logging warnings only\n", e.what());
    return 0;
  }
}
}  // namespace

bool enabled(Level level) {
  static const int threshold = levelFromEnv();
  return level <= threshold;
}

void setRank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void write(Level level, const char* fmt, ...) {
  static const char* names[] = {"WARN", "INFO", "DEBUG", "TRACE"};
  char line[2048];
  int rank = g_rank.load(std::memory_order_relaxed);
  int n = rank >= 0 ? std::snprintf(line, sizeof(line), "megascale[%d] rank %d %s: ", getpid(), rank, names[level])
                    : std::snprintf(line, sizeof(line), "megascale[%d] %s: ", getpid(), names[level]);
  va_list args;
  va_start(args, fmt);
  if (n > 0 && n < static_cast<int>(sizeof(line))) n += std::vsnprintf(line + n, sizeof(line) - n, fmt, args);
  va_end(args);
  if (n >= static_cast<int>(sizeof(line)) - 1) n = sizeof(line) - 2;
  line[n++] = '\n';
  // One write() per line so lines of concurrent processes do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, n);
  (void)ignored;
}

}  // namespace megascale::log

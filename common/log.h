// Logging to stderr, levelled by MEGASCALE_DEBUG. Each line carries the process's rank when known.
#pragma once

#include <cstdarg>

namespace megascale::log {

enum Level { kWarn = 0, kInfo = 1, kDebug = 2, kTrace = 3 };

bool enabled(Level level);
void setRank(int rank);
[[gnu::format(printf, 2, 3)]] void write(Level level, const char* fmt, ...);

}  // namespace megascale::log

#define MSC_LOG_WARN(...) ::megascale::log::write(::megascale::log::kWarn, __VA_ARGS__)
#define MSC_LOG_INFO(...)                                                                        \
  do {                                                                                           \
    if (::megascale::log::enabled(::megascale::log::kInfo)) ::megascale::log::write(::megascale::log::kInfo, __VA_ARGS__); \
  } while (0)
#define MSC_LOG_DEBUG(...)                                                                       \
  do {                                                                                           \
    if (::megascale::log::enabled(::megascale::log::kDebug)) ::megascale::log::write(::megascale::log::kDebug, __VA_ARGS__); \
  } while (0)
#define MSC_LOG_TRACE(...)                                                                       \
  do {                                                                                           \
    if (::megascale::log::enabled(::megascale::log::kTrace)) ::megascale::log::write(::megascale::log::kTrace, __VA_ARGS__); \
  } while (0)

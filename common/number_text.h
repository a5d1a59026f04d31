// Numbers as the text of logs, reports and status files.
#pragma once

#include <cstdio>
#include <string>

namespace megascale {

/// "%.2f": seconds and rates as the status table and the fault detector's reports print them.
inline std::string twoDecimals(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

}  // namespace megascale

#include "bench/table_format.h"

#include <string>

namespace megascale::bench {

namespace {

std::string formatTime(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), us >= 10000 ? "%8.0f" : us >= 100 ? "%8.1f" : "%8.2f", us);
  return buf;
}

void printHalf(FILE* out, const Measurement* m) {
  if (m == nullptr) {
    std::fprintf(out, " %8s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  std::string wrong = m->wrong < 0 ? "N/A" : std::to_string(m->wrong);
  std::fprintf(out, " %s %7.2f %7.2f %6s", formatTime(m->time_us).c_str(), m->algbw, m->busbw, wrong.c_str());
}

}  // namespace

void printColumnHeader(FILE* out) {
  std::fprintf(out, "#\n#%59s%-35s%s\n", "", "out-of-place", "in-place");
  std::fprintf(out, "#%12s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "size", "count", "type", "redop",
               "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "#%12s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void printRow(FILE* out, size_t bytes, size_t count, const char* type, const char* redop, int root,
              const Measurement& out_of_place, const Measurement* in_place) {
  std::fprintf(out, " %12zu %13zu %9s %7s %7d", bytes, count, type, redop, root);
  printHalf(out, &out_of_place);
  printHalf(out, in_place);
  std::fprintf(out, "\n");
  std::fflush(out);
}

Measurement measurement(double bytes, double time_us, double busbw_factor, int64_t wrong) {
  Measurement m;
  m.time_us = time_us;
  m.algbw = time_us > 0 ? bytes / time_us / 1e3 : 0;
  m.busbw = m.algbw * busbw_factor;
  m.wrong = wrong;
  return m;
}

}  // namespace megascale::bench

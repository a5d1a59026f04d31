// plot_lines OUT.png [--title T] [--x-label L] [--y-label L] [--log-x] [--log-y] [--from-zero] NAME=SERIES.csv...
// One PNG line chart (common/plot.h) of the series, each named in the key. Each CSV line is "x,y"; lines
// starting with '#' are skipped. For the benchmark scripts' figures (bench/init_scale.sh).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/plot.h"

namespace {

bool readSeries(const std::string& arg, megascale::plot::Series* s) {
  const size_t eq = arg.find('=');
  const std::string path = eq == std::string::npos ? arg : arg.substr(eq + 1);
  s->name = eq == std::string::npos ? path : arg.substr(0, eq);
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "plot_lines: cannot read %s\n", path.c_str());
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    double x, y;
    char comma;
    if (!(fields >> x >> comma >> y) || comma != ',') {
      std::fprintf(stderr, "plot_lines: %s: '%s' is not x,y\n", path.c_str(), line.c_str());
      return false;
    }
    s->x.push_back(x);
    s->y.push_back(y);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plot_lines OUT.png [--title T] [--x-label L] [--y-label L] [--log-x] [--log-y] "
                         "[--from-zero] NAME=SERIES.csv...\n");
    return 2;
  }
  megascale::plot::LineChart chart;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--title" && has_value) {
      chart.title = argv[++i];
    } else if (a == "--x-label" && has_value) {
      chart.x.label = argv[++i];
    } else if (a == "--y-label" && has_value) {
      chart.y.label = argv[++i];
    } else if (a == "--log-x") {
      chart.x.log = true;
    } else if (a == "--log-y") {
      chart.y.log = true;
    } else if (a == "--from-zero") {
      chart.y.from_zero = true;
    } else {
      megascale::plot::Series s;
      if (!readSeries(a, &s)) return 1;
      chart.series.push_back(std::move(s));
    }
  }
  try {
    megascale::plot::writeLineChart(argv[1], chart);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_lines: %s\n", e.what());
    return 1;
  }
  return 0;
}

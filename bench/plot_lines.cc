// plot_lines OUT.png SERIES.csv...: one PNG line chart of the series, in the order given (the chart's key
// numbers them 1, 2, ...). Each CSV line is "x,y"; lines starting with '#' are skipped. For the benchmark
// scripts' figures (bench/init_scale.sh).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/line_plot.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plot_lines OUT.png SERIES.csv...\n");
    return 2;
  }
  std::vector<megascale::PlotSeries> series;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "plot_lines: cannot read %s\n", argv[i]);
      return 1;
    }
    megascale::PlotSeries s;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      double x, y;
      char comma;
      if (!(fields >> x >> comma >> y) || comma != ',') {
        std::fprintf(stderr, "plot_lines: %s: '%s' is not x,y\n", argv[i], line.c_str());
        return 1;
      }
      s.x.push_back(x);
      s.y.push_back(y);
    }
    series.push_back(std::move(s));
  }
  try {
    megascale::writeLinePlot(argv[1], series, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plot_lines: %s\n", e.what());
    return 1;
  }
  return 0;
}

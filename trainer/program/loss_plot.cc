#include "trainer/program/loss_plot.h"

#include "common/line_plot.h"

namespace megascale::trainer {

void writeLossPlot(const std::string& path, const std::vector<double>& losses, long first_step) {
  PlotSeries curve;
  for (size_t i = 0; i < losses.size(); ++i) {
    curve.x.push_back(static_cast<double>(first_step) + static_cast<double>(i));
    curve.y.push_back(losses[i]);
  }
  writeLinePlot(path, {curve});
}

}  // namespace megascale::trainer

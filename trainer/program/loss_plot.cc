#include "trainer/program/loss_plot.h"

#include "common/plot.h"

namespace megascale::trainer {

void writeLossPlot(const std::string& path, const std::vector<double>& losses, long first_step) {
  plot::Series curve{"training loss", {}, {}};
  for (size_t i = 0; i < losses.size(); ++i) {
    curve.x.push_back(static_cast<double>(first_step) + static_cast<double>(i));
    curve.y.push_back(losses[i]);
  }
  plot::writeLineChart(path, plot::LineChart{"megascale-train: loss per step", {"step", false, false},
                                             {"cross-entropy loss (nats per token)", false, false}, {curve}});
}

}  // namespace megascale::trainer

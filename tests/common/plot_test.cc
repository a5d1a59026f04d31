// Figures drawn with cairo, read back as pixels: each series in its own colour with a key, a title and axis
// labels drawn, log axes, a heat map whose hot row shows the hot end of its colour bar; bad input refused.
#include "common/plot.h"

#include <cairo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace megascale::plot {
namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> pixels;  // 0x00RRGGBB
  explicit Image(const std::string& path) {
    cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
    EXPECT_EQ(cairo_surface_status(s), CAIRO_STATUS_SUCCESS) << path;
    width = cairo_image_surface_get_width(s);
    height = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    for (int y = 0; y < height && data != nullptr; ++y) {
      const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<ptrdiff_t>(y) * stride);
      for (int x = 0; x < width; ++x) pixels.push_back(row[x] & 0xffffff);
    }
    cairo_surface_destroy(s);
  }
  uint32_t at(int x, int y) const { return pixels[static_cast<size_t>(y * width + x)]; }
  // Pixels within `tolerance` of the colour in every channel, inside [x0, x1) x [y0, y1).
  int count(uint32_t rgb, int x0 = 0, int y0 = 0, int x1 = -1, int y1 = -1, int tolerance = 8) const {
    if (x1 < 0) x1 = width;
    if (y1 < 0) y1 = height;
    int n = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) {
        const uint32_t p = at(x, y);
        bool near = true;
        for (int shift : {0, 8, 16}) near = near && std::abs(int((p >> shift) & 255) - int((rgb >> shift) & 255)) <= tolerance;
        n += near;
      }
    }
    return n;
  }
  int dark(int x0, int y0, int x1, int y1) const {  // text
    int n = 0;
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) n += (at(x, y) & 0xff) < 100 && ((at(x, y) >> 8) & 0xff) < 100;
    }
    return n;
  }
};

std::string tempPath(const char* name) { return "/tmp/megascale_plot_" + std::to_string(getpid()) + name; }

constexpr uint32_t kBlue = 0x1f77b4, kOrange = 0xff7f0e, kGreen = 0x2ca02c;

TEST(Plot, ALineChartHasItsSeriesInTheirColoursATitleLabelsAndAKey) {
  const std::string path = tempPath("_lines.png");
  LineChart chart{"Loss per step", {"step", false, false}, {"loss (nats per token)", false, true},
                  {{"rising", {0, 1, 2, 3}, {0, 10, 20, 30}}, {"flat", {0, 3}, {5, 5}}}};
  writeLineChart(path, chart);
  const Image image(path);
  EXPECT_EQ(image.width, 800);
  EXPECT_EQ(image.height, 450);
  EXPECT_GT(image.count(kBlue), 300);
  EXPECT_GT(image.count(kOrange), 300);
  EXPECT_EQ(image.count(kGreen), 0) << "no third series";
  EXPECT_GT(image.dark(250, 5, 550, 35), 50) << "a title at the top";
  EXPECT_GT(image.dark(300, 420, 500, 450), 20) << "the x axis label at the bottom";
  EXPECT_GT(image.dark(0, 100, 30, 350), 20) << "the y axis label at the left";
  EXPECT_GT(image.count(kBlue, 600, 40, 800, 120), 20) << "the key at the top right shows the first colour";
  unlink(path.c_str());
}

TEST(Plot, LogAxesTakeDecadesAndRefuseNonPositiveValues) {
  const std::string path = tempPath("_log.png");
  LineChart chart{"Time per rank", {"ranks", true, false}, {"us per rank", true, false},
                  {{"ours", {1024, 2048, 16384}, {80, 70, 65}}, {"theirs", {32, 256}, {9000, 30000}}}};
  writeLineChart(path, chart);
  const Image image(path);
  EXPECT_GT(image.count(kBlue), 100);
  EXPECT_GT(image.count(kOrange), 100);
  chart.series[0].y[1] = 0;
  EXPECT_THROW(writeLineChart(path, chart), std::invalid_argument);
  unlink(path.c_str());
}

TEST(Plot, AHeatMapShowsItsHotRowInTheHotColour) {
  const std::string path = tempPath("_heat.png");
  HeatMap map{"Compute per step", "step", "rank", "compute (ms)", {}, {}};
  for (int r = 0; r < 8; ++r) {
    map.rows.emplace_back(30, r == 5 ? 180.0 : 100.0);
    map.row_names.push_back("rank " + std::to_string(r));
  }
  writeHeatMap(path, map);
  const Image image(path);
  EXPECT_EQ(image.width, 900);
  // Eight rows of 22 px from y = 40: row 5's middle is y = 161; the hot end of viridis is yellow (253, 231, 37).
  EXPECT_GT(image.count(0xfde725, 150, 152, 780, 170), 2000) << "row 5 in yellow";
  EXPECT_EQ(image.count(0xfde725, 150, 40, 780, 145), 0) << "rows 0-4 are not";
  EXPECT_GT(image.count(0x440154, 150, 40, 780, 145), 2000) << "they are at the cold end";
  EXPECT_GT(image.dark(0, 40, 148, 216), 50) << "row names at the left";
  unlink(path.c_str());
  map.rows[3].pop_back();
  EXPECT_THROW(writeHeatMap(path, map), std::invalid_argument);
}

TEST(Plot, AnUnwritablePathIsAnError) {
  EXPECT_THROW(writeLineChart("/nonexistent-dir/plot.png", LineChart{}), std::runtime_error);
  EXPECT_THROW(writeHeatMap("/nonexistent-dir/heat.png", HeatMap{}), std::runtime_error);
}

}  // namespace
}  // namespace megascale::plot

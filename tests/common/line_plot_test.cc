#include "common/line_plot.h"

#include <png.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace megascale {
namespace {

struct Image {
  png_uint_32 width = 0, height = 0;
  std::vector<unsigned char> rgb;
  int count(unsigned char r, unsigned char g, unsigned char b) const {
    int n = 0;
    for (size_t i = 0; i + 2 < rgb.size(); i += 3) n += rgb[i] == r && rgb[i + 1] == g && rgb[i + 2] == b;
    return n;
  }
};

Image readPng(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_NE(png_image_begin_read_from_file(&image, path.c_str()), 0) << image.message;
  image.format = PNG_FORMAT_RGB;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  EXPECT_NE(png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr), 0) << image.message;
  return out;
}

std::string tempPath(const char* name) { return "/tmp/megascale_line_plot_" + std::to_string(getpid()) + name; }

TEST(LinePlot, DrawsEachSeriesInItsOwnColour) {
  const std::string path = tempPath("_two.png");
  PlotSeries rising{{0, 1, 2, 3}, {0, 10, 20, 30}}, flat{{0, 3}, {5, 5}};
  writeLinePlot(path, {rising, flat}, true);
  const Image image = readPng(path);
  EXPECT_EQ(image.width, 800u);
  EXPECT_EQ(image.height, 450u);
  EXPECT_GT(image.count(31, 119, 180), 500);   // the first series: a line across the chart
  EXPECT_GT(image.count(255, 127, 14), 500);   // the second
  EXPECT_EQ(image.count(44, 160, 44), 0);      // no third
  unlink(path.c_str());
}

TEST(LinePlot, EmptyDataGivesEmptyAxesAndBadInputIsRefused) {
  const std::string path = tempPath("_empty.png");
  writeLinePlot(path, {});
  EXPECT_EQ(readPng(path).width, 800u);
  unlink(path.c_str());
  PlotSeries uneven{{0, 1}, {0}};
  EXPECT_THROW(writeLinePlot(path, {uneven}), std::invalid_argument);
  EXPECT_THROW(writeLinePlot("/nonexistent-dir/plot.png", {}), std::runtime_error);
}

}  // namespace
}  // namespace megascale

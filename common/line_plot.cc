#include "common/line_plot.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace megascale {

namespace {

constexpr int kWidth = 800, kHeight = 450, kLeft = 70, kRight = 20, kTop = 20, kBottom = 40;

using Rgb = std::array<unsigned char, 3>;

// Distinguishable colours (the Tableau 10 order), reused cyclically.
constexpr Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                            {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

struct Canvas {
  std::vector<unsigned char> rgb = std::vector<unsigned char>(kWidth * kHeight * 3, 255);
  void dot(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= kWidth || y >= kHeight) return;
    unsigned char* p = &rgb[static_cast<size_t>((y * kWidth + x) * 3)];
    p[0] = c[0];
    p[1] = c[1];
    p[2] = c[2];
  }
  void line(int x0, int y0, int x1, int y1, Rgb c) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    while (true) {
      dot(x0, y0, c);
      dot(x0, y0 + 1, c);  // two pixels thick
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // 3x5 glyphs for 0-9, '.', '-', 'e', '+', scaled 2x.
  void text(int x, int y, const std::string& s, Rgb c = {0, 0, 0}) {
    static const char* const kGlyphs[] = {"111101101101111", "010110010010111", "111001111100111", "111001111001111",
                                          "101101111001001", "111100111001111", "111100111101111", "111001001001001",
                                          "111101111101111", "111101111001111", "000000000000010", "000000111000000",
                                          "000111101110011", "000010111010000"};
    for (char ch : s) {
      const int glyph = ch >= '0' && ch <= '9' ? ch - '0'
                        : ch == '.'            ? 10
                        : ch == '-'            ? 11
                        : ch == 'e'            ? 12
                        : ch == '+'            ? 13
                                               : -1;
      if (glyph >= 0) {
        for (int row = 0; row < 5; ++row) {
          for (int col = 0; col < 3; ++col) {
            if (kGlyphs[glyph][row * 3 + col] != '1') continue;
            for (int k = 0; k < 4; ++k) dot(x + col * 2 + k % 2, y + row * 2 + k / 2, c);
          }
        }
      }
      x += 8;
    }
  }
};

std::string label(double v) {
  char buffer[32];
  if ((v == std::floor(v) || std::fabs(v) >= 100) && std::fabs(v) < 1e7) std::snprintf(buffer, sizeof(buffer), "%.0f", v);
  else std::snprintf(buffer, sizeof(buffer), "%.3g", v);
  return buffer;
}

void save(const std::string& path, const Canvas& canvas) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot write plot " + path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (png == nullptr || info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    throw std::runtime_error("libpng failed writing " + path);
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, kWidth, kHeight, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < kHeight; ++y) {
    png_write_row(png, const_cast<png_bytep>(&canvas.rgb[static_cast<size_t>(y * kWidth * 3)]));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0) throw std::runtime_error("cannot write plot " + path);
}

}  // namespace

void writeLinePlot(const std::string& path, const std::vector<PlotSeries>& series, bool y_from_zero) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const PlotSeries& s : series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("plot " + path + ": a series' x and y differ in length");
    for (size_t i = 0; i < s.x.size(); ++i) {
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  if (!(x_lo <= x_hi)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // nothing to draw: empty axes
  if (y_from_zero) y_lo = std::min(0.0, y_lo);
  if (x_hi - x_lo < 1e-12) x_hi = x_lo + 1;
  if (y_hi - y_lo < 1e-12) y_hi = y_lo + 1;
  const int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + static_cast<int>((x - x_lo) / (x_hi - x_lo) * plot_w); };
  auto py = [&](double y) { return kTop + static_cast<int>((y_hi - y) / (y_hi - y_lo) * plot_h); };
  Canvas canvas;
  for (int i = 0; i <= 4; ++i) {  // horizontal grid with y labels
    const double v = y_lo + (y_hi - y_lo) * i / 4;
    canvas.line(kLeft, py(v), kLeft + plot_w, py(v), {225, 225, 225});
    canvas.text(4, py(v) - 5, label(v));
  }
  canvas.line(kLeft, kTop, kLeft, kTop + plot_h, {0, 0, 0});
  canvas.line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, {0, 0, 0});
  canvas.text(kLeft - 4, kTop + plot_h + 12, label(x_lo));
  const std::string right = label(x_hi);
  canvas.text(kLeft + plot_w - 8 * static_cast<int>(right.size()), kTop + plot_h + 12, right);
  for (size_t k = 0; k < series.size(); ++k) {
    const Rgb colour = kPalette[k % std::size(kPalette)];
    const PlotSeries& s = series[k];
    for (size_t i = 1; i < s.x.size(); ++i) canvas.line(px(s.x[i - 1]), py(s.y[i - 1]), px(s.x[i]), py(s.y[i]), colour);
    if (series.size() > 1) canvas.text(kLeft + plot_w - 40, kTop + 6 + 14 * static_cast<int>(k), std::to_string(k + 1), colour);
  }
  save(path, canvas);
}

}  // namespace megascale

#include "trainer/program/loss_plot.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace megascale::trainer {

namespace {

constexpr int kWidth = 800, kHeight = 450, kLeft = 70, kRight = 20, kTop = 20, kBottom = 40;

struct Canvas {
  std::vector<unsigned char> rgb = std::vector<unsigned char>(kWidth * kHeight * 3, 255);
  void dot(int x, int y, unsigned char r, unsigned char g, unsigned char b) {
    if (x < 0 || y < 0 || x >= kWidth || y >= kHeight) return;
    unsigned char* p = &rgb[static_cast<size_t>((y * kWidth + x) * 3)];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
  void line(int x0, int y0, int x1, int y1, unsigned char r, unsigned char g, unsigned char b) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    while (true) {
      dot(x0, y0, r, g, b);
      dot(x0, y0 + 1, r, g, b);  // two pixels thick
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // 3x5 glyphs for 0-9, '.', '-', 'e', scaled 2x.
  void text(int x, int y, const std::string& s) {
    static const char* const kGlyphs[] = {"111101101101111", "010110010010111", "111001111100111", "111001111001111",
                                          "101101111001001", "111100111001111", "111100111101111", "111001001001001",
                                          "111101111101111", "111101111001111", "000000000000010", "000000111000000",
                                          "000111101110011"};
    for (char c : s) {
      int glyph = c >= '0' && c <= '9' ? c - '0' : c == '.' ? 10 : c == '-' ? 11 : c == 'e' ? 12 : -1;
      if (glyph >= 0) {
        for (int row = 0; row < 5; ++row) {
          for (int col = 0; col < 3; ++col) {
            if (kGlyphs[glyph][row * 3 + col] != '1') continue;
            for (int k = 0; k < 4; ++k) dot(x + col * 2 + k % 2, y + row * 2 + k / 2, 0, 0, 0);
          }
        }
      }
      x += 8;
    }
  }
};

std::string label(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", v);
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

void writeLossPlot(const std::string& path, const std::vector<double>& losses, long first_step) {
  Canvas canvas;
  const int plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double lo = 0, hi = 1;
  if (!losses.empty()) {
    lo = *std::min_element(losses.begin(), losses.end());
    hi = *std::max_element(losses.begin(), losses.end());
  }
  if (hi - lo < 1e-9) hi = lo + 1;
  const long last_step = first_step + static_cast<long>(std::max<size_t>(losses.size(), 2)) - 1;
  auto px = [&](double step) {
    return kLeft + static_cast<int>((step - first_step) / std::max(1.0, double(last_step - first_step)) * plot_w);
  };
  auto py = [&](double loss) { return kTop + static_cast<int>((hi - loss) / (hi - lo) * plot_h); };
  for (int i = 0; i <= 4; ++i) {  // horizontal grid with loss labels
    const double v = lo + (hi - lo) * i / 4;
    canvas.line(kLeft, py(v), kLeft + plot_w, py(v), 225, 225, 225);
    canvas.text(4, py(v) - 5, label(v));
  }
  canvas.line(kLeft, kTop, kLeft, kTop + plot_h, 0, 0, 0);
  canvas.line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, 0, 0, 0);
  canvas.text(kLeft - 4, kTop + plot_h + 12, std::to_string(first_step));
  canvas.text(kLeft + plot_w - 40, kTop + plot_h + 12, std::to_string(last_step));
  for (size_t i = 1; i < losses.size(); ++i) {
    canvas.line(px(first_step + double(i - 1)), py(losses[i - 1]), px(first_step + double(i)), py(losses[i]), 31, 119,
                180);
  }
  save(path, canvas);
}

}  // namespace megascale::trainer

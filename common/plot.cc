#include "common/plot.h"

#include <cairo.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

namespace megascale::plot {

namespace {

using Rgb = std::array<double, 3>;

// Distinguishable colours (the Tableau 10 order), reused cyclically.
constexpr Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                            {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
// Viridis at five stops: dark (low) to yellow (high), readable in grey and by the colour-blind.
constexpr Rgb kViridis[] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};

void setColor(cairo_t* cr, const Rgb& c) { cairo_set_source_rgb(cr, c[0] / 255, c[1] / 255, c[2] / 255); }

Rgb viridis(double t) {
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  Rgb c{};
  for (int k = 0; k < 3; ++k) c[k] = kViridis[i][k] + (kViridis[i + 1][k] - kViridis[i][k]) * f;
  return c;
}

// A cairo image and its context, freed together; written as PNG.
class Canvas {
 public:
  Canvas(int width, int height)
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy),
        cr_(cairo_create(surface_.get()), cairo_destroy) {
    cairo_set_source_rgb(cr(), 1, 1, 1);
    cairo_paint(cr());
  }
  cairo_t* cr() const { return cr_.get(); }
  void write(const std::string& path) const {
    cairo_surface_flush(surface_.get());
    const cairo_status_t status = cairo_surface_write_to_png(surface_.get(), path.c_str());
    if (status != CAIRO_STATUS_SUCCESS) {
      throw std::runtime_error("cannot write " + path + ": " + cairo_status_to_string(status));
    }
  }

 private:
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface_;
  std::unique_ptr<cairo_t, void (*)(cairo_t*)> cr_;
};

enum class Align { kLeft, kCenter, kRight };

// Text with its baseline at y, aligned on x; rotated a quarter turn counter-clockwise when `vertical`.
void text(cairo_t* cr, const std::string& s, double x, double y, double size, Align align, bool bold = false,
          bool vertical = false) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  const double shift = align == Align::kLeft ? 0 : align == Align::kCenter ? e.x_advance / 2 : e.x_advance;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (vertical) cairo_rotate(cr, -M_PI / 2);
  cairo_move_to(cr, -shift, 0);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.6g", std::abs(v) < 1e-12 ? 0.0 : v);
  return s;
}

// An axis's range in drawn units (log10 of the value on a log axis), widened to round numbers, and its ticks.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;  // in drawn units
  double fraction(double value) const { return ((log ? std::log10(value) : value) - lo) / (hi - lo); }
  std::string label(double tick) const { return number(log ? std::pow(10, tick) : tick); }
};

Scale makeScale(double lo, double hi, const Axis& axis) {
  Scale s;
  s.log = axis.log;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;  // no data
  if (s.log) {
    lo = std::floor(std::log10(lo));
    hi = std::ceil(std::log10(hi));
    if (hi <= lo) hi = lo + 1;
    for (double t = lo; t <= hi + 1e-9; ++t) s.ticks.push_back(t);
    s.lo = lo, s.hi = hi;
    return s;
  }
  if (axis.from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (hi <= lo) lo -= 1, hi += 1;
  // A round step (1, 2 or 5 x 10^k) giving about five intervals.
  const double raw = (hi - lo) / 5, magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  s.lo = std::floor(lo / step) * step;
  s.hi = std::ceil(hi / step) * step;
  for (double t = s.lo; t <= s.hi + step * 1e-6; t += step) s.ticks.push_back(t);
  return s;
}

struct Frame {
  double left, top, width, height;
  double x(double f) const { return left + f * width; }
  double y(double f) const { return top + (1 - f) * height; }  // f = 0 at the bottom
};

void drawAxes(cairo_t* cr, const Frame& f, const Scale& xs, const Scale& ys, const std::string& x_label,
              const std::string& y_label, double canvas_height) {
  cairo_set_line_width(cr, 1);
  for (double t : ys.ticks) {  // grid lines and labels
    const double y = std::round(f.y((t - ys.lo) / (ys.hi - ys.lo))) + 0.5;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, f.left, y);
    cairo_line_to(cr, f.left + f.width, y);
    cairo_stroke(cr);
    text(cr, ys.label(t), f.left - 6, y + 4, 11, Align::kRight);
  }
  for (double t : xs.ticks) {
    const double x = std::round(f.x((t - xs.lo) / (xs.hi - xs.lo))) + 0.5;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, x, f.top);
    cairo_line_to(cr, x, f.top + f.height);
    cairo_stroke(cr);
    text(cr, xs.label(t), x, f.top + f.height + 16, 11, Align::kCenter);
  }
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  cairo_rectangle(cr, f.left + 0.5, f.top + 0.5, f.width, f.height);
  cairo_stroke(cr);
  text(cr, x_label, f.left + f.width / 2, canvas_height - 12, 13, Align::kCenter);
  text(cr, y_label, 20, f.top + f.height / 2, 13, Align::kCenter, false, true);
}

void drawKey(cairo_t* cr, const Frame& f, const std::vector<Series>& series) {
  std::vector<size_t> named;
  for (size_t i = 0; i < series.size(); ++i) {
    if (!series[i].name.empty()) named.push_back(i);
  }
  if (named.empty()) return;
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 12);
  double widest = 0;
  for (size_t i : named) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, series[i].name.c_str(), &e);
    widest = std::max(widest, e.x_advance);
  }
  const double w = widest + 44, h = 18.0 * static_cast<double>(named.size()) + 8;
  const double x0 = f.left + f.width - w - 10, y0 = f.top + 10;
  cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
  cairo_rectangle(cr, x0, y0, w, h);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (size_t k = 0; k < named.size(); ++k) {
    const double y = y0 + 16 + 18.0 * static_cast<double>(k);
    setColor(cr, kPalette[named[k] % std::size(kPalette)]);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, x0 + 8, y - 4);
    cairo_line_to(cr, x0 + 32, y - 4);
    cairo_stroke(cr);
    text(cr, series[named[k]].name, x0 + 38, y, 12, Align::kLeft);
  }
}

}  // namespace

void writeLineChart(const std::string& path, const LineChart& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : chart.series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("plot: series '" + s.name + "' has x and y of unequal length");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if ((chart.x.log && s.x[i] <= 0) || (chart.y.log && s.y[i] <= 0)) {
        throw std::invalid_argument("plot: series '" + s.name + "' has a value <= 0 on a log axis");
      }
      x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
    }
  }
  constexpr int kWidth = 800, kHeight = 450;
  Canvas canvas(kWidth, kHeight);
  cairo_t* cr = canvas.cr();
  const Frame f{80, 40, kWidth - 80 - 20, kHeight - 40 - 60};
  const Scale xs = makeScale(x_lo, x_hi, chart.x), ys = makeScale(y_lo, y_hi, chart.y);
  text(cr, chart.title, kWidth / 2.0, 26, 16, Align::kCenter, true);
  drawAxes(cr, f, xs, ys, chart.x.label, chart.y.label, kHeight);
  cairo_save(cr);
  cairo_rectangle(cr, f.left, f.top, f.width, f.height);
  cairo_clip(cr);
  cairo_set_line_width(cr, 2);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  for (size_t k = 0; k < chart.series.size(); ++k) {
    const Series& s = chart.series[k];
    setColor(cr, kPalette[k % std::size(kPalette)]);
    for (size_t i = 0; i < s.x.size(); ++i) {
      const double px = f.x(xs.fraction(s.x[i])), py = f.y(ys.fraction(s.y[i]));
      if (i == 0) cairo_move_to(cr, px, py);
      else cairo_line_to(cr, px, py);
    }
    if (s.x.size() == 1) cairo_arc(cr, f.x(xs.fraction(s.x[0])), f.y(ys.fraction(s.y[0])), 3, 0, 2 * M_PI);
    cairo_stroke(cr);
  }
  cairo_restore(cr);
  drawKey(cr, f, chart.series);
  canvas.write(path);
}

void writeHeatMap(const std::string& path, const HeatMap& map) {
  const size_t rows = map.rows.size(), columns = rows > 0 ? map.rows[0].size() : 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : map.rows) {
    if (row.size() != columns) throw std::invalid_argument("plot: heat map rows of unequal length");
    for (double v : row) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi > lo)) lo = std::isfinite(lo) ? lo - 1 : 0, hi = lo + 2;
  const double cell_h = rows == 0 ? 20 : std::clamp(360.0 / static_cast<double>(rows), 3.0, 22.0);
  constexpr int kWidth = 900;
  const Frame f{150, 40, kWidth - 150 - 120, std::max(60.0, cell_h * static_cast<double>(rows))};
  const int height = static_cast<int>(f.top + f.height + 60);
  Canvas canvas(kWidth, height);
  cairo_t* cr = canvas.cr();
  text(cr, map.title, kWidth / 2.0, 26, 16, Align::kCenter, true);
  const double cell_w = columns == 0 ? f.width : f.width / static_cast<double>(columns);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < columns; ++c) {
      setColor(cr, viridis((map.rows[r][c] - lo) / (hi - lo)));
      cairo_rectangle(cr, f.left + static_cast<double>(c) * cell_w, f.top + static_cast<double>(r) * cell_h,
                      cell_w + 0.5, cell_h + 0.5);  // overlap a half pixel: no seams
      cairo_fill(cr);
    }
  }
  // Row names where they fit, else every k-th.
  const size_t every = std::max<size_t>(1, static_cast<size_t>(std::ceil(12.0 / cell_h)));
  for (size_t r = 0; r < rows; r += every) {
    const std::string name = r < map.row_names.size() ? map.row_names[r] : std::to_string(r);
    text(cr, name, f.left - 6, f.top + (static_cast<double>(r) + 0.5) * cell_h + 4, std::min(11.0, cell_h * every - 1),
         Align::kRight);
  }
  const Scale xs = makeScale(0, static_cast<double>(columns), Axis{});
  for (double t : xs.ticks) {
    const double x = f.left + t * cell_w;
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, x, f.top + f.height);
    cairo_line_to(cr, x, f.top + f.height + 4);
    cairo_stroke(cr);
    text(cr, xs.label(t), x, f.top + f.height + 16, 11, Align::kCenter);
  }
  text(cr, map.x_label, f.left + f.width / 2, height - 12, 13, Align::kCenter);
  text(cr, map.y_label, 16, f.top + f.height / 2, 13, Align::kCenter, false, true);
  // The colour bar: its scale in the values' units.
  const Frame bar{f.left + f.width + 20, f.top, 18, f.height};
  for (int i = 0; i < 100; ++i) {
    setColor(cr, viridis((i + 0.5) / 100));
    cairo_rectangle(cr, bar.left, bar.y((i + 1) / 100.0), bar.width, bar.height / 100 + 0.5);
    cairo_fill(cr);
  }
  const Scale vs = makeScale(lo, hi, Axis{});
  for (double t : vs.ticks) {
    if (t < lo - 1e-12 || t > hi + 1e-12) continue;
    const double y = bar.y((t - lo) / (hi - lo));
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_move_to(cr, bar.left + bar.width, y);
    cairo_line_to(cr, bar.left + bar.width + 4, y);
    cairo_stroke(cr);
    text(cr, vs.label(t), bar.left + bar.width + 7, y + 4, 10, Align::kLeft);
  }
  text(cr, map.value_label, bar.left + bar.width + 78, f.top + f.height / 2, 12, Align::kCenter, false, true);
  canvas.write(path);
}

}  // namespace megascale::plot

#include "common/hostlist.h"

#include <cstdint>
#include <stdexcept>

namespace megascale {
namespace {

constexpr size_t kMaxNames = 1000000;

[[noreturn]] void fail(std::string_view expression, const std::string& why) {
  throw std::invalid_argument("hostlist '" + std::string(expression) + "': " + why);
}

// Splits at commas outside brackets.
std::vector<std::string_view> topLevelItems(std::string_view expression) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= expression.size(); ++i) {
    const char c = i < expression.size() ? expression[i] : ',';
    if (c == '[') {
      if (++depth > 1) fail(expression, "nested '['");
    } else if (c == ']') {
      if (--depth < 0) fail(expression, "']' without '['");
    } else if (c == ',' && depth == 0) {
      if (i == start) fail(expression, "an empty name");
      items.push_back(expression.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) fail(expression, "'[' without ']'");
  return items;
}

uint64_t parseNumber(std::string_view expression, std::string_view digits) {
  if (digits.empty() || digits.size() > 18) fail(expression, "bad number '" + std::string(digits) + "'");
  uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') fail(expression, "bad number '" + std::string(digits) + "'");
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

std::string padded(uint64_t value, size_t width) {
  std::string text = std::to_string(value);
  return text.size() < width ? std::string(width - text.size(), '0') + text : text;
}

// "01-03,7" -> 01 02 03 7.
std::vector<std::string> expandRanges(std::string_view expression, std::string_view ranges) {
  std::vector<std::string> values;
  size_t start = 0;
  for (size_t i = 0; i <= ranges.size(); ++i) {
    if (i < ranges.size() && ranges[i] != ',') continue;
    const std::string_view range = ranges.substr(start, i - start);
    start = i + 1;
    const size_t dash = range.find('-');
    const std::string_view low_text = range.substr(0, dash);
    const uint64_t low = parseNumber(expression, low_text);
    const uint64_t high = dash == std::string_view::npos ? low : parseNumber(expression, range.substr(dash + 1));
    if (high < low) fail(expression, "reversed range '" + std::string(range) + "'");
    if (high - low >= kMaxNames) fail(expression, "more than " + std::to_string(kMaxNames) + " names");
    for (uint64_t v = low; v <= high; ++v) values.push_back(padded(v, low_text.size()));
  }
  return values;
}

void expandItem(std::string_view expression, std::string_view item, std::vector<std::string>& out) {
  std::vector<std::string> prefixes{""};
  size_t pos = 0;
  while (pos < item.size()) {
    const size_t open = item.find('[', pos);
    const std::string_view literal = item.substr(pos, open == std::string_view::npos ? open : open - pos);
    for (auto& p : prefixes) p += literal;
    if (open == std::string_view::npos) break;
    const size_t close = item.find(']', open);
    std::vector<std::string> next;
    for (const auto& value : expandRanges(expression, item.substr(open + 1, close - open - 1))) {
      for (const auto& p : prefixes) {
        if (next.size() + out.size() >= kMaxNames) fail(expression, "more than " + std::to_string(kMaxNames) + " names");
        next.push_back(p + value);
      }
    }
    // Keep the order of the expression: earlier brackets vary slowest.
    std::vector<std::string> ordered;
    ordered.reserve(next.size());
    const size_t values = next.size() / prefixes.size();
    for (size_t p = 0; p < prefixes.size(); ++p) {
      for (size_t v = 0; v < values; ++v) ordered.push_back(std::move(next[v * prefixes.size() + p]));
    }
    prefixes = std::move(ordered);
    pos = close + 1;
  }
  for (auto& p : prefixes) out.push_back(std::move(p));
}

}  // namespace

std::vector<std::string> expandHostlist(std::string_view expression) {
  std::vector<std::string> names;
  if (expression.empty()) return names;
  for (std::string_view item : topLevelItems(expression)) expandItem(expression, item, names);
  return names;
}

}  // namespace megascale

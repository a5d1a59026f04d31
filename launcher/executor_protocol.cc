#include "launcher/executor_protocol.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "common/status.h"

namespace megascale::launcher {

namespace {

constexpr size_t kMaxText = 4096;   // a host name, a rank's "where", a summary
constexpr size_t kMaxItems = 1 << 16;

// Tokens separated by one space; a text is "<length>:<bytes>" so it may hold spaces.
class Writer {
 public:
  Writer& word(const std::string& w) { return put(w); }
  Writer& number(int64_t v) { return put(std::to_string(v)); }
  Writer& unsignedNumber(uint64_t v) { return put(std::to_string(v)); }
  Writer& text(const std::string& t) { return put(std::to_string(t.size()) + ":" + t); }
  std::string done() { return std::move(out_); }

 private:
  Writer& put(const std::string& token) {
    if (!out_.empty()) out_ += ' ';
    out_ += token;
    return *this;
  }
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& in, const std::string& key) : in_(in), key_(key) {}
  void word(const char* expected) {
    if (token() != expected) fail(std::string("expected '") + expected + "'");
  }
  int64_t number(int64_t min, int64_t max) {
    const std::string t = token();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || errno != 0 || v < min || v > max) fail("bad number '" + t + "'");
    return v;
  }
  uint64_t unsignedNumber() {
    const std::string t = token();
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || t[0] == '-' || *end != '\0' || errno != 0) fail("bad count '" + t + "'");
    return v;
  }
  std::string text() {
    skipSpace();
    const size_t colon = in_.find(':', pos_);
    if (colon == std::string::npos || colon == pos_ || colon - pos_ > 5) fail("bad text");
    const int64_t length = parseLength(in_.substr(pos_, colon - pos_));
    if (colon + 1 + static_cast<size_t>(length) > in_.size()) fail("truncated text");
    std::string t = in_.substr(colon + 1, static_cast<size_t>(length));
    pos_ = colon + 1 + static_cast<size_t>(length);
    return t;
  }
  void end() {
    if (pos_ != in_.size()) fail("trailing bytes");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kPeerLost, "launcher: the store's value at " + key_ + " is malformed (" + what +
                                          " at byte " + std::to_string(pos_) + ")");
  }

 private:
  void skipSpace() {
    if (pos_ > 0 && pos_ < in_.size() && in_[pos_] == ' ') ++pos_;
  }
  std::string token() {
    skipSpace();
    const size_t space = in_.find(' ', pos_);
    const size_t stop = space == std::string::npos ? in_.size() : space;
    std::string t = in_.substr(pos_, stop - pos_);
    pos_ = stop;
    return t;
  }
  int64_t parseLength(const std::string& t) const {
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || static_cast<size_t>(v) > kMaxText) fail("bad text length '" + t + "'");
    return v;
  }
  const std::string& in_;
  const std::string& key_;
  size_t pos_ = 0;
};

void writeList(Writer& w, const std::vector<int>& items) {
  w.number(static_cast<int64_t>(items.size()));
  for (int v : items) w.number(v);
}

std::vector<int> readList(Reader& r, int min) {
  const int64_t n = r.number(0, kMaxItems);
  std::vector<int> items;
  for (int64_t i = 0; i < n; ++i) items.push_back(static_cast<int>(r.number(min, 1 << 30)));
  return items;
}

}  // namespace

std::string encodeExecutorInfo(const ExecutorInfo& info) {
  return Writer()
      .word("host")
      .text(info.host)
      .word("nproc")
      .number(info.nproc)
      .word("replicas")
      .text(info.replica_address)
      .word("slot")
      .number(info.preferred_slot)
      .done();
}

ExecutorInfo decodeExecutorInfo(const std::string& text, const std::string& key) {
  Reader r(text, key);
  ExecutorInfo info;
  r.word("host");
  info.host = r.text();
  r.word("nproc");
  info.nproc = static_cast<int>(r.number(1, 1 << 20));
  r.word("replicas");
  info.replica_address = r.text();
  r.word("slot");
  info.preferred_slot = static_cast<int>(r.number(-1, 1 << 20));
  r.end();
  return info;
}

const char* executorStateName(ExecutorReport::State state) {
  switch (state) {
    case ExecutorReport::State::kIdle: return "idle";
    case ExecutorReport::State::kRunning: return "running";
    case ExecutorReport::State::kDone: return "done";
    case ExecutorReport::State::kStopped: return "stopped";
    case ExecutorReport::State::kSignal: return "signal";
    case ExecutorReport::State::kFenced: return "fenced";
  }
  return "?";
}

std::string encodeReport(const ExecutorReport& report) {
  Writer w;
  w.word("report")
      .unsignedNumber(report.seq)
      .number(report.attempt)
      .number(static_cast<int>(report.state))
      .number(static_cast<int>(report.self_check))
      .number(report.signal)
      .number(static_cast<int>(report.link_check))
      .number(report.link_peer)
      .unsignedNumber(report.link_kbps)
      .number(static_cast<int64_t>(report.ranks.size()));
  for (const RankSample& s : report.ranks) {
    w.number(s.rank)
        .number(s.running)
        .number(s.wait_status)
        .number(s.stopped)
        .number(s.reported)
        .unsignedNumber(s.progress)
        .number(s.in_collective)
        .unsignedNumber(s.transport_errors)
        .unsignedNumber(s.beats)
        .text(s.where.substr(0, kMaxText))
        .number(std::max<int64_t>(s.step, -1))
        .text(s.phase.substr(0, kMaxText))
        .text(s.coordinates.substr(0, kMaxText))
        .text(s.operation.substr(0, kMaxText))
        .number(s.in_operation_s < 0 ? -1 : static_cast<int64_t>(s.in_operation_s * 1000));
  }
  return w.done();
}

ExecutorReport decodeReport(const std::string& text, const std::string& key) {
  Reader r(text, key);
  ExecutorReport report;
  r.word("report");
  report.seq = r.unsignedNumber();
  report.attempt = static_cast<int>(r.number(-1, 1 << 30));
  report.state = static_cast<ExecutorReport::State>(r.number(0, static_cast<int>(ExecutorReport::State::kFenced)));
  report.self_check = static_cast<ExecutorReport::Check>(r.number(0, 2));
  report.signal = static_cast<int>(r.number(0, 64));
  report.link_check = static_cast<ExecutorReport::Check>(r.number(0, 2));
  report.link_peer = static_cast<int>(r.number(-1, 1 << 30));
  report.link_kbps = r.unsignedNumber();
  const int64_t n = r.number(0, kMaxItems);
  for (int64_t i = 0; i < n; ++i) {
    RankSample s;
    s.rank = static_cast<int>(r.number(0, 1 << 30));
    s.running = r.number(0, 1) != 0;
    s.wait_status = static_cast<int>(r.number(INT32_MIN, INT32_MAX));
    s.stopped = r.number(0, 1) != 0;
    s.reported = r.number(0, 1) != 0;
    s.progress = r.unsignedNumber();
    s.in_collective = r.number(0, 1) != 0;
    s.transport_errors = r.unsignedNumber();
    s.beats = r.unsignedNumber();
    s.where = r.text();
    s.step = r.number(-1, INT64_MAX);
    s.phase = r.text();
    s.coordinates = r.text();
    s.operation = r.text();
    const int64_t in_operation_ms = r.number(-1, INT64_MAX);
    s.in_operation_s = in_operation_ms < 0 ? -1 : static_cast<double>(in_operation_ms) / 1000;
    report.ranks.push_back(std::move(s));
  }
  r.end();
  return report;
}

std::string encodeMessage(const DriverMessage& message) {
  Writer w;
  switch (message.kind) {
    case DriverMessage::Kind::kRun:
      w.word("run").number(message.attempt);
      writeList(w, message.slots);
      writeList(w, message.replica_sources);
      break;
    case DriverMessage::Kind::kStop:
      w.word("stop").number(message.attempt).number(message.self_check);
      writeList(w, message.kill);
      break;
    case DriverMessage::Kind::kLinks:
      w.word("links").number(message.attempt);
      writeList(w, message.slots);
      break;
    case DriverMessage::Kind::kEnd:
      w.word("end").number(message.exit_code).text(message.summary.substr(0, kMaxText));
      break;
  }
  return w.done();
}

DriverMessage decodeMessage(const std::string& text, const std::string& key) {
  Reader r(text, key);
  DriverMessage m;
  const size_t space = text.find(' ');
  const std::string kind = text.substr(0, space);
  r.word(kind == "run" || kind == "stop" || kind == "links" ? kind.c_str() : "end");
  if (kind == "run") {
    m.kind = DriverMessage::Kind::kRun;
    m.attempt = static_cast<int>(r.number(0, 1 << 30));
    m.slots = readList(r, 0);
    m.replica_sources = readList(r, -1);
    if (m.slots.empty() || m.replica_sources.size() != m.slots.size()) r.fail("a plan needs a source per slot");
  } else if (kind == "stop") {
    m.kind = DriverMessage::Kind::kStop;
    m.attempt = static_cast<int>(r.number(0, 1 << 30));
    m.self_check = r.number(0, 1) != 0;
    m.kill = readList(r, 0);
  } else if (kind == "links") {
    m.kind = DriverMessage::Kind::kLinks;
    m.attempt = static_cast<int>(r.number(0, 1 << 30));
    m.slots = readList(r, 0);
    if (m.slots.size() < 2) r.fail("a link check needs two hosts or more");
  } else {
    m.kind = DriverMessage::Kind::kEnd;
    m.exit_code = static_cast<int>(r.number(0, 255));
    m.summary = r.text();
  }
  r.end();
  return m;
}

}  // namespace megascale::launcher

// Wire format of the embedded TCP store, after the authentication handshake.
//   request:  u32 body length | u8 opcode | u32 request id | fields
//   response: u32 body length | u8 status | u32 request id | fields
// A field is u32 length + bytes; integers are little-endian. Frames over kMaxFrameBytes are refused and the
// connection dropped, so a hostile client cannot make the server allocate without bound.
// Requests run in the order they arrive; a get or wait whose keys are missing parks by itself, so the requests
// behind it go on and its reply comes later, matched by its id: many threads (or many simulated ranks) can
// share one connection. A ping's reply carries the server's incarnation, so a client that reconnects can tell
// a restarted (emptied) store from the one it wrote to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace megascale::store_protocol {

enum class Op : uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4, kCompareSet = 5, kDelete = 6, kPing = 7, kMultiSet = 8 };
enum class Reply : uint8_t { kOk = 0, kTimeout = 1, kBadRequest = 2 };

constexpr uint32_t kMaxFrameBytes = 64u << 20;
constexpr uint32_t kMaxKeysPerRequest = 1u << 20;
/// A connection may hold this many parked waits; more is refused (kBadRequest), so a client cannot make the
/// server hold unbounded state.
constexpr size_t kMaxParkedPerConnection = 1u << 16;

/// Appends fields to a frame under construction.
class Writer {
 public:
  explicit Writer(uint8_t head) { bytes_.resize(4); bytes_.push_back(static_cast<char>(head)); }
  Writer& str(std::string_view s);
  Writer& u32(uint32_t v);
  Writer& i64(int64_t v);
  Writer& u64(uint64_t v) { return i64(static_cast<int64_t>(v)); }
  /// Fills in the length prefix and returns the frame.
  std::string finish();

 private:
  std::string bytes_;
};

/// Reads fields from a frame body; every read checks bounds, so malformed bytes give nullopt, not a crash.
class Reader {
 public:
  explicit Reader(std::string_view body) : body_(body) {}
  std::optional<std::string> str();
  std::optional<uint32_t> u32();
  std::optional<int64_t> i64();
  bool atEnd() const { return pos_ == body_.size(); }

 private:
  std::string_view body_;
  size_t pos_ = 0;
};

/// If buffer holds a complete frame, returns its body length; nullopt if more bytes are needed.
/// Sets *too_large when the announced length exceeds kMaxFrameBytes.
std::optional<uint32_t> completeFrame(std::string_view buffer, bool* too_large);

}  // namespace megascale::store_protocol

// Wire format of the embedded TCP store, after the authentication handshake.
//   request:  u32 body length | u8 opcode | fields
//   response: u32 body length | u8 status | fields
// A field is u32 length + bytes; integers are little-endian. Frames over kMaxFrameBytes are refused and the
// connection dropped, so a hostile client cannot make the server allocate without bound.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace megascale::store_protocol {

enum class Op : uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4, kCompareSet = 5, kDelete = 6, kPing = 7 };
enum class Reply : uint8_t { kOk = 0, kTimeout = 1, kBadRequest = 2 };

constexpr uint32_t kMaxFrameBytes = 64u << 20;

/// Appends fields to a frame under construction.
class Writer {
 public:
  explicit Writer(uint8_t head) { bytes_.resize(4); bytes_.push_back(static_cast<char>(head)); }
  Writer& str(std::string_view s);
  Writer& u32(uint32_t v);
  Writer& i64(int64_t v);
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

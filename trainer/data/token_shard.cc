#include "trainer/data/token_shard.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "trainer/io/atomic_file.h"
#include "trainer/io/checksum.h"
#include "trainer/io/file_header.h"

namespace megascale::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = file_header::kBytes;
using file_header::get;
using file_header::put;

}  // namespace

void writeTokenShard(const std::string& path, const std::vector<int32_t>& tokens, int32_t vocab) {
  const uint32_t width = vocab <= 65536 ? 2 : 4;
  std::string payload(tokens.size() * width, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      throw std::invalid_argument("token " + std::to_string(tokens[i]) + " at " + std::to_string(i) +
                                  " is outside the vocabulary of " + std::to_string(vocab));
    }
    if (width == 2) {
      put(payload, i * 2, static_cast<uint16_t>(tokens[i]));
    } else {
      put(payload, i * 4, static_cast<uint32_t>(tokens[i]));
    }
  }
  std::string header = file_header::start(kMagic, kVersion);
  put(header, 12, width);
  put(header, 16, static_cast<uint32_t>(vocab));
  put(header, 20, crc32c(0, payload.data(), payload.size()));
  put(header, 24, static_cast<uint64_t>(tokens.size()));
  file_header::seal(header);
  writeFileAtomically(path, header + payload);
}

TokenShard readTokenShard(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open token shard " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return std::runtime_error("token shard " + path + ": " + what); };
  if (auto problem = file_header::problem(bytes, kMagic, kVersion, "token shard"); !problem.empty()) throw bad(problem);
  const uint32_t width = get<uint32_t>(bytes, 12);
  const uint32_t vocab = get<uint32_t>(bytes, 16);
  const uint64_t count = get<uint64_t>(bytes, 24);
  if (width != 2 && width != 4) throw bad("token width " + std::to_string(width) + " bytes (2 or 4 expected)");
  if (vocab < 2 || vocab > 0x7fffffffu) throw bad("vocabulary size " + std::to_string(vocab));
  if (count > (bytes.size() - kHeaderBytes) / width || bytes.size() != kHeaderBytes + count * width) {
    throw bad("header says " + std::to_string(count) + " tokens of " + std::to_string(width) + " bytes but the file has " +
              std::to_string(bytes.size() - kHeaderBytes) + " payload bytes (truncated?)");
  }
  if (get<uint32_t>(bytes, 20) != crc32c(0, bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes)) {
    throw bad("payload checksum mismatch (corrupted)");
  }
  TokenShard shard;
  shard.vocab = static_cast<int32_t>(vocab);
  shard.tokens.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t t = width == 2 ? get<uint16_t>(bytes, kHeaderBytes + i * 2) : get<uint32_t>(bytes, kHeaderBytes + i * 4);
    if (t >= vocab) throw bad("token " + std::to_string(t) + " at " + std::to_string(i) + " is outside its vocabulary");
    shard.tokens[i] = static_cast<int32_t>(t);
  }
  return shard;
}

}  // namespace megascale::trainer

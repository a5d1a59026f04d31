#include "trainer/io/section_file.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "trainer/io/atomic_file.h"
#include "trainer/io/checksum.h"
#include "trainer/io/file_header.h"

namespace megascale::trainer {

std::string& SectionWriter::frame(const std::string& name, uint64_t bytes) {
  const auto name_length = static_cast<uint32_t>(name.size());
  std::string& out = owned_.emplace_back();
  out.append(reinterpret_cast<const char*>(&name_length), 4);
  out += name;
  out.append(reinterpret_cast<const char*>(&bytes), 8);
  return out;
}

void SectionWriter::add(const std::string& name, const void* data, uint64_t bytes) {
  std::string& out = frame(name, bytes);
  out.append(static_cast<const char*>(data), bytes);
  parts_.push_back(out);
}

void SectionWriter::addViews(const std::string& name, const std::vector<std::string_view>& pieces) {
  uint64_t bytes = 0;
  for (const std::string_view piece : pieces) bytes += piece.size();
  parts_.push_back(frame(name, bytes));
  parts_.insert(parts_.end(), pieces.begin(), pieces.end());
}

std::vector<std::string_view> SectionWriter::file(std::string& header, const char (&magic)[8],
                                                  uint32_t version) const {
  uint64_t bytes = 0;
  uint32_t crc = 0;
  for (const std::string_view part : parts_) {
    bytes += part.size();
    crc = crc32c(crc, part.data(), part.size());
  }
  header = file_header::start(magic, version);
  file_header::put(header, 16, bytes);
  file_header::put(header, 24, crc);
  file_header::seal(header);
  std::vector<std::string_view> file{header};
  file.insert(file.end(), parts_.begin(), parts_.end());
  return file;
}

void SectionWriter::write(const std::string& path, const char (&magic)[8], uint32_t version) const {
  std::string header;
  writeFileAtomically(path, file(header, magic, version));
}

std::runtime_error SectionFile::error(const std::string& problem) const {
  return std::runtime_error("checkpoint " + path_ + ": " + problem);
}

SectionFile::SectionFile(const std::string& path, const char (&magic)[8], uint32_t version, const char* what)
    : path_(path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open checkpoint " + path);
  bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (auto problem = file_header::problem(bytes_, magic, version, what); !problem.empty()) throw error(problem);
  const size_t header = file_header::kBytes;
  const auto payload_bytes = file_header::get<uint64_t>(bytes_, 16);
  const auto payload_crc = file_header::get<uint32_t>(bytes_, 24);
  if (bytes_.size() - header != payload_bytes) {
    throw error("truncated or padded: header says " + std::to_string(payload_bytes) + " payload bytes, file has " +
                std::to_string(bytes_.size() - header));
  }
  if (payload_crc != crc32c(0, bytes_.data() + header, payload_bytes)) {
    throw error("payload checksum mismatch (corrupted)");
  }
  size_t at = header;
  while (at < bytes_.size()) {
    uint32_t name_length;
    uint64_t length;
    if (bytes_.size() - at < 4) throw error("malformed section table");
    std::memcpy(&name_length, bytes_.data() + at, 4);
    if (bytes_.size() - at - 4 < name_length + 8ull) throw error("malformed section table");
    std::string name(bytes_.data() + at + 4, name_length);
    std::memcpy(&length, bytes_.data() + at + 4 + name_length, 8);
    at += 12 + name_length;
    if (bytes_.size() - at < length) throw error("section '" + name + "' runs past the end");
    sections_[name] = std::string_view(bytes_.data() + at, length);
    at += length;
  }
}

std::string_view SectionFile::section(const std::string& name) const {
  auto it = sections_.find(name);
  if (it == sections_.end()) throw error("missing section '" + name + "'");
  return it->second;
}

std::string_view SectionFile::section(const std::string& name, size_t expected_bytes) const {
  const std::string_view s = section(name);
  if (s.size() != expected_bytes) {
    throw error("section '" + name + "' has " + std::to_string(s.size()) + " bytes, expected " +
                std::to_string(expected_bytes));
  }
  return s;
}

std::vector<std::string> SectionFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, bytes] : sections_) out.push_back(name);
  return out;
}

}  // namespace megascale::trainer

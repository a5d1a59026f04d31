// A program running on an emulated host (EmulatedCluster::on gives its command line), read line by line: the
// namespace tests start their peers with it and wait for what each prints.
#pragma once

#include <cstdio>
#include <string>

namespace megascale::testbed {

class HostProcess {
 public:
  explicit HostProcess(const std::string& command) : pipe_(popen(command.c_str(), "r")) {}
  ~HostProcess() {
    if (pipe_ != nullptr) pclose(pipe_);  // waits for the program to end
  }
  HostProcess(const HostProcess&) = delete;
  HostProcess& operator=(const HostProcess&) = delete;

  /// The next line it prints, without its newline; "" once it has ended (or could not start).
  std::string line() {
    char buffer[2048];
    if (pipe_ == nullptr || std::fgets(buffer, sizeof(buffer), pipe_) == nullptr) return "";
    std::string s = buffer;
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }

 private:
  FILE* pipe_;
};

}  // namespace megascale::testbed

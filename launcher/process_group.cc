#include "launcher/process_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace megascale::launcher {

extern "C" char** environ;

std::string describeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended with wait status " + std::to_string(wait_status);
}

void ProcessGroup::spawn(int rank, const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe failed: ") + strerror(errno));
  }
  // Build everything the child needs before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (!env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);                        // signals reach ranks only through the launcher
    prctl(PR_SET_PDEATHSIG, SIGKILL);     // a killed launcher leaves no orphan ranks
    if (getppid() != parent) _exit(127);  // the launcher died before prctl took effect
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    const char msg[] = "megascale-run: cannot execute the program\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  RankProcess p;
  p.rank = rank;
  p.pid = pid;
  p.out_fd = out[0];
  p.err_fd = err[0];
  ranks_.push_back(p);
  ++alive_;
}

void ProcessGroup::relay(RankProcess& p, int fd, std::string& partial, bool is_err, bool eof) {
  char buf[65536];
  ssize_t n = eof ? 0 : read(fd, buf, sizeof(buf));
  if (n > 0) partial.append(buf, static_cast<size_t>(n));
  std::string prefix = "[" + std::to_string(p.rank) + "] ";
  std::string out;
  size_t start = 0, nl;
  while ((nl = partial.find('\n', start)) != std::string::npos) {
    out += prefix + partial.substr(start, nl - start + 1);
    start = nl + 1;
  }
  partial.erase(0, start);
  if (n <= 0 && !partial.empty()) {  // EOF: flush an unterminated last line
    out += prefix + partial + "\n";
    partial.clear();
  }
  if (!out.empty()) {
    ssize_t ignored = write(is_err ? STDERR_FILENO : STDOUT_FILENO, out.data(), out.size());
    (void)ignored;
  }
  if (n <= 0) {
    close(fd);
    (is_err ? p.err_fd : p.out_fd) = -1;
  }
}

void ProcessGroup::signalAll(int sig) {
  for (size_t i = 0; i < ranks_.size(); ++i) signal(i, sig);
}

void ProcessGroup::signal(size_t index, int sig) {
  // Each rank leads a process group of its own: the signal reaches what the rank started too (a shell's
  // children), also after the rank itself has ended.
  kill(-ranks_[index].pid, sig);
}

bool failed(int wait_status) { return !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0); }

std::vector<size_t> ProcessGroup::pump(std::chrono::milliseconds wait) {
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, bool>> owners;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i].out_fd >= 0) {
      fds.push_back({ranks_[i].out_fd, POLLIN, 0});
      owners.push_back({i, false});
    }
    if (ranks_[i].err_fd >= 0) {
      fds.push_back({ranks_[i].err_fd, POLLIN, 0});
      owners.push_back({i, true});
    }
  }
  poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
  for (size_t k = 0; k < fds.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    RankProcess& p = ranks_[owners[k].first];
    relay(p, fds[k].fd, owners[k].second ? p.err_partial : p.out_partial, owners[k].second, false);
  }
  std::vector<size_t> ended;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    RankProcess& p = ranks_[i];
    int status;
    if (p.exited || waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
    p.exited = true;
    p.wait_status = status;
    --alive_;
    ended.push_back(i);
  }
  return ended;
}

void ProcessGroup::stop(std::chrono::milliseconds grace) {
  signalAll(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool killed = false;
  while (alive_ > 0) {
    pump(std::chrono::milliseconds(10));
    if (!killed && std::chrono::steady_clock::now() >= deadline) {
      signalAll(SIGKILL);
      killed = true;
    }
  }
  drain(std::chrono::milliseconds(1000));
}

void ProcessGroup::drain(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const auto open = [&] {
    for (const RankProcess& p : ranks_) {
      if (p.out_fd >= 0 || p.err_fd >= 0) return true;
    }
    return false;
  };
  while (open() && std::chrono::steady_clock::now() < deadline) pump(std::chrono::milliseconds(10));
}

ProcessGroup::~ProcessGroup() {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!ranks_[i].exited) signal(i, SIGKILL);
  }
  for (RankProcess& p : ranks_) {
    if (!p.exited) waitpid(p.pid, nullptr, 0);
    if (p.out_fd >= 0) close(p.out_fd);
    if (p.err_fd >= 0) close(p.err_fd);
  }
}

}  // namespace megascale::launcher

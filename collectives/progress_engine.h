// A thread that moves the operations of many communicators at once: each waits on its descriptors (one epoll
// for all), none blocks the others. A communicator that only talks over the network runs its operations here
// instead of on a thread of its own, so a process with many of them (ranks simulated by threads, Megatron's
// groups) costs one thread, and the handshakes and messages between its ranks cost no thread switch.
// MEGASCALE_PROGRESS_THREADS sets how many engines a process has (communicators are spread over them).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collectives/executor.h"
#include "common/socket.h"

namespace megascale {

class ProgressEngine {
 public:
  /// What the engine moves: a communicator (its operations, or its rank's listeners while it is idle).
  class Client {
   public:
    virtual ~Client() = default;
    /// On the engine's thread: moves the client as far as it goes now. True while it has more to do, and
    /// *wait says what it waits for (the engine fills in the descriptors' revents); false once it has none (a
    /// later post() brings it back).
    virtual bool advance(RunWait** wait) = 0;
  };

  /// An engine of the process's, chosen for a new client (they are spread round-robin).
  static ProgressEngine& forNewClient();

  ProgressEngine();
  ~ProgressEngine();

  /// The client has work: advance it soon. Any thread.
  void post(Client* client);
  /// The engine forgets the client and is not inside it when this returns. Any thread (on the engine's own,
  /// at once).
  void remove(Client* client);

 private:
  struct Waiting {
    Client* client;
    uint64_t generation;  // of the client's wait that registered it: an older wait's event is stale
  };
  struct Entry {
    uint64_t generation = 0;
    RunWait* wait = nullptr;  // while waiting
    bool runnable = false;
    bool registered = false;  // in the engine (posted and not finished)
    std::multimap<Clock::time_point, Client*>::iterator timer;
    bool has_timer = false;
  };

  void loop();
  /// Takes what other threads posted or removed; false once the engine is stopping.
  bool takeInbox();
  void makeRunnable(Client* client);
  void advanceRunnable();
  void arm(Client* client, Entry& entry, RunWait& wait);
  void clearTimer(Entry& entry);
  void forget(Client* client);
  int waitMs() const;

  Fd epoll_;
  Fd wake_;  // an eventfd: posts and removals wake the loop
  std::thread thread_;

  std::mutex mutex_;  // guards the inbox and removal requests
  std::condition_variable removed_cv_;
  std::vector<Client*> posted_;
  std::vector<Client*> removals_;
  uint64_t removals_done_ = 0;
  uint64_t removals_asked_ = 0;
  bool stop_ = false;

  // The engine thread's own.
  std::unordered_map<Client*, Entry> entries_;
  std::deque<Client*> runnable_;
  std::unordered_map<int, std::vector<Waiting>> waiters_;  // by descriptor, until its event
  std::multimap<Clock::time_point, Client*> timers_;
  std::vector<bool> in_epoll_;  // by descriptor: added to the epoll once (it may have left it by closing since)
};

}  // namespace megascale

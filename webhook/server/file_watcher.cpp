#include "webhook/server/file_watcher.h"

#include <sys/stat.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace kubegap {

namespace net = boost::asio;

struct FileWatcher::State {
  State(net::io_context& ioc, std::vector<std::string> p, std::chrono::milliseconds i, std::function<bool()> c)
      : timer(net::make_strand(ioc)), paths(std::move(p)), interval(i), on_change(std::move(c)) {}
  net::steady_timer timer;  // on a strand: the loop and stop() never run at once
  std::vector<std::string> paths;
  std::chrono::milliseconds interval;
  std::function<bool()> on_change;
  bool stopped = false;
};

std::string FileWatcher::signature(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      out += "missing;";
      continue;
    }
    out += std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return out;
}

FileWatcher::FileWatcher(net::io_context& ioc, std::vector<std::string> paths, std::chrono::milliseconds interval,
                         std::function<bool()> on_change)
    : state_(std::make_shared<State>(ioc, std::move(paths), interval, std::move(on_change))) {}

FileWatcher::~FileWatcher() {
  // stop() only posts to the loop; a post can throw only when allocation fails, and a
  // destructor must not throw: the watcher is then left to the loop's own shutdown.
  try {
    stop();
  } catch (...) {  // nothing better to do in a destructor
  }
}

void FileWatcher::start() {
  auto state = state_;
  // The starting point is taken now, not when the loop first runs, so a change made
  // right after start() is not mistaken for the starting state.
  net::co_spawn(
      state->timer.get_executor(),
      [state, initial = signature(state->paths)]() -> net::awaitable<void> {
        std::string last = initial;
        while (!state->stopped) {
          state->timer.expires_after(state->interval);
          auto [ec] = co_await state->timer.async_wait(net::as_tuple(net::use_awaitable));
          if (ec || state->stopped) co_return;
          std::string now = signature(state->paths);
          // A failed reload (say, a certificate swapped before its key) is retried on the
          // next tick: `last` only moves once the change has been taken.
          if (now != last && state->on_change()) last = std::move(now);
        }
      },
      net::detached);
}

void FileWatcher::stop() {
  auto state = state_;
  net::post(state->timer.get_executor(), [state] {
    state->stopped = true;
    state->timer.cancel();
  });
}

}  // namespace kubegap

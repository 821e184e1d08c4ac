#include "webhook/mcp/stdio_server.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "webhook/telemetry/logging.h"

namespace kubegap {
namespace {

// LineWriter: whole lines to `fd`, one writer at a time (the calls' threads answer
// concurrently). After the reader went away (EPIPE) the rest is dropped.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void write_line(const std::string& line) {
    std::lock_guard lock(mutex_);
    if (broken_) return;
    std::string out = line + "\n";
    std::size_t at = 0;
    while (at < out.size()) {
      const ssize_t n = ::write(fd_, out.data() + at, out.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;
        return;
      }
      at += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

// SignalWatch: SIGTERM and SIGINT become a byte on a pipe the reader polls, so a signal
// ends the read loop instead of interrupting whatever thread it lands on. Blocked in
// every thread (the mask is inherited), taken by one thread with sigtimedwait.
class SignalWatch {
 public:
  SignalWatch() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    block_stop_signals();
    std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is an EPIPE to handle, not death
    if (::pipe(pipe_) != 0) pipe_[0] = pipe_[1] = -1;
    thread_ = std::thread([this] {
      const timespec tick{0, 200'000'000};
      while (!stop_.load()) {
        const int sig = sigtimedwait(&set_, nullptr, &tick);
        if (sig > 0) {
          log_event(spdlog::level::info, "mcp: signal, stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
          const char byte = 1;
          [[maybe_unused]] const auto n = ::write(pipe_[1], &byte, 1);
          return;
        }
      }
    });
  }
  ~SignalWatch() {
    stop_.store(true);
    thread_.join();
    for (const int fd : pipe_) {
      if (fd >= 0) ::close(fd);
    }
  }
  int fd() const { return pipe_[0]; }

 private:
  sigset_t set_{};
  int pipe_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// LineReader: splits the bytes of `fd` into lines; a line over `limit` is reported once by
// its size and skipped to its newline without being kept.
class LineReader {
 public:
  LineReader(McpSession& session, std::size_t limit) : session_(session), limit_(limit) {}

  void feed(const char* data, std::size_t size) {
    for (std::size_t at = 0; at < size;) {
      const char* newline = static_cast<const char*>(std::memchr(data + at, '\n', size - at));
      const std::size_t end = newline == nullptr ? size : static_cast<std::size_t>(newline - data);
      take(data + at, end - at);
      if (newline == nullptr) break;
      finish_line();
      at = end + 1;
    }
  }
  void finish() {  // EOF: a last line without a newline is still a message
    if (!line_.empty() || dropped_ > 0) finish_line();
  }

 private:
  void take(const char* data, std::size_t size) {
    if (dropped_ > 0 || line_.size() + size > limit_) {
      dropped_ += line_.size() + size;
      line_.clear();
      line_.shrink_to_fit();
      return;
    }
    line_.append(data, size);
  }
  void finish_line() {
    if (dropped_ > 0) {
      session_.oversized(dropped_);
    } else {
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      session_.handle_line(line_);
    }
    line_.clear();
    dropped_ = 0;
  }

  McpSession& session_;
  std::size_t limit_;
  std::string line_;
  std::size_t dropped_ = 0;
};

}  // namespace

void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int run_stdio_server(McpOptions options, int in_fd, int out_fd) {
  SignalWatch signals;
  LineWriter writer(out_fd);
  const std::size_t limit = options.max_message_bytes;
  McpSession session(std::move(options), [&writer](const std::string& line) { writer.write_line(line); });
  LineReader reader(session, limit);
  log_event(spdlog::level::info, "mcp: serving on stdin/stdout", {});
  std::string buffer(64 * 1024, '\0');
  const char* why = "end of input";
  for (;;) {
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    if (::poll(fds, signals.fd() >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      why = "poll failed";
      break;
    }
    if (signals.fd() >= 0 && (fds[1].revents & POLLIN) != 0) {
      why = "signal";
      break;
    }
    const ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      reader.finish();
      break;
    }
    reader.feed(buffer.data(), static_cast<std::size_t>(n));
  }
  log_event(spdlog::level::info, "mcp: stopping",
            {{"why", why}, {"calls_cancelled", std::to_string(session.calls_in_flight())}});
  session.shutdown();
  return 0;
}

}  // namespace kubegap

#pragma once
// WebhookServer: the asynchronous HTTPS server for POST /validate (Beast over OpenSSL,
// C++20 coroutines throughout, one strand per connection, or the loop's own executor when
// one thread runs it: ServerOptions::one_loop_thread).
//
//   WebhookServer server(ioc, tls, handler, metrics, options);
//   auto endpoint = server.listen();   // port 0 picks a free port
//   ...  server.shutdown([] { /* every connection closed */ });

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "webhook/core/memory_budget.h"
#include "webhook/core/review_handler.h"
#include "webhook/server/server_options.h"
#include "webhook/server/tls.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

class WebhookServer {
 public:
  WebhookServer(boost::asio::io_context& ioc, const ServerTlsStore& tls, const ReviewHandler& handler, Metrics& metrics,
                ServerOptions options);
  ~WebhookServer();

  // listen: binds, starts accepting and returns the bound endpoint. Throws
  // boost::system::system_error when the address cannot be bound.
  boost::asio::ip::tcp::endpoint listen();

  // shutdown: stops accepting, closes idle connections at once and lets connections with
  // a request in progress answer it (with Connection: close). A connection that has not
  // sent its first request yet gets until its first-request deadline to send it (it may
  // be on the wire already), and is answered too. Calls `on_drained` once
  // every connection has closed, or after `deadline`, whichever comes first.
  void shutdown(std::chrono::milliseconds deadline, std::function<void()> on_drained);
  // drain: shutdown as a coroutine, on any executor (its timer is the caller's): it
  // returns when every connection has closed or after `deadline`.
  boost::asio::awaitable<void> drain(std::chrono::milliseconds deadline);

  std::size_t connections() const;
  // connection_executor: where a new connection's handlers run: a strand of its own, or
  // the loop itself when one thread runs it (ServerOptions::one_loop_thread).
  boost::asio::any_io_executor connection_executor() const;
  const MemoryBudget& memory_budget() const { return *budget_; }

 private:
  struct Connection;

  boost::asio::io_context& ioc_;
  const ServerTlsStore& tls_;
  const ReviewHandler& handler_;
  Metrics& metrics_;
  ServerOptions options_;
  std::shared_ptr<MemoryBudget> budget_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  // tick_: a timer that always fires within kTick, so that it stays at the front of the
  // review loop's timer queue (tick()).
  boost::asio::steady_timer tick_;

  // tick: re-arms tick_ until shutdown. Each read and write a connection starts arms its
  // deadline, seconds away; when that deadline is the loop's earliest, Asio reprograms
  // the kernel's timer (timerfd_settime) for it: twice per review on a quiet connection.
  // With a tick always earlier, none does (one reprogramming per tick instead).
  void tick();

  // admit: whether a new connection from `source` is taken (closing another for it when
  // needed); counts a refusal.
  bool admit(const boost::asio::ip::address& source);
  // evict_connection: closes one connection (of `from` only, when given) for a new one
  // (ServerOptions::reserved_connections says which; `at_cap` spares no young one:
  // ConnectionState::eviction_rank); false when none may be closed.
  bool evict_connection(const boost::asio::ip::address* from, bool at_cap);
  std::size_t per_source_cap() const;
  // unmark_evicting: the connection is no longer being closed for another (it is gone,
  // or its request arrived first); with mutex_ held.
  void unmark_evicting(Connection& connection);

  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> connections_;
  std::size_t closing_ = 0;  // of connections_, those marked for eviction and not yet gone
  std::map<boost::asio::ip::address, std::size_t> per_source_;  // open connections by peer address
  std::uint64_t next_id_ = 0;
};

}  // namespace kubegap

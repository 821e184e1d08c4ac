#pragma once
// WebhookServer: the asynchronous HTTPS server for POST /validate (Beast over OpenSSL,
// C++20 coroutines throughout, one strand per connection).
//
//   WebhookServer server(ioc, tls, handler, metrics, options);
//   auto endpoint = server.listen();   // port 0 picks a free port
//   ...  server.shutdown([] { /* every connection closed */ });

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "webhook/memory_budget.h"
#include "webhook/metrics.h"
#include "webhook/review_handler.h"
#include "webhook/tls.h"

namespace kubegap {

struct ServerOptions {
  boost::asio::ip::tcp::endpoint listen{boost::asio::ip::make_address("0.0.0.0"), 8443};
  // Apply explicit limits to the request's size to prevent abuse. A Pod with many
  // containers and env vars is tens of KB; 8 MiB leaves room for any real workload.
  std::size_t body_limit = 8 * 1024 * 1024;
  std::size_t header_limit = 16 * 1024;
  // The API server keeps connections idle for about 90 s; stay open longer so it, not we,
  // closes them (closing first races with a request it is about to send).
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  // After its handshake a connection has this long to send its first request's header.
  // The API server sends at once; a connection that only holds a slot does not.
  std::chrono::milliseconds first_request_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};
  // Connections beyond this are closed on accept. The API servers of a cluster keep a
  // few dozen; each open connection costs about 100 KiB (TLS state and buffers).
  std::size_t max_connections = 4096;
  // Within this many slots of the cap, each new connection closes the connection that has
  // waited longest without a request in progress (one that never sent a request first),
  // so the slots near the cap stay free for the API server's next connection.
  std::size_t reserved_connections = 64;
  // What requests in flight may be charged, across all connections (memory_budget.h);
  // 0: default_memory_budget(container_memory_limit(), body_limit).
  std::size_t memory_budget = 0;
};

class WebhookServer {
 public:
  WebhookServer(boost::asio::io_context& ioc, const ServerTlsStore& tls,
                const ReviewHandler& handler, Metrics& metrics, ServerOptions options);
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

  std::size_t connections() const;
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

  // evict_idle_connection: closes the connection that has waited longest for a request
  // (never-used ones first); none when every connection has a request in progress.
  void evict_idle_connection();

  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> connections_;
  std::uint64_t next_id_ = 0;
};

}  // namespace kubegap

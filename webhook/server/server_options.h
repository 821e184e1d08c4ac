#pragma once
// ServerOptions: the limits and deadlines of the HTTPS server, shared by WebhookServer
// (server.h) and each connection's Session (session.h). Defaults are the production
// values; `serve`'s flags override them (webhook/cmd).

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>

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
  // Each request's header and body together must be in by this long after its first
  // byte. The API server writes a review at once (a few KB to a few MB on a fast
  // network); a client that trickles bytes to hold a connection is cut off here, not
  // after a per-read timeout that each trickled byte would renew.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};
  // Connections beyond this are closed on accept. The API servers of a cluster keep a
  // few dozen; each open connection costs about 100 KiB (TLS state and buffers).
  std::size_t max_connections = 4096;
  // Within this many slots of the cap, each new connection closes another, so the slots
  // near the cap stay free for the API server's next connection: first one that never
  // sent a request, then the oldest incomplete request (its client is slow: a review is
  // read within milliseconds), then the longest idle. A request whose header and body are
  // in (being reviewed or answered) is never closed for another.
  std::size_t reserved_connections = 64;
  // One source address may hold at most this many connections (0: a quarter of
  // max_connections, at least 16), so one pod cannot take every slot; past it a new connection from
  // that address is closed on accept.
  std::size_t max_connections_per_source = 0;
  // What requests in flight may be charged, across all connections (memory_budget.h);
  // 0: default_memory_budget(container_memory_limit(), body_limit).
  std::size_t memory_budget = 0;
  // The review loop is run by one thread (serve --threads 1). Two handlers of a connection
  // then never run at once even without a strand (the loop is one: Asio's "implicit
  // strand"), so a connection gets the loop's own executor. A strand costs a lock and a
  // reference count per handler: about 7% of one review thread's rate (stop 57). Never
  // set it for a loop that more than one thread runs.
  bool one_loop_thread = false;
};

}  // namespace kubegap

#include "webhook/server/server.h"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <utility>

#include "webhook/server/http_util.h"
#include "webhook/server/session.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using session::kAwait;

// Connection: one TLS connection; `state` is what eviction and shutdown read of it.
struct WebhookServer::Connection {
  Connection(tcp::socket socket, std::shared_ptr<ssl::context> context)
      : tls(std::move(context)), stream(std::move(socket), *tls) {}
  // The context this connection was accepted with: a rotated certificate applies to new
  // connections, and this one keeps working with the old.
  std::shared_ptr<ssl::context> tls;
  beast::ssl_stream<beast::tcp_stream> stream;
  session::ConnectionState state;
  boost::asio::ip::address source;
};

WebhookServer::WebhookServer(net::io_context& ioc, const ServerTlsStore& tls, const ReviewHandler& handler,
                             Metrics& metrics, ServerOptions options)
    : ioc_(ioc),
      tls_(tls),
      handler_(handler),
      metrics_(metrics),
      options_(std::move(options)),
      budget_(std::make_shared<MemoryBudget>(
          options_.memory_budget != 0 ? options_.memory_budget
                                      : default_memory_budget(container_memory_limit(), options_.body_limit))),
      acceptor_(net::make_strand(ioc)),
      tick_(ioc) {
  metrics_.watch_memory_budget(budget_);
}

WebhookServer::~WebhookServer() = default;

tcp::endpoint WebhookServer::listen() {
  open_listener(acceptor_, options_.listen, "--listen", net::socket_base::max_listen_connections);
  tcp::endpoint bound = acceptor_.local_endpoint();

  auto accept_loop = [this]() -> net::awaitable<void> {
    net::steady_timer backoff(acceptor_.get_executor());
    while (!stopping_) {
      auto [ec, socket] = co_await acceptor_.async_accept(connection_executor(), kAwait);
      if (ec) {
        if (stopping_ || ec == net::error::operation_aborted) co_return;
        // e.g. EMFILE: back off briefly instead of spinning on the error.
        log_event(spdlog::level::warn, "accept failed", {{"error", ec.message()}});
        backoff.expires_after(std::chrono::milliseconds(50));
        co_await backoff.async_wait(kAwait);
        continue;
      }
      beast::error_code no_peer;
      const auto source = socket.remote_endpoint(no_peer).address();
      if (no_peer || !admit(source)) {
        beast::error_code ignored;
        socket.close(ignored);
        continue;
      }
      auto connection = std::make_shared<Connection>(std::move(socket), tls_.current());
      connection->source = source;
      std::uint64_t id = 0;
      {
        std::lock_guard lock(mutex_);
        ++per_source_[source];
        id = next_id_++;
        connections_.emplace(id, connection);
      }
      auto executor = connection->stream.get_executor();
      net::co_spawn(
          executor,
          [this, connection]() -> net::awaitable<void> {
            const session::SessionContext context{options_, handler_, metrics_, budget_, stopping_};
            session::Session<beast::ssl_stream<beast::tcp_stream>> session(context, connection->stream,
                                                                           connection->state);
            co_await session.run();
          },
          [this, id, source, connection](const std::exception_ptr& error) {
            {
              std::lock_guard lock(mutex_);
              unmark_evicting(*connection);
              connections_.erase(id);
              if (auto it = per_source_.find(source); it != per_source_.end() && --it->second == 0) {
                per_source_.erase(it);
              }
            }
            if (error) {
              try {
                std::rethrow_exception(error);
              } catch (const std::exception& e) {
                log_event(spdlog::level::err, "connection failed", {{"error", e.what()}});
              }
            }
          });
    }
  };
  // Pass the lambda itself: co_spawn keeps it (and its captures) alive while it runs.
  net::co_spawn(acceptor_.get_executor(), std::move(accept_loop), [](const std::exception_ptr& error) {
    if (error) log_event(spdlog::level::err, "accept loop stopped by an exception");
  });
  tick();
  return bound;
}

// kTick: shorter than the deadlines connections set (the shortest, the first-request
// timeout, is seconds; tests set 300 ms), so a deadline is the earliest only when it is
// already less than a tick away; ten wake-ups a second cost nothing next to reviews.
constexpr auto kTick = std::chrono::milliseconds(100);

void WebhookServer::tick() {
  // One chain of handlers: only the previous tick's handler re-arms it. Shutdown ends it
  // by stopping_, within a tick (the server's owner stops the loop anyway).
  if (stopping_) return;
  tick_.expires_after(kTick);
  tick_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

net::awaitable<void> WebhookServer::drain(std::chrono::milliseconds deadline) {
  stopping_ = true;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, weak] : connections_) {
      if (auto connection = weak.lock()) {
        // Only connections that have served a request and wait for the next: a fresh
        // one may be carrying its first request already (Session::run).
        net::post(connection->stream.get_executor(), [connection] {
          if (connection->state.phase == session::Phase::kIdle) beast::get_lowest_layer(connection->stream).cancel();
        });
      }
    }
  }
  // Wait for the connections to finish on their own executors, bounded by the deadline.
  const auto until = std::chrono::steady_clock::now() + deadline;
  net::steady_timer timer(co_await net::this_coro::executor);
  while (connections() > 0 && std::chrono::steady_clock::now() < until) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(kAwait);
  }
}

void WebhookServer::shutdown(std::chrono::milliseconds deadline, std::function<void()> on_drained) {
  net::co_spawn(ioc_, drain(deadline),
                [on_drained = std::move(on_drained)](const std::exception_ptr&) { on_drained(); });
}

net::any_io_executor WebhookServer::connection_executor() const {
  if (options_.one_loop_thread) return ioc_.get_executor();
  return net::make_strand(ioc_);
}

bool WebhookServer::admit(const boost::asio::ip::address& source) {
  const std::size_t cap = options_.max_connections, reserve = options_.reserved_connections;
  const auto refuse = [this] {
    metrics_.connection_refused();
    return false;
  };
  std::size_t open = 0, from_source = 0;
  {
    std::lock_guard lock(mutex_);
    // Those already being closed for others do not count: under a flood that reconnects
    // at once, closes in flight would otherwise fill the reserve and the newest
    // connection, which may be the API server's, would be refused. They still hold
    // descriptors (each closes at once, without waiting for close_notify), so all
    // together stay under twice the cap plus the reserve.
    if (connections_.size() >= 2 * cap + reserve) return refuse();
    open = connections_.size() - closing_;
    if (auto it = per_source_.find(source); it != per_source_.end()) from_source = it->second;
  }
  // Past the reserve it is refused, and nothing is closed for it.
  if (open >= cap + reserve) return refuse();
  // One address may not take every slot (a pod trickling bytes on many connections). At
  // its share, one of its own connections goes for the new one, young ones too (the API
  // server may share its address with host-network pods); only when all of them have
  // requests in hand is the new one refused.
  const std::size_t share = per_source_cap();
  if (from_source >= share && share < cap) {  // (a share of the whole cap is the cap below)
    if (from_source >= share + reserve || !evict_connection(&source, /*at_cap=*/true)) {
      metrics_.connection_refused_per_source();
      return false;
    }
    return true;
  }
  // Near the cap each new connection closes another; at the cap it is taken only when
  // another can be closed for it (evictions land asynchronously: the reserve absorbs
  // those in flight), else it is refused rather than run out of memory or descriptors.
  // At the cap the young are not spared: a flood that reconnects at once would otherwise
  // keep every slot under the grace and have every new connection refused.
  const bool evicted = open + reserve >= cap && evict_connection(nullptr, /*at_cap=*/open >= cap);
  if (open >= cap && !evicted) return refuse();
  return true;
}

std::size_t WebhookServer::per_source_cap() const {
  return options_.max_connections_per_source != 0
             ? options_.max_connections_per_source
             : std::max(options_.max_connections / 4, std::min<std::size_t>(options_.max_connections, 16));
}

bool WebhookServer::evict_connection(const boost::asio::ip::address* from, bool at_cap) {
  std::shared_ptr<Connection> victim;
  std::pair<int, std::chrono::steady_clock::rep> victim_rank;
  {
    std::lock_guard lock(mutex_);
    // The order is ConnectionState::eviction_rank's. The scan runs only near the cap.
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    for (auto& [id, weak] : connections_) {
      auto connection = weak.lock();
      if (!connection || connection->state.evicting.load()) continue;
      if (from != nullptr && connection->source != *from) continue;
      const auto rank = connection->state.eviction_rank(now, at_cap);
      if (!rank) continue;
      if (!victim || *rank < victim_rank) {
        victim = std::move(connection);
        victim_rank = *rank;
      }
    }
    if (victim) {
      victim->state.evicting = true;
      ++closing_;
    }
  }
  if (!victim) return false;
  net::post(victim->stream.get_executor(), [this, victim, at_cap] {
    // Decided again on the connection's executor: its request may have arrived meanwhile.
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    if (!victim->state.eviction_rank(now, at_cap)) {
      std::lock_guard lock(mutex_);
      unmark_evicting(*victim);
      return;
    }
    const bool reading = victim->state.phase.load() == session::Phase::kReading;
    if (!reading) metrics_.connection_evicted();  // a request's eviction is counted when it ends
    log_event(spdlog::level::debug, reading ? "incomplete request closed: near the connection cap"
                                            : "idle connection closed: near the connection cap");
    // cancel() alone can be lost: when the read it targets has completed and its
    // handler is queued behind this one, nothing is pending to cancel, and the session's
    // next read would wait out its deadline (seconds) holding the slot it was closed for.
    // Shutting the receive side is sticky: a later read gets what was already queued,
    // then EOF at once instead of waiting, so the session closes at its next read that
    // finds nothing queued; a request already read whole is still answered (the send
    // side stays open), then the connection closes.
    auto& lowest = beast::get_lowest_layer(victim->stream);
    beast::error_code ignored;
    lowest.socket().shutdown(net::socket_base::shutdown_receive, ignored);
    lowest.cancel();
  });
  return true;
}

void WebhookServer::unmark_evicting(Connection& connection) {
  if (connection.state.evicting.exchange(false)) --closing_;
}

std::size_t WebhookServer::connections() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

}  // namespace kubegap

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
      acceptor_(net::make_strand(ioc)) {
  metrics_.watch_memory_budget(budget_);
}

WebhookServer::~WebhookServer() = default;

tcp::endpoint WebhookServer::listen() {
  open_listener(acceptor_, options_.listen, "--listen", net::socket_base::max_listen_connections);
  tcp::endpoint bound = acceptor_.local_endpoint();

  auto accept_loop = [this]() -> net::awaitable<void> {
    net::steady_timer backoff(acceptor_.get_executor());
    while (!stopping_) {
      auto [ec, socket] = co_await acceptor_.async_accept(net::make_strand(ioc_), kAwait);
      if (ec) {
        if (stopping_ || ec == net::error::operation_aborted) co_return;
        // e.g. EMFILE: back off briefly instead of spinning on the error.
        log_event(spdlog::level::warn, "accept failed", {{"error", ec.message()}});
        backoff.expires_after(std::chrono::milliseconds(50));
        co_await backoff.async_wait(kAwait);
        continue;
      }
      const std::size_t open = connections();
      if (open >= options_.max_connections) {
        // Over the cap: close at once rather than run out of memory or descriptors, and
        // free a slot for the next (evictions land asynchronously, so a flood can fill
        // the reserve before they do).
        evict_idle_connection();
        metrics_.connection_refused();
        beast::error_code ignored;
        socket.close(ignored);
        continue;
      }
      if (open + options_.reserved_connections >= options_.max_connections) evict_idle_connection();
      auto connection = std::make_shared<Connection>(std::move(socket), tls_.current());
      std::uint64_t id = 0;
      {
        std::lock_guard lock(mutex_);
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
          [this, id](const std::exception_ptr& error) {
            {
              std::lock_guard lock(mutex_);
              connections_.erase(id);
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
  return bound;
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
  // Wait for the connections to finish on their own strands, bounded by the deadline.
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

namespace {
// kFreshGrace: how long a new connection may wait for its first request before eviction
// may take it.
constexpr auto kFreshGrace = std::chrono::seconds(1);
}  // namespace

void WebhookServer::evict_idle_connection() {
  using session::Phase;
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(mutex_);
    // A connection that has sent no request for a second after accept goes first (the
    // API server writes its request at once); then the one idle longest. A younger fresh
    // one is spared: it may be the API server's, its request on the wire. The scan runs
    // only near the cap.
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(kFreshGrace).count();
    const auto rank = [](const Connection& c) {
      return std::pair(c.state.phase.load(std::memory_order_relaxed) == Phase::kFresh ? 0 : 1,
                       c.state.waiting_since.load(std::memory_order_relaxed));
    };
    for (auto& [id, weak] : connections_) {
      auto connection = weak.lock();
      if (!connection || !connection->state.closable() || connection->state.evicting.load()) continue;
      const auto [fresh, since] = rank(*connection);
      if (fresh == 0 && now - since < grace) continue;
      if (!victim || rank(*connection) < rank(*victim)) victim = std::move(connection);
    }
  }
  if (!victim) return;
  victim->state.evicting = true;
  net::post(victim->stream.get_executor(), [this, victim] {
    // Decided again on the connection's strand: a request may have started meanwhile.
    if (!victim->state.closable()) {
      victim->state.evicting = false;
      return;
    }
    metrics_.connection_evicted();
    log_event(spdlog::level::debug, "idle connection closed: near the connection cap");
    beast::get_lowest_layer(victim->stream).cancel();
  });
}

std::size_t WebhookServer::connections() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

}  // namespace kubegap

#include "webhook/server/health_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <utility>

namespace kubegap {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {
constexpr auto kAwait = net::as_tuple(net::use_awaitable);

// OpenSlot: one counted connection, released when its coroutine ends however it ends.
struct OpenSlot {
  std::shared_ptr<std::atomic<std::size_t>> open;
  explicit OpenSlot(std::shared_ptr<std::atomic<std::size_t>> counter) : open(std::move(counter)) {}
  OpenSlot(const OpenSlot&) = delete;
  OpenSlot& operator=(const OpenSlot&) = delete;
  ~OpenSlot() { open->fetch_sub(1); }
};

net::awaitable<void> serve_health(tcp::socket socket, const ReadinessState& readiness, const Metrics& metrics,
                                  std::shared_ptr<std::atomic<std::size_t>> open) {
  const OpenSlot slot{std::move(open)};
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer(8192);
  http::request_parser<http::string_body> parser;
  parser.header_limit(8192);
  parser.body_limit(4096);
  stream.expires_after(std::chrono::seconds(5));
  auto [ec, n] = co_await http::async_read(stream, buffer, parser, kAwait);
  if (ec) co_return;
  HttpResponse response = route_health_request(parser.get(), readiness, metrics);
  without_body_for_head(parser.get().method(), response);
  response.keep_alive(false);
  co_await http::async_write(stream, response, kAwait);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}
}  // namespace

HttpResponse route_health_request(const HttpRequest& request, const ReadinessState& readiness, const Metrics& metrics) {
  const auto path = path_of(request.target());
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return make_response(request.version(), http::status::method_not_allowed, "use GET\n", "text/plain");
  }
  if (path == "/healthz") return make_response(request.version(), http::status::ok, "ok\n", "text/plain");
  if (path == "/readyz") {
    return readiness.ready
               ? make_response(request.version(), http::status::ok, "ready\n", "text/plain")
               : make_response(request.version(), http::status::service_unavailable, "not ready\n", "text/plain");
  }
  if (path == "/metrics") {
    return make_response(request.version(), http::status::ok, metrics.render(),
                         "text/plain; version=0.0.4; charset=utf-8");
  }
  return make_response(request.version(), http::status::not_found, "unknown path; try /healthz, /readyz or /metrics\n",
                       "text/plain");
}

HealthServer::HealthServer(net::io_context& ioc, const ReadinessState& readiness, Metrics& metrics,
                           tcp::endpoint endpoint, std::size_t max_connections)
    : ioc_(ioc),
      readiness_(readiness),
      metrics_(metrics),
      endpoint_(std::move(endpoint)),
      acceptor_(net::make_strand(ioc)),
      max_connections_(max_connections) {}

tcp::endpoint HealthServer::listen() {
  open_listener(acceptor_, endpoint_, "--health-listen", net::socket_base::max_listen_connections);
  net::co_spawn(
      acceptor_.get_executor(),
      [this]() -> net::awaitable<void> {
        net::steady_timer backoff(acceptor_.get_executor());
        for (;;) {
          auto [ec, socket] = co_await acceptor_.async_accept(net::make_strand(ioc_), kAwait);
          if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
          if (ec) {  // e.g. EMFILE: the listener stays readable, so do not spin
            backoff.expires_after(std::chrono::milliseconds(50));
            co_await backoff.async_wait(kAwait);
            continue;
          }
          if (open_->fetch_add(1) >= max_connections_) {
            open_->fetch_sub(1);
            metrics_.health_connection_refused();
            beast::error_code ignored;
            socket.close(ignored);
            continue;
          }
          auto executor = socket.get_executor();
          net::co_spawn(executor, serve_health(std::move(socket), readiness_, metrics_, open_), net::detached);
        }
      },
      net::detached);
  return acceptor_.local_endpoint();
}

void HealthServer::stop() {
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

}  // namespace kubegap

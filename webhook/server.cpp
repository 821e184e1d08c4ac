#include "webhook/server.h"

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

#include "webhook/admission_codec.h"
#include "webhook/http_util.h"
#include "webhook/logging.h"

namespace kubegap {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr auto kAwait = net::as_tuple(net::use_awaitable);
constexpr std::size_t kLingerBytes = 64 * 1024 * 1024;

// is_quiet_close: the peer went away; nothing to report.
bool is_quiet_close(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == ssl::error::stream_truncated || ec == net::error::operation_aborted ||
         ec == net::error::connection_reset || ec == beast::error::timeout;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

// Connection: one TLS connection. `idle` is true while no request is in progress
// (handshake, or waiting for the next request): shutdown may close it then.
struct WebhookServer::Connection {
  Connection(tcp::socket socket, std::shared_ptr<ssl::context> context)
      : tls(std::move(context)), stream(std::move(socket), *tls) {}
  // The context this connection was accepted with: a rotated certificate applies to new
  // connections, and this one keeps working with the old.
  std::shared_ptr<ssl::context> tls;
  beast::ssl_stream<beast::tcp_stream> stream;
  bool idle = true;  // touched only on the connection's strand
};

// Session: the coroutine that serves one connection, and the pure routing it feeds.
class WebhookServer::Session {
 public:
  Session(WebhookServer& server, std::shared_ptr<Connection> connection)
      : server_(server), connection_(std::move(connection)) {}

  net::awaitable<void> run() {
    auto& stream = connection_->stream;
    auto& tcp_stream = beast::get_lowest_layer(stream);
    tcp_stream.expires_after(server_.options_.handshake_timeout);
    if (auto [ec] = co_await stream.async_handshake(ssl::stream_base::server, kAwait); ec) {
      if (!is_quiet_close(ec)) log_event(spdlog::level::debug, "tls handshake failed", {{"error", ec.message()}});
      co_return;
    }
    beast::flat_buffer buffer;
    bool keep_alive = true;
    while (keep_alive && !server_.stopping_) {
      if (buffer.size() == 0) {  // wait for the next request, up to the idle timeout
        connection_->idle = true;
        tcp_stream.expires_after(server_.options_.idle_timeout);
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kAwait);
        connection_->idle = false;
        if (ec) break;
        buffer.commit(n);
      }
      keep_alive = co_await serve_one(buffer);
    }
    connection_->idle = false;
    tcp_stream.expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(kAwait);  // best effort close_notify
  }

 private:
  // serve_one: reads one request and answers it; returns whether to keep the connection.
  net::awaitable<bool> serve_one(beast::flat_buffer& buffer) {
    auto& stream = connection_->stream;
    auto& tcp_stream = beast::get_lowest_layer(stream);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(server_.options_.header_limit));
    parser.body_limit(server_.options_.body_limit);

    tcp_stream.expires_after(server_.options_.header_timeout);
    auto [header_ec, header_n] = co_await http::async_read_header(stream, buffer, parser, kAwait);
    if (!header_ec && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // curl and other clients wait (curl: one second) for this before a large body.
      http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
      tcp_stream.expires_after(server_.options_.write_timeout);
      auto [continue_ec, continue_n] = co_await http::async_write(stream, go_on, kAwait);
      header_ec = continue_ec;
    }
    if (!header_ec) {
      tcp_stream.expires_after(server_.options_.body_timeout);
      auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, kAwait);
      header_ec = body_ec;
    }
    if (header_ec) co_return co_await answer_read_error(header_ec, parser);

    const auto started = std::chrono::steady_clock::now();
    server_.metrics_.request_started();
    HttpRequest request = parser.release();
    HttpResponse response = route(request);
    without_body_for_head(request.method(), response);
    const bool keep_alive = request.keep_alive() && !server_.stopping_;
    response.keep_alive(keep_alive);
    // Counted before the write, so a client that has its answer sees it in /metrics.
    record(response.result_int(), started);
    server_.metrics_.request_finished();
    tcp_stream.expires_after(server_.options_.write_timeout);
    auto [write_ec, write_n] = co_await http::async_write(stream, response, kAwait);
    co_return keep_alive && !write_ec;
  }

  // answer_read_error: limits become 413/431, malformed HTTP 400; the connection then
  // closes, since the rest of the stream cannot be trusted to be framed.
  net::awaitable<bool> answer_read_error(const beast::error_code& ec,
                                         const http::request_parser<http::string_body>& parser) {
    http::status status;
    std::string message;
    if (ec == http::error::body_limit) {
      status = http::status::payload_too_large;
      message = "request body exceeds " + std::to_string(server_.options_.body_limit) + " bytes";
    } else if (ec == http::error::header_limit) {
      status = http::status::request_header_fields_too_large;
      message = "request header exceeds " + std::to_string(server_.options_.header_limit) + " bytes";
    } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      status = http::status::bad_request;
      message = "malformed HTTP request: " + ec.message();
    } else {
      if (!is_quiet_close(ec) && ec != http::error::partial_message) {
        log_event(spdlog::level::debug, "connection read failed", {{"error", ec.message()}});
      }
      co_return false;
    }
    const unsigned version = parser.is_header_done() ? parser.get().version() : 11;
    HttpResponse response = make_response(version, status, encode_error(message), "application/json");
    response.keep_alive(false);
    auto& tcp_stream = beast::get_lowest_layer(connection_->stream);
    tcp_stream.expires_after(server_.options_.write_timeout);
    record(response.result_int(), std::chrono::steady_clock::now());
    log_event(spdlog::level::info, "request rejected",
              {{"code", std::to_string(response.result_int()), false}, {"error", message}});
    if (auto [ec2, n] = co_await http::async_write(connection_->stream, response, kAwait); !ec2) {
      co_await linger();
    }
    co_return false;
  }

  // linger: reads and discards what the client is still sending (bounded in time and
  // bytes) before closing. Closing with unread data makes the kernel send a reset, and
  // the client would lose the error response it has not read yet.
  net::awaitable<void> linger() {
    auto& tcp_stream = beast::get_lowest_layer(connection_->stream);
    tcp_stream.expires_after(std::chrono::seconds(2));
    std::array<char, 16 * 1024> discard;
    std::size_t total = 0;
    while (total < kLingerBytes) {
      auto [ec, n] = co_await connection_->stream.async_read_some(net::buffer(discard), kAwait);
      if (ec) break;
      total += n;
    }
  }

  HttpResponse route(const HttpRequest& request) {
    if (path_of(request.target()) != "/validate") {
      return error(request, http::status::not_found, "unknown path; the webhook serves POST /validate");
    }
    if (request.method() != http::verb::post) {
      HttpResponse response = error(request, http::status::method_not_allowed, "use POST");
      response.set(http::field::allow, "POST");
      return response;
    }
    ReviewResult result;
    try {
      result = server_.handler_.handle(request.body());
    } catch (const std::exception& e) {  // e.g. out of memory: answer, do not abort
      return error(request, http::status::internal_server_error, std::string("internal error: ") + e.what());
    }
    last_review_ = std::move(result);
    return make_response(request.version(), static_cast<http::status>(last_review_.status),
                         std::move(last_review_.body), "application/json");
  }

  HttpResponse error(const HttpRequest& request, http::status status, std::string message) {
    last_review_ = ReviewResult{};
    last_review_.status = static_cast<int>(status);
    last_review_.error = message;
    return make_response(request.version(), status, encode_error(message), "application/json");
  }

  // record: metrics and the one log line per review.
  void record(unsigned status, std::chrono::steady_clock::time_point started) {
    const auto latency_us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count());
    server_.metrics_.record_review(static_cast<int>(status), latency_us, last_review_.found);
    const auto level = status == 200 ? spdlog::level::info : spdlog::level::warn;
    log_event(level, "review",
              {{"code", std::to_string(status), false},
               {"uid", last_review_.uid},
               {"kind", last_review_.kind},
               {"object", last_review_.namespace_name + "/" + last_review_.name},
               {"operation", last_review_.operation},
               {"found", join(last_review_.found)},
               {"error", last_review_.error},
               {"latency_us", std::to_string(latency_us), false}});
    last_review_ = ReviewResult{};
  }

  WebhookServer& server_;
  std::shared_ptr<Connection> connection_;
  ReviewResult last_review_;
};

WebhookServer::WebhookServer(net::io_context& ioc, const ServerTlsStore& tls, const ReviewHandler& handler,
                             Metrics& metrics, ServerOptions options)
    : ioc_(ioc), tls_(tls), handler_(handler), metrics_(metrics), options_(std::move(options)),
      acceptor_(net::make_strand(ioc)) {}

WebhookServer::~WebhookServer() = default;

tcp::endpoint WebhookServer::listen() {
  open_listener(acceptor_, options_.listen, "--listen", net::socket_base::max_listen_connections);
  const tcp::endpoint bound = acceptor_.local_endpoint();

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
      if (connections() >= options_.max_connections) {
        // Over the cap: close at once rather than run out of memory or descriptors.
        metrics_.connection_refused();
        beast::error_code ignored;
        socket.close(ignored);
        continue;
      }
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
            Session session(*this, connection);
            co_await session.run();
          },
          [this, id](std::exception_ptr error) {
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
  net::co_spawn(acceptor_.get_executor(), std::move(accept_loop), [](std::exception_ptr error) {
    if (error) log_event(spdlog::level::err, "accept loop stopped by an exception");
  });
  return bound;
}

void WebhookServer::shutdown(std::chrono::milliseconds deadline, std::function<void()> on_drained) {
  stopping_ = true;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, weak] : connections_) {
      if (auto connection = weak.lock()) {
        net::post(connection->stream.get_executor(), [connection] {
          if (connection->idle) beast::get_lowest_layer(connection->stream).cancel();
        });
      }
    }
  }
  // Wait for the connections to finish on their own strands, bounded by the deadline.
  const auto until = std::chrono::steady_clock::now() + deadline;
  net::co_spawn(
      ioc_,
      [this, until]() -> net::awaitable<void> {
        net::steady_timer timer(co_await net::this_coro::executor);
        while (connections() > 0 && std::chrono::steady_clock::now() < until) {
          timer.expires_after(std::chrono::milliseconds(20));
          co_await timer.async_wait(kAwait);
        }
      },
      [on_drained = std::move(on_drained)](std::exception_ptr) { on_drained(); });
}

std::size_t WebhookServer::connections() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

}  // namespace kubegap

#include "webhook/server.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

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

// Connection: one TLS connection, and where it is in its life. Shutdown and eviction may
// close it while no request is in progress (kFresh or kIdle), never while one is (kBusy).
struct WebhookServer::Connection {
  enum class Phase : std::uint8_t {
    kFresh,  // handshake, or waiting for its first request: it has not served one yet
    kIdle,   // waiting for the next request
    kBusy,   // reading, handling or answering a request
  };

  Connection(tcp::socket socket, std::shared_ptr<ssl::context> context)
      : tls(std::move(context)), stream(std::move(socket), *tls) {}

  // wait: marks the connection as waiting for a request from now on.
  void wait(Phase waiting) {
    waiting_since.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    phase.store(waiting, std::memory_order_relaxed);
  }
  // closable: no request in progress. Read from other threads (eviction); decided again
  // on the connection's strand before closing.
  bool closable() const { return phase.load(std::memory_order_relaxed) != Phase::kBusy; }

  // The context this connection was accepted with: a rotated certificate applies to new
  // connections, and this one keeps working with the old.
  std::shared_ptr<ssl::context> tls;
  beast::ssl_stream<beast::tcp_stream> stream;
  // Written on the connection's strand only.
  std::atomic<Phase> phase{Phase::kFresh};
  std::atomic<std::chrono::steady_clock::rep> waiting_since{
      std::chrono::steady_clock::now().time_since_epoch().count()};
  std::atomic<bool> evicting{false};
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
      if (!is_quiet_close(ec)) {
        server_.metrics_.tls_handshake_failed();
        log_event(spdlog::level::debug, "tls handshake failed", {{"error", ec.message()}});
      }
      co_return;
    }
    // The first request's header must be in by this time point; later requests have the
    // idle timeout to start and the header timeout to finish their header.
    std::optional<std::chrono::steady_clock::time_point> first_deadline =
        std::chrono::steady_clock::now() + server_.options_.first_request_timeout;
    connection_->wait(Connection::Phase::kFresh);
    beast::flat_buffer buffer;
    bool keep_alive = true;
    // A connection's first request is served even when shutdown began meanwhile: its
    // client may have sent it already, before our side of the handshake finished, and
    // the API server does not retry a POST it has written. The first-request deadline
    // bounds the wait.
    while (keep_alive && (!server_.stopping_ || first_deadline)) {
      if (buffer.size() == 0) {  // wait for the next request
        if (first_deadline) {
          tcp_stream.expires_at(*first_deadline);
        } else {
          connection_->wait(Connection::Phase::kIdle);
          tcp_stream.expires_after(server_.options_.idle_timeout);
        }
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kAwait);
        if (ec) {
          if (ec == beast::error::timeout && first_deadline) {
            log_event(spdlog::level::debug, "connection sent no request in time; closed");
          }
          // A client that never sent a request, or one evicted for a new connection,
          // is not waited on for its close_notify: its slot is wanted now.
          if (first_deadline || connection_->evicting) {
            beast::error_code ignored;
            tcp_stream.socket().close(ignored);
            co_return;
          }
          break;
        }
        buffer.commit(n);
      }
      connection_->phase = Connection::Phase::kBusy;
      keep_alive = co_await serve_one(buffer, first_deadline);
      first_deadline.reset();
    }
    connection_->phase = Connection::Phase::kBusy;  // closing: nothing more to evict
    tcp_stream.expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(kAwait);  // best effort close_notify
  }

 private:
  using Parser = http::request_parser<http::string_body>;

  // serve_one: reads one request and answers it; returns whether to keep the connection.
  // `first_deadline`: the connection's first request must have its header in by then.
  net::awaitable<bool> serve_one(beast::flat_buffer& buffer,
                                 std::optional<std::chrono::steady_clock::time_point> first_deadline) {
    auto& stream = connection_->stream;
    auto& tcp_stream = beast::get_lowest_layer(stream);
    Parser parser;
    parser.header_limit(static_cast<std::uint32_t>(server_.options_.header_limit));
    parser.body_limit(server_.options_.body_limit);

    auto header_deadline = std::chrono::steady_clock::now() + server_.options_.header_timeout;
    if (first_deadline) header_deadline = std::min(header_deadline, *first_deadline);
    tcp_stream.expires_at(header_deadline);
    if (auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kAwait); ec) {
      co_return co_await answer_read_error(ec, parser);
    }
    // Charged before the body is read, by its declared length: an answer of 503 costs
    // nothing, a parsed body costs many times its size (memory_budget.h).
    MemoryBudget::Lease lease(*server_.budget_);
    if (!lease.grow_to(request_charge(parser.content_length().value_or(0)))) {
      co_return co_await answer_over_budget(parser);
    }
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // curl and other clients wait (curl: one second) for this before a large body.
      http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
      tcp_stream.expires_after(server_.options_.write_timeout);
      if (auto [ec, n] = co_await http::async_write(stream, go_on, kAwait); ec) {
        lease.reset();
        co_return co_await answer_read_error(ec, parser);
      }
    }
    tcp_stream.expires_after(server_.options_.body_timeout);
    bool over_budget = false;
    const auto body_ec = co_await read_body(buffer, parser, lease, over_budget);
    if (body_ec || over_budget) {
      lease.reset();  // an error answer parses nothing, and its linger may take seconds
      // Two statements: GCC 12 mis-handles co_await on a conditional's operands.
      if (over_budget) co_return co_await answer_over_budget(parser);
      co_return co_await answer_read_error(body_ec, parser);
    }

    const auto started = std::chrono::steady_clock::now();
    server_.metrics_.request_started();
    HttpRequest request = parser.release();
    HttpResponse response = route(request);
    lease.reset();  // the review's DOM is gone; what is left to send is small
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

  // read_body: reads the rest of the request. A body without a declared length (chunked)
  // is charged to `lease` as it grows; `over_budget` says when the budget ran out first.
  net::awaitable<beast::error_code> read_body(beast::flat_buffer& buffer, Parser& parser,
                                              MemoryBudget::Lease& lease, bool& over_budget) {
    while (!parser.is_done()) {
      auto [ec, n] = co_await http::async_read_some(connection_->stream, buffer, parser, kAwait);
      if (ec) co_return ec;
      if (!lease.grow_to(request_charge(parser.get().body().size()))) {
        over_budget = true;
        co_return beast::error_code{};
      }
    }
    co_return beast::error_code{};
  }

  // answer_over_budget: 503 with Retry-After, then close. The API server retries nothing
  // itself (it fails open and records the failure), but a client or a later review does.
  net::awaitable<bool> answer_over_budget(const Parser& parser) {
    server_.metrics_.request_shed();
    const auto& budget = *server_.budget_;
    std::string message = "server busy: requests in flight hold " + std::to_string(budget.in_use()) + " of its " +
                          std::to_string(budget.capacity()) + "-byte memory budget (--memory-budget); retry";
    HttpResponse response = make_response(parser.get().version(), http::status::service_unavailable,
                                          encode_error(message), "application/json");
    response.set(http::field::retry_after, "1");
    co_return co_await reject(std::move(response), std::move(message));
  }

  // answer_read_error: limits become 413/431, malformed HTTP 400; the connection then
  // closes, since the rest of the stream cannot be trusted to be framed.
  net::awaitable<bool> answer_read_error(const beast::error_code& ec, const Parser& parser) {
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
    co_return co_await reject(make_response(version, status, encode_error(message), "application/json"),
                              std::move(message));
  }

  // reject: sends an error response on a connection that then closes.
  net::awaitable<bool> reject(HttpResponse response, std::string message) {
    response.keep_alive(false);
    auto& tcp_stream = beast::get_lowest_layer(connection_->stream);
    tcp_stream.expires_after(server_.options_.write_timeout);
    record(response.result_int(), std::chrono::steady_clock::now());
    log_event(response.result_int() >= 500 ? spdlog::level::warn : spdlog::level::info, "request rejected",
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
      budget_(std::make_shared<MemoryBudget>(
          options_.memory_budget != 0 ? options_.memory_budget
                                      : default_memory_budget(container_memory_limit(), options_.body_limit))),
      acceptor_(net::make_strand(ioc)) {
  metrics_.watch_memory_budget(budget_);
}

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
      const std::size_t open = connections();
      if (open >= options_.max_connections) {
        // Over the cap: close at once rather than run out of memory or descriptors.
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
        // Only connections that have served a request and wait for the next: a fresh
        // one may be carrying its first request already (Session::run).
        net::post(connection->stream.get_executor(), [connection] {
          if (connection->phase == Connection::Phase::kIdle) beast::get_lowest_layer(connection->stream).cancel();
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

void WebhookServer::evict_idle_connection() {
  using Phase = Connection::Phase;
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(mutex_);
    // A connection that never sent a request goes before one that has served; among
    // equals, the one waiting longest. The scan runs only near the cap.
    const auto rank = [](const Connection& c) {
      return std::pair(c.phase.load(std::memory_order_relaxed) == Phase::kFresh ? 0 : 1,
                       c.waiting_since.load(std::memory_order_relaxed));
    };
    for (auto& [id, weak] : connections_) {
      auto connection = weak.lock();
      if (!connection || !connection->closable() || connection->evicting.load()) continue;
      if (!victim || rank(*connection) < rank(*victim)) victim = std::move(connection);
    }
  }
  if (!victim) return;
  victim->evicting = true;
  net::post(victim->stream.get_executor(), [this, victim] {
    // Decided again on the connection's strand: a request may have started meanwhile.
    if (!victim->closable()) {
      victim->evicting = false;
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

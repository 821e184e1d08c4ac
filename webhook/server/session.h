#pragma once
// Session: the coroutine that serves one connection of the webhook server: TLS
// handshake, then requests read, charged to the memory budget, routed to the review
// handler and answered, with every timeout and bad-input answer of DESIGN.md. Internal
// to WebhookServer (server.cpp); generic over the stream so tests can run it on Beast's
// test::stream and fail each read and write in turn (tests/webhook/server/session_test.cpp).

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "webhook/core/admission_codec.h"
#include "webhook/core/memory_budget.h"
#include "webhook/core/review_handler.h"
#include "webhook/server/http_util.h"
#include "webhook/server/server_options.h"
#include "webhook/telemetry/logging.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap::session {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;

inline constexpr auto kAwait = net::as_tuple(net::use_awaitable);
inline constexpr std::size_t kLingerBytes = 64 * 1024 * 1024;

// is_quiet_close: the peer went away; nothing to report.
inline bool is_quiet_close(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof || ec == ssl::error::stream_truncated ||
         ec == net::error::operation_aborted || ec == net::error::connection_reset || ec == beast::error::timeout;
}

inline std::string join(std::span<const std::string_view> items) {
  std::string out;
  for (const auto item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

// Phase: where a connection is in its life. Shutdown closes it only while it waits
// (kFresh, kIdle); eviction may also close a request still being read (kReading), never
// one that has arrived whole (kBusy).
enum class Phase : std::uint8_t {
  kFresh,    // handshake, or waiting for its first request: it has not served one yet
  kIdle,     // waiting for the next request
  kReading,  // a request has begun and its header or body is still arriving
  kBusy,     // handling or answering a request, or closing
};

// kEvictionGrace: how long, below the connection cap, a fresh connection or a request
// being read is spared from eviction: the API server writes its request at once, so
// either may be its, on the wire (ConnectionState::eviction_rank).
inline constexpr auto kEvictionGrace = std::chrono::seconds(1);

// ConnectionState: what the server's eviction and shutdown read of a connection.
// Written on the connection's executor only (its strand, or the loop that one thread runs).
struct ConnectionState {
  // enter: the connection is in `p` from now (waiting for a request, or reading one).
  void enter(Phase p) {
    phase_since.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    phase.store(p, std::memory_order_relaxed);
  }
  // handshake_done: the grace of a fresh connection starts again (its client may be
  // writing its request now), while its age, the order among the oldest, stays from accept.
  void handshake_done() {
    grace_from.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  // eviction_rank: lower goes first, and the oldest first within a rank: a connection
  // silent since accept (past kEvictionGrace from its handshake's end), then a request
  // still arriving (past kEvictionGrace from its start). None
  // for a request in hand. Only at the cap (`at_cap`) do the others go too: a fresh
  // connection or request younger than the grace (it may be the API server's, its request
  // on the wire), the oldest first, then the longest idle. A flood that reconnects at once
  // keeps every slot young, and so loses its oldest connection rather than have the newest
  // refused; an idle keep-alive connection (the API server's pool) goes last, since a
  // review written as its close arrives is lost. Read from other threads; decided again on
  // the connection's executor before closing.
  std::optional<std::pair<int, std::chrono::steady_clock::rep>> eviction_rank(std::chrono::steady_clock::rep now,
                                                                              bool at_cap) const {
    const Phase p = phase.load(std::memory_order_relaxed);
    const auto since = phase_since.load(std::memory_order_relaxed);
    if (p == Phase::kBusy) return {};
    const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(kEvictionGrace).count();
    const auto grace_since = p == Phase::kFresh ? grace_from.load(std::memory_order_relaxed) : since;
    if (p != Phase::kIdle && now - grace_since >= grace) {
      return std::pair(p == Phase::kFresh ? 0 : 1, since);
    }
    if (!at_cap) return {};
    return std::pair(p == Phase::kIdle ? 3 : 2, since);
  }

  std::atomic<Phase> phase{Phase::kFresh};
  // Since when it waits (kFresh: since accept; kIdle) or its request has been arriving
  // (kReading): the order among connections of one rank.
  std::atomic<std::chrono::steady_clock::rep> phase_since{std::chrono::steady_clock::now().time_since_epoch().count()};
  // Since when a fresh connection's grace runs: the end of its handshake (a slow handshake
  // does not use up the grace of the request behind it); accept until then. Other phases'
  // grace runs from phase_since.
  std::atomic<std::chrono::steady_clock::rep> grace_from{phase_since.load(std::memory_order_relaxed)};
  std::atomic<bool> evicting{false};
};

// SessionContext: what every session of one server shares.
struct SessionContext {
  const ServerOptions& options;
  const ReviewHandler& handler;
  Metrics& metrics;
  const std::shared_ptr<MemoryBudget>& budget;
  const std::atomic<bool>& stopping;
};

// StreamOps<Stream>: what a session does to its stream besides reading and writing:
// timeouts, the handshake, closing. Specialised per stream type (the tests add Beast's
// test::stream).
template <typename Stream>
struct StreamOps;

template <>
struct StreamOps<beast::ssl_stream<beast::tcp_stream>> {
  using Stream = beast::ssl_stream<beast::tcp_stream>;
  static void expire_after(Stream& s, std::chrono::steady_clock::duration d) {
    beast::get_lowest_layer(s).expires_after(d);
  }
  static void expire_at(Stream& s, std::chrono::steady_clock::time_point t) {
    beast::get_lowest_layer(s).expires_at(t);
  }
  static net::awaitable<beast::error_code> handshake(Stream& s) {
    auto [ec] = co_await s.async_handshake(ssl::stream_base::server, kAwait);
    co_return ec;
  }
  static net::awaitable<void> shutdown(Stream& s) { co_await s.async_shutdown(kAwait); }
  static void close(Stream& s) {
    beast::error_code ignored;
    beast::get_lowest_layer(s).socket().close(ignored);
  }
};

// Session: the coroutine that serves one connection, and the pure routing it feeds.
template <typename Stream>
class Session {
 public:
  Session(const SessionContext& context, Stream& stream, ConnectionState& state)
      : ctx_(context), stream_(stream), state_(state) {}

  net::awaitable<void> run() {
    Ops::expire_after(stream_, ctx_.options.handshake_timeout);
    if (auto ec = co_await Ops::handshake(stream_); ec) {
      if (!is_quiet_close(ec) && !state_.evicting.load()) {  // an eviction is counted as one
        ctx_.metrics.tls_handshake_failed();
        log_event(spdlog::level::debug, "tls handshake failed", {{"error", ec.message()}});
      }
      co_return;
    }
    // The first request's header must be in by this time point; later requests have the
    // idle timeout to start and the header timeout to finish their header.
    std::optional<std::chrono::steady_clock::time_point> first_deadline =
        std::chrono::steady_clock::now() + ctx_.options.first_request_timeout;
    // Still kFresh, aged from accept: "the oldest" is the connection accepted first,
    // whichever of two handshakes the I/O threads happened to finish first. Its grace
    // starts now: its request may be on the wire.
    state_.handshake_done();
    beast::flat_buffer buffer;
    bool keep_alive = true;
    // A connection's first request is served even when shutdown began meanwhile: its
    // client may have sent it already, before our side of the handshake finished, and
    // the API server does not retry a POST it has written. The first-request deadline
    // bounds the wait.
    while (keep_alive && (!ctx_.stopping || first_deadline)) {
      if (buffer.size() == 0) {  // wait for the next request
        if (first_deadline) {
          Ops::expire_at(stream_, *first_deadline);
        } else {
          state_.enter(Phase::kIdle);
          Ops::expire_after(stream_, ctx_.options.idle_timeout);
        }
        auto [ec, n] = co_await stream_.async_read_some(buffer.prepare(4096), kAwait);
        if (ec) {
          if (ec == beast::error::timeout && first_deadline) {
            log_event(spdlog::level::debug, "connection sent no request in time; closed");
          }
          // A client that never sent a request, or one evicted for a new connection,
          // is not waited on for its close_notify: its slot is wanted now.
          if (first_deadline || state_.evicting.load()) {
            Ops::close(stream_);
            co_return;
          }
          break;
        }
        buffer.commit(n);
      }
      state_.enter(Phase::kReading);
      // An eviction decided as a request completed (its cancel found no read to cancel)
      // lets that request be answered, then closes.
      keep_alive = co_await serve_one(buffer, first_deadline) && !state_.evicting.load();
      first_deadline.reset();
    }
    state_.phase = Phase::kBusy;   // closing: nothing more to evict
    if (state_.evicting.load()) {  // its slot is wanted now: no 2 s wait for close_notify
      Ops::close(stream_);
      co_return;
    }
    Ops::expire_after(stream_, std::chrono::seconds(2));
    co_await Ops::shutdown(stream_);  // best effort close_notify
  }

 private:
  using Parser = http::request_parser<http::string_body>;

  // serve_one: reads one request and answers it; returns whether to keep the connection.
  // `first_deadline`: the connection's first request must have its header in by then.
  net::awaitable<bool> serve_one(beast::flat_buffer& buffer,
                                 std::optional<std::chrono::steady_clock::time_point> first_deadline) {
    Parser parser;
    parser.header_limit(static_cast<std::uint32_t>(ctx_.options.header_limit));
    parser.body_limit(ctx_.options.body_limit);

    // One deadline for the header and the body together (a read timeout would be renewed
    // by each trickled byte); the first request's header also by the first-request one.
    const auto request_deadline = std::chrono::steady_clock::now() + ctx_.options.request_timeout;
    auto header_deadline = request_deadline;
    if (first_deadline) header_deadline = std::min(header_deadline, *first_deadline);
    Ops::expire_at(stream_, header_deadline);
    if (auto [ec, n] = co_await http::async_read_header(stream_, buffer, parser, kAwait); ec) {
      co_return co_await answer_read_error(ec, parser);
    }
    // Admitted by its declared length before the body is read: a body the budget cannot
    // hold now is answered 503 at once (an answer costs nothing; a body costs its copies,
    // then what its decode keeps, memory_budget.h). What the request holds then grows
    // with the bytes that arrive, so a header declaring 8 MiB and sending nothing holds
    // next to nothing and cannot lock other reviews out for the request timeout.
    MemoryBudget::Lease lease(ctx_.budget);
    if (!ctx_.budget->could_hold(request_charge(parser.content_length().value_or(0))) ||
        !lease.grow_to(request_charge(0))) {
      co_return co_await answer_over_budget(parser);
    }
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // curl and other clients wait (curl: one second) for this before a large body.
      http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
      Ops::expire_at(stream_, request_deadline);
      if (auto [ec, n] = co_await http::async_write(stream_, go_on, kAwait); ec) {
        lease.reset();
        co_return co_await answer_read_error(ec, parser);
      }
    }
    Ops::expire_at(stream_, request_deadline);
    bool over_budget = false;
    const auto body_ec = co_await read_body(buffer, parser, lease, over_budget);
    if (body_ec || over_budget) {
      lease.reset();  // an error answer parses nothing, and its linger may take seconds
      // Two statements: GCC 12 mis-handles co_await on a conditional's operands.
      if (over_budget) co_return co_await answer_over_budget(parser);
      co_return co_await answer_read_error(body_ec, parser);
    }

    state_.phase = Phase::kBusy;  // in hand: from now on only its answer closes it
    const auto started = std::chrono::steady_clock::now();
    ctx_.metrics.request_started();
    HttpRequest request = parser.release();
    auto [response, review] = route(request, lease);
    lease.reset();  // the decoded review is gone; what is left to send is small
    without_body_for_head(request.method(), response);
    const bool keep_alive = request.keep_alive() && !ctx_.stopping;
    response.keep_alive(keep_alive);
    // Counted before the write, so a client that has its answer sees it in /metrics.
    record(response.result_int(), started, review);
    ctx_.metrics.request_finished();
    Ops::expire_after(stream_, ctx_.options.write_timeout);
    auto [write_ec, write_n] = co_await http::async_write(stream_, response, kAwait);
    co_return keep_alive && !write_ec;
  }

  // read_body: reads the rest of the request, charging the body to `lease` as it arrives;
  // `over_budget` says when the budget ran out first.
  net::awaitable<beast::error_code> read_body(beast::flat_buffer& buffer, Parser& parser, MemoryBudget::Lease& lease,
                                              bool& over_budget) {
    while (!parser.is_done()) {
      auto [ec, n] = co_await http::async_read_some(stream_, buffer, parser, kAwait);
      if (ec) co_return ec;
      // Gives back its bytes as it fails, so of two bodies that outgrow the budget
      // together one is still served.
      if (!lease.grow_or_give_up(request_charge(parser.get().body().size()))) {
        over_budget = true;
        co_return beast::error_code{};
      }
    }
    co_return beast::error_code{};
  }

  // Routed: the answer to one request, and what record() logs of the review behind it
  // (its body moved into the response).
  struct Routed {
    HttpResponse response;
    ReviewResult review;
  };

  // answer_over_budget: 503 with Retry-After, then close. The API server retries nothing
  // itself (it fails open and records the failure), but a client or a later review does.
  net::awaitable<bool> answer_over_budget(const Parser& parser) {
    auto [response, review] = over_budget(parser.get().version());
    co_return co_await reject(std::move(response), std::move(review.error));
  }

  // over_budget: the 503 a request gets when the budget cannot hold it (counted as shed).
  Routed over_budget(unsigned version) {
    ctx_.metrics.request_shed();
    const auto& budget = *ctx_.budget;
    std::string message = "server busy: requests in flight hold " + std::to_string(budget.in_use()) + " of its " +
                          std::to_string(budget.capacity()) + "-byte memory budget (--memory-budget); retry";
    Routed routed{make_response(version, http::status::service_unavailable, encode_error(message), "application/json"),
                  {}};
    routed.response.set(http::field::retry_after, "1");
    routed.review.status = 503;
    routed.review.error = std::move(message);
    return routed;
  }

  // answer_read_error: limits become 413/431, malformed HTTP 400; the connection then
  // closes, since the rest of the stream cannot be trusted to be framed.
  net::awaitable<bool> answer_read_error(const beast::error_code& ec, const Parser& parser) {
    http::status status;
    std::string message;
    if (ec == http::error::body_limit) {
      status = http::status::payload_too_large;
      message = "request body exceeds " + std::to_string(ctx_.options.body_limit) + " bytes";
    } else if (ec == http::error::header_limit) {
      status = http::status::request_header_fields_too_large;
      message = "request header exceeds " + std::to_string(ctx_.options.header_limit) + " bytes";
    } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      status = http::status::bad_request;
      message = "malformed HTTP request: " + ec.message();
    } else {
      if (ec == beast::error::timeout) {
        ctx_.metrics.request_timed_out();
        log_event(spdlog::level::info, "request not received in time; connection closed",
                  {{"timeout_ms", std::to_string(ctx_.options.request_timeout.count()), false}});
      } else if (state_.evicting.load()) {
        ctx_.metrics.request_evicted();
      }
      if (!is_quiet_close(ec) && ec != http::error::partial_message) {
        log_event(spdlog::level::debug, "connection read failed", {{"error", ec.message()}});
      }
      co_return false;
    }
    const unsigned version = parser.is_header_done() ? parser.get().version() : 11;
    // The response first: argument order is unspecified, so encode_error(message) in the
    // same call could read message after std::move(message) has emptied it.
    HttpResponse response = make_response(version, status, encode_error(message), "application/json");
    co_return co_await reject(std::move(response), std::move(message));
  }

  // reject: sends an error response on a connection that then closes.
  net::awaitable<bool> reject(HttpResponse response, std::string message) {
    response.keep_alive(false);
    Ops::expire_after(stream_, ctx_.options.write_timeout);
    record(response.result_int(), std::chrono::steady_clock::now(), ReviewResult{});
    log_event(response.result_int() >= 500 ? spdlog::level::warn : spdlog::level::info, "request rejected",
              {{"code", std::to_string(response.result_int()), false}, {"error", message}});
    if (auto [ec2, n] = co_await http::async_write(stream_, response, kAwait); !ec2) {
      co_await linger();
    }
    co_return false;
  }

  // linger: reads and discards what the client is still sending (bounded in time and
  // bytes) before closing. Closing with unread data makes the kernel send a reset, and
  // the client would lose the error response it has not read yet.
  net::awaitable<void> linger() {
    Ops::expire_after(stream_, std::chrono::seconds(2));
    std::array<char, 16 * 1024> discard;
    std::size_t total = 0;
    while (total < kLingerBytes) {
      auto [ec, n] = co_await stream_.async_read_some(net::buffer(discard), kAwait);
      if (ec) break;
      total += n;
    }
  }

  // route: `lease` holds the request's charge; the decode asks it for what it keeps.
  Routed route(const HttpRequest& request, MemoryBudget::Lease& lease) {
    if (path_of(request.target()) != "/validate") {
      return error(request, http::status::not_found, "unknown path; the webhook serves POST /validate");
    }
    if (request.method() != http::verb::post) {
      Routed routed = error(request, http::status::method_not_allowed, "use POST");
      routed.response.set(http::field::allow, "POST");
      return routed;
    }
    ReviewResult result;
    try {
      const std::size_t read_charge = lease.held();
      result = ctx_.handler.handle(request.body(),
                                   [&](std::size_t kept) { return lease.grow_or_give_up(read_charge + kept); });
    } catch (const std::exception& e) {  // e.g. out of memory: answer, do not abort
      return error(request, http::status::internal_server_error, std::string("internal error: ") + e.what());
    }
    if (result.status == 503) return over_budget(request.version());  // the decode's keep refused
    HttpResponse response = make_response(request.version(), static_cast<http::status>(result.status),
                                          std::move(result.body), "application/json");
    return {std::move(response), std::move(result)};
  }

  static Routed error(const HttpRequest& request, http::status status, const std::string& message) {
    ReviewResult review;
    review.status = static_cast<int>(status);
    review.error = message;
    return {make_response(request.version(), status, encode_error(message), "application/json"), std::move(review)};
  }

  // record: metrics and the one log line per review.
  void record(unsigned status, std::chrono::steady_clock::time_point started, const ReviewResult& review) {
    const auto latency_us = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count());
    ctx_.metrics.record_review(static_cast<int>(status), latency_us, review.found);
    const auto level = status == 200 ? spdlog::level::info : spdlog::level::warn;
    log_event(level, "review",
              {{"code", std::to_string(status), false},
               {"uid", review.uid},
               {"kind", review.kind},
               {"object", review.namespace_name + "/" + review.name},
               {"operation", review.operation},
               {"found", join(review.found)},
               {"error", review.error},
               {"latency_us", std::to_string(latency_us), false}});
  }

  using Ops = StreamOps<Stream>;
  const SessionContext& ctx_;
  Stream& stream_;
  ConnectionState& state_;
};

}  // namespace kubegap::session

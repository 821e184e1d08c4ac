// The server's Session on Beast's test::stream, without sockets or sleeps: every read and
// write failing in turn (a fail_count sweep, as Beast's own tests do). Whatever fails,
// the session ends, the client never receives a wrong answer, and nothing stays charged
// to the memory budget or counted in flight. The real-socket tests (server_test) and
// the abuse tests cover the same paths with TLS and timers.
#include "webhook/server/session.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "policies/policy.h"

namespace kubegap::session {

// The test stream has no TLS and no timers: the handshake succeeds at once, timeouts are
// not armed (a fail_count stands in for every way an operation can fail).
template <>
struct StreamOps<beast::test::stream> {
  using Stream = beast::test::stream;
  static void expire_after(Stream&, std::chrono::steady_clock::duration) {}
  static void expire_at(Stream&, std::chrono::steady_clock::time_point) {}
  static net::awaitable<beast::error_code> handshake(Stream&) { co_return beast::error_code{}; }
  static net::awaitable<void> shutdown(Stream& s) {
    s.close();
    co_return;
  }
  static void close(Stream& s) { s.close(); }
};

namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(KUBEGAP_FIXTURES_DIR) + "/reviews/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string post(const std::string& body, const std::string& extra_header = "") {
  return "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_header +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunked_post(const std::string& body) {
  std::string out = "POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < body.size(); at += 700) {
    const std::string part = body.substr(at, 700);
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

// Responses: every complete response the client received, in order; the bytes after
// the last complete one are a cut-off response (allowed: the connection failed).
std::vector<http::response<http::string_body>> complete_responses(const std::string& received) {
  std::vector<http::response<http::string_body>> out;
  std::size_t at = 0;
  while (at < received.size()) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    beast::error_code ec;
    const std::size_t used = parser.put(net::buffer(received.data() + at, received.size() - at), ec);
    if (ec || !parser.is_done()) break;
    out.push_back(parser.release());
    at += used;
  }
  return out;
}

struct Outcome {
  std::string received;  // what the session wrote to the client
  std::size_t budget_in_use = 0;
  bool finished = false;
};

class SessionSweep : public ::testing::Test {
 protected:
  SessionSweep()
      : policies_(default_policy()),
        handler_(policies_, cluster_),
        budget_(std::make_shared<MemoryBudget>(request_charge(1 << 20))) {}

  // run: the session over `input` (all of it already sent, then the client's half
  // closed), with operation `fail_at` failing.
  Outcome run(const std::string& input, std::size_t fail_at) {
    net::io_context ioc;
    beast::test::fail_count fc(fail_at);
    beast::test::stream server_side(ioc, fc);
    beast::test::stream client(ioc);
    server_side.connect(client);
    server_side.append(input);
    server_side.read_size(300);  // many reads per request, so each can fail
    client.close();              // nothing more is coming
    ConnectionState state;
    const SessionContext context{options_, handler_, metrics_, budget_, stopping_};
    Session<beast::test::stream> session(context, server_side, state);
    Outcome out;
    net::co_spawn(
        ioc,
        [&]() -> net::awaitable<void> {
          co_await session.run();
          out.finished = true;
        },
        net::detached);
    ioc.run();
    out.received = std::string(client.str());
    out.budget_in_use = budget_->in_use();
    return out;
  }

  // sweep: runs with operation 0, 1, 2, ... failing until a run completes untouched;
  // `check` sees each run (and whether a failure was injected). Returns the runs made.
  template <typename Check>
  int sweep(const std::string& input, Check check) {
    for (std::size_t n = 0; n < 500; ++n) {
      const Outcome r = run(input, n);
      EXPECT_TRUE(r.finished) << "fail_count " << n << ": the session did not end";
      EXPECT_EQ(r.budget_in_use, 0u) << "fail_count " << n << ": memory budget still charged";
      EXPECT_EQ(metrics_.render().find("kubegap_in_flight_requests 0\n") != std::string::npos, true)
          << "fail_count " << n << ": a request still counted in flight";
      const bool untouched = check(r, n);
      if (untouched) return static_cast<int>(n) + 1;
    }
    ADD_FAILURE() << "no run completed without a failure";
    return 500;
  }

  PolicyStore policies_;
  NoClusterView cluster_;
  ReviewHandler handler_;
  Metrics metrics_;
  std::shared_ptr<MemoryBudget> budget_;
  ServerOptions options_;
  std::atomic<bool> stopping_{false};
};

TEST_F(SessionSweep, TwoPipelinedReviewsUnderEveryFailure) {
  const std::string body = read_fixture("gpu-pod-gaps.json");
  const std::string uid = "0f4e1b6a-3c1d-4a8e-9b52-7d2c1e9a4f10";
  int partial = 0;
  const int runs = sweep(post(body) + chunked_post(body), [&](const Outcome& r, std::size_t n) {
    const auto responses = complete_responses(r.received);
    for (const auto& response : responses) {
      // Whatever failed, an answer that arrives whole is the right one.
      EXPECT_EQ(response.result_int(), 200) << "fail_count " << n;
      EXPECT_NE(response.body().find(uid), std::string::npos) << "fail_count " << n;
    }
    if (responses.size() < 2) ++partial;
    return responses.size() == 2;
  });
  EXPECT_GT(partial, 20) << "the sweep reached few failure points";
  EXPECT_EQ(runs, partial + 1) << "only the last run, with no failure reached, completed both reviews";
}

TEST_F(SessionSweep, MalformedRequestUnderEveryFailureIsA400OrNothing) {
  int runs = sweep("POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n{}",
                   [&](const Outcome& r, std::size_t n) {
                     const auto responses = complete_responses(r.received);
                     EXPECT_LE(responses.size(), 1u) << "fail_count " << n;
                     if (responses.empty()) return false;
                     EXPECT_EQ(responses[0].result_int(), 400) << "fail_count " << n;
                     return true;
                   });
  EXPECT_GT(runs, 1);
}

TEST_F(SessionSweep, OverBudgetAnswerUnderEveryFailureLeavesNothingCharged) {
  // A body declared larger than the whole budget: 503 before it is read.
  const std::string header =
      "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(2 << 20) + "\r\n\r\n";
  int runs = sweep(header + std::string(4096, '{'), [&](const Outcome& r, std::size_t n) {
    const auto responses = complete_responses(r.received);
    if (responses.empty()) return false;
    EXPECT_EQ(responses[0].result_int(), 503) << "fail_count " << n;
    EXPECT_EQ(responses[0][http::field::retry_after], "1");
    return true;
  });
  EXPECT_GT(runs, 1);
}

// ConnectionState::eviction_rank, on states set by hand: ages and graces are time points,
// not sleeps.
using Clock = std::chrono::steady_clock;
constexpr Clock::rep ticks(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<Clock::duration>(d).count();
}

// A fresh connection is aged from accept (the order among the oldest), but its grace
// starts again when its handshake ends: its request may be on the wire then, however
// long the handshake took.
TEST(EvictionRank, AFreshConnectionIsAgedFromAcceptButGracedFromItsHandshake) {
  ConnectionState slow_handshake;
  slow_handshake.handshake_done();
  const Clock::rep handshake_end = slow_handshake.grace_from.load();
  const Clock::rep accept = handshake_end - ticks(std::chrono::seconds(2));  // a two-second handshake
  slow_handshake.phase_since.store(accept);
  const Clock::rep now = handshake_end + ticks(std::chrono::milliseconds(200));
  // 200 ms after its handshake: young, spared below the cap.
  EXPECT_FALSE(slow_handshake.eviction_rank(now, /*at_cap=*/false));
  // At the cap it may go, ranked as young and ordered by its accept.
  const auto at_cap = slow_handshake.eviction_rank(now, /*at_cap=*/true);
  ASSERT_TRUE(at_cap);
  EXPECT_EQ(at_cap->first, 2);
  EXPECT_EQ(at_cap->second, accept);
  // Past its grace it is a silent connection, the first to go, still ordered by accept.
  const auto stale = slow_handshake.eviction_rank(handshake_end + ticks(std::chrono::seconds(1)), /*at_cap=*/false);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->first, 0);
  EXPECT_EQ(stale->second, accept);
}

// Of two fresh connections at the cap, the one accepted first ranks first, whichever
// handshake ended first.
TEST(EvictionRank, TheConnectionAcceptedFirstGoesFirstWhicheverHandshakeEndedFirst) {
  ConnectionState first, second;
  const Clock::rep base = first.phase_since.load();
  first.phase_since.store(base);
  second.phase_since.store(base + ticks(std::chrono::milliseconds(10)));
  second.grace_from.store(base + ticks(std::chrono::milliseconds(20)));  // second's handshake ended first
  first.grace_from.store(base + ticks(std::chrono::milliseconds(30)));
  const Clock::rep now = base + ticks(std::chrono::milliseconds(100));
  const auto first_rank = first.eviction_rank(now, true), second_rank = second.eviction_rank(now, true);
  ASSERT_TRUE(first_rank && second_rank);
  EXPECT_LT(*first_rank, *second_rank);
}

}  // namespace
}  // namespace kubegap::session

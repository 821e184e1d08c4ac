// read_streamed_body on Beast's test::stream: every read failing in turn (a fail_count
// sweep, as Beast's own tests do), and reads cut to a few bytes, so a chunk's framing
// arrives without body bytes. Alongside the real-socket watch tests in
// cluster_watcher_test.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <optional>
#include <string>
#include <vector>

#include "webhook/kube/kube_client.h"

namespace kubegap {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A chunked watch response of three events, as the API server streams it.
std::string watch_response(const std::vector<std::string>& events) {
  std::string out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  char size[16];
  for (const auto& e : events) {
    std::snprintf(size, sizeof(size), "%zx\r\n", e.size());
    out += size + e + "\r\n";
  }
  return out + "0\r\n\r\n";
}

const std::vector<std::string> kEvents = {
    R"({"type":"ADDED","object":{"kind":"Node","metadata":{"name":"a","resourceVersion":"1"}}})"
    "\n",
    R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"name":"a","resourceVersion":"2"}}})"
    "\n",
    R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":"3"}}})"
    "\n"};

struct Outcome {
  bool header_failed = false;
  std::string body;   // every byte read before the end or the error
  std::string error;  // empty: the body ended cleanly
  int reads = 0;
};

// read_all: the response through `stream` (with `fail_at` failing the Nth operation),
// `read_size` bytes at most per read.
Outcome read_all(std::size_t fail_at, std::size_t read_size) {
  net::io_context ioc;
  beast::test::fail_count fc(fail_at);
  beast::test::stream stream(ioc, fc, watch_response(kEvents));
  stream.read_size(read_size);
  stream.close_remote();  // the API server ends the watch after the last chunk
  Outcome out;
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  beast::error_code ec;
  http::read_header(stream, buffer, parser, ec);
  if (ec) {
    out.header_failed = true;
    return out;
  }
  std::array<char, 64> chunk{};
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        for (;;) {
          auto [error, bytes] = co_await read_streamed_body(stream, buffer, parser, chunk, [&] { ++out.reads; });
          if (!error.empty()) {
            EXPECT_TRUE(bytes.empty());
            out.error = error;
            co_return;
          }
          if (bytes.empty()) co_return;  // the end
          out.body.append(bytes);
        }
      },
      net::detached);
  ioc.run();
  return out;
}

std::string all_events() {
  std::string all;
  for (const auto& e : kEvents) all += e;
  return all;
}

TEST(ReadStreamedBody, EveryFailingReadIsAnErrorNeverTheEndOfTheWatch) {
  const std::string expected = all_events();
  // Reads of a few bytes, so the body takes many reads (one large read would bring the
  // whole response in with the header, leaving the body's reads nothing to fail).
  for (std::size_t read_size : {std::size_t{3}, std::size_t{17}, std::size_t{64}}) {
    bool completed = false;
    int failures_seen = 0;
    for (std::size_t n = 0; n < 2000 && !completed; ++n) {
      const Outcome out = read_all(n, read_size);
      if (out.header_failed) continue;  // Beast's header read failed: not ours to check
      if (out.error.empty()) {
        // No failure reached the body: it is read whole, framing and all.
        EXPECT_EQ(out.body, expected) << "fail_count " << n << ", read_size " << read_size;
        completed = true;
      } else {
        ++failures_seen;
        EXPECT_EQ(out.error, beast::error_code(beast::test::error::test_failure).message());
        // What was read before the failure is a prefix of the events, never garbage. (All
        // of them, when the read that fails is the one for the final empty chunk: a
        // watch whose end was not seen is an error even so.)
        EXPECT_EQ(expected.compare(0, out.body.size(), out.body), 0) << "fail_count " << n;
      }
    }
    EXPECT_TRUE(completed) << "read_size " << read_size << ": the sweep never got past the failures";
    EXPECT_GT(failures_seen, 0) << "read_size " << read_size << ": no read failed; the sweep tested nothing";
  }
}

TEST(ReadStreamedBody, FramingWithoutBodyBytesIsReadPastNotTakenForTheEnd) {
  // Three bytes a read: some reads parse only a chunk's size line (the bug the real-socket
  // test once found: zero body bytes returned, taken for the end of the watch).
  const Outcome out = read_all(1000000, 3);
  ASSERT_FALSE(out.header_failed);
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.body, all_events());
  EXPECT_GT(out.reads, static_cast<int>(all_events().size() / 3)) << "reads were really cut to 3 bytes";
}

}  // namespace
}  // namespace kubegap

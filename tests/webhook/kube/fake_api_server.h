#pragma once
// FakeApiServer: a Kubernetes API server stand-in on loopback (TLS with the test
// certificates) for the cluster view's tests: each GET is answered by a script on the
// server's own thread; a watch can be held open and fed events later (push). Shared by
// cluster_watcher_test.cpp and runtime_watch_test.cpp.

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "webhook/kube/kube_config.h"

namespace kgtest {

namespace fake_net = boost::asio;
namespace fake_beast = boost::beast;

inline const std::string kCerts = KUBEGAP_TEST_CERTS;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// event: one line of a watch stream.
inline std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}\n";
}

// Reply: what the fake answers to one request. `hold` keeps a 200 watch open after the
// body until the client goes away (a quiet watch).
struct Reply {
  int status = 200;
  std::string body;
  bool hold = false;
};

// FakeApiServer: answers each GET with script(target) on its own thread; remembers the
// targets in order.
class FakeApiServer {
 public:
  explicit FakeApiServer(std::function<Reply(const std::string&)> script)
      : script_(std::move(script)),
        tls_(fake_net::ssl::context::tls_server),
        acceptor_(ioc_, {fake_net::ip::make_address("127.0.0.1"), 0}) {
    tls_.use_certificate_chain_file(kCerts + "/tls.crt");
    tls_.use_private_key_file(kCerts + "/tls.key", fake_net::ssl::context::pem);
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~FakeApiServer() {
    ioc_.stop();
    thread_.join();
  }
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  unsigned short port() const { return port_; }
  kubegap::KubeEndpoint endpoint() const {
    kubegap::KubeEndpoint e;
    e.host = "127.0.0.1";
    e.port = std::to_string(port());
    e.ca_pem = read_file(kCerts + "/ca.crt");
    e.source = "fake";
    return e;
  }
  std::vector<std::string> targets() {
    std::lock_guard lock(mutex_);
    return targets_;
  }
  // count: the requests so far whose target starts with `prefix`.
  std::size_t count(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(
        std::count_if(targets_.begin(), targets_.end(), [&](const std::string& t) { return starts_with(t, prefix); }));
  }
  // wait_for: until `count` requests have arrived (false after 20 s).
  bool wait_for(std::size_t count) {
    std::unique_lock lock(mutex_);
    return arrived_.wait_for(lock, std::chrono::seconds(20), [&] { return targets_.size() >= count; });
  }
  // push: `lines` (watch events) as one chunk on every held watch whose target starts
  // with `prefix`; how many watches got it (0 when none is open yet).
  std::size_t push(const std::string& prefix, const std::string& lines) {
    auto sent = std::make_shared<std::promise<std::size_t>>();
    fake_net::post(ioc_, [this, prefix, lines, sent] {
      std::size_t n = 0;
      for (const auto& [target, stream] : held_) {
        if (!starts_with(target, prefix)) continue;
        std::ostringstream raw;
        raw << std::hex << lines.size() << "\r\n" << lines << "\r\n";
        auto bytes = std::make_shared<std::string>(raw.str());
        fake_net::async_write(*stream, fake_net::buffer(*bytes),
                              [stream, bytes](fake_beast::error_code, std::size_t) {});
        ++n;
      }
      sent->set_value(n);
    });
    auto future = sent->get_future();
    return future.wait_for(std::chrono::seconds(20)) == std::future_status::ready ? future.get() : 0;
  }

 private:
  using Stream = fake_beast::ssl_stream<fake_beast::tcp_stream>;
  void accept() {
    acceptor_.async_accept([this](fake_beast::error_code ec, fake_net::ip::tcp::socket socket) {
      if (ec) return;
      auto stream = std::make_shared<Stream>(std::move(socket), tls_);
      stream->async_handshake(fake_net::ssl::stream_base::server, [this, stream](fake_beast::error_code hs) {
        if (!hs) read(stream);
      });
      accept();
    });
  }
  void read(std::shared_ptr<Stream> stream) {
    namespace http = fake_beast::http;
    auto buffer = std::make_shared<fake_beast::flat_buffer>();
    auto request = std::make_shared<http::request<http::empty_body>>();
    http::async_read(*stream, *buffer, *request,
                     [this, stream, buffer, request](fake_beast::error_code ec, std::size_t) {
                       if (ec) return;
                       const std::string target(request->target());
                       const Reply reply = script_(target);
                       {
                         std::lock_guard lock(mutex_);
                         targets_.push_back(target);
                       }
                       arrived_.notify_all();
                       respond(stream, target, reply);
                     });
  }
  void respond(const std::shared_ptr<Stream>& stream, const std::string& target, const Reply& reply) {
    namespace http = fake_beast::http;
    if (reply.hold) {
      // A watch: a chunked body that never ends, like the API server's. Written by hand
      // so the events go out at once.
      held_.emplace_back(target, stream);  // open until the client goes away or the server stops
      std::ostringstream raw;
      raw << "HTTP/1.1 " << reply.status
          << " OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      if (!reply.body.empty()) raw << std::hex << reply.body.size() << "\r\n" << reply.body << "\r\n";
      auto bytes = std::make_shared<std::string>(raw.str());
      fake_net::async_write(*stream, fake_net::buffer(*bytes), [stream, bytes](fake_beast::error_code, std::size_t) {});
      return;
    }
    auto response = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(reply.status), 11);
    response->body() = reply.body;
    response->set(http::field::content_type, "application/json");
    response->prepare_payload();
    http::async_write(*stream, *response, [stream, response](fake_beast::error_code, std::size_t) {
      fake_beast::error_code ignored;
      fake_beast::get_lowest_layer(*stream).socket().shutdown(fake_net::ip::tcp::socket::shutdown_send, ignored);
    });
  }

  std::function<Reply(const std::string&)> script_;
  fake_net::ssl::context tls_;  // before ioc_: the connections its handlers hold use it
  fake_net::io_context ioc_;
  fake_net::ip::tcp::acceptor acceptor_;
  std::vector<std::pair<std::string, std::shared_ptr<Stream>>> held_;  // quiet watches (server thread only)
  unsigned short port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<std::string> targets_;
};

// eventually: waits (up to 20 s) for `done`, polling: the reflector works on its own thread.
template <typename Done>
bool eventually(Done done) {
  for (int i = 0; i < 400; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// io_barrier: returns once `ioc` (run by one thread) has run every handler that was due
// before `after` from now: a timer expiring then (timers complete in deadline order), and
// then one more post, queued behind whatever those handlers posted (a strand's). False if
// that takes more than 20 s.
inline bool io_barrier(fake_net::io_context& ioc, std::chrono::milliseconds after) {
  auto done = std::make_shared<std::promise<void>>();
  auto timer = std::make_shared<fake_net::steady_timer>(ioc, after);
  timer->async_wait(
      [&ioc, timer, done](const boost::system::error_code&) { fake_net::post(ioc, [done] { done->set_value(); }); });
  return done->get_future().wait_for(std::chrono::seconds(20)) == std::future_status::ready;
}

// on_strand: `fn` run on `strand` (a reflector's), its result returned; throws when the
// strand's thread does not answer within 20 s.
template <typename Strand, typename Fn>
auto on_strand(Strand& strand, Fn fn) {
  auto result = std::make_shared<std::promise<decltype(fn())>>();
  boost::asio::post(strand, [result, fn] { result->set_value(fn()); });
  auto future = result->get_future();
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    throw std::runtime_error("the reflector's thread is gone");
  }
  return future.get();
}

}  // namespace kgtest

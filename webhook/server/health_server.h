#pragma once
// HealthServer: plain HTTP for the kubelet and Prometheus: /healthz (the process
// answers), /readyz (serving with a loaded policy), /metrics. One request per connection,
// at most `max_connections` open at once: past that a new connection is closed at once
// and counted (kubegap_health_connections_refused_total), so a pod that opens
// connections and sends nothing cannot hold the listener's thread and memory.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "webhook/server/http_util.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

struct ReadinessState {
  std::atomic<bool> ready{false};
  std::atomic<bool> shutting_down{false};  // once set, ready stays false

  void mark_ready() {
    if (!shutting_down.load()) ready = true;
  }
  void mark_shutting_down() {
    shutting_down = true;
    ready = false;
  }
};

// route_health_request: the pure part, testable without sockets.
HttpResponse route_health_request(const HttpRequest& request, const ReadinessState& readiness, const Metrics& metrics);

// kMaxHealthConnections: the kubelet's probes and a scraper or two need a handful.
inline constexpr std::size_t kMaxHealthConnections = 32;

class HealthServer {
 public:
  HealthServer(boost::asio::io_context& ioc, const ReadinessState& readiness, Metrics& metrics,
               boost::asio::ip::tcp::endpoint endpoint, std::size_t max_connections = kMaxHealthConnections);
  boost::asio::ip::tcp::endpoint listen();
  void stop();

 private:
  boost::asio::io_context& ioc_;
  const ReadinessState& readiness_;
  Metrics& metrics_;
  boost::asio::ip::tcp::endpoint endpoint_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::size_t max_connections_;
  // Connections being served; shared with each connection's coroutine, which may end
  // after the server object is gone.
  std::shared_ptr<std::atomic<std::size_t>> open_ = std::make_shared<std::atomic<std::size_t>>(0);
};

}  // namespace kubegap

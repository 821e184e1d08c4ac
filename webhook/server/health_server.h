#pragma once
// HealthServer: plain HTTP for the kubelet and Prometheus: /healthz (the process
// answers), /readyz (serving with a loaded policy), /metrics. One request per connection.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
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

class HealthServer {
 public:
  HealthServer(boost::asio::io_context& ioc, const ReadinessState& readiness, const Metrics& metrics,
               boost::asio::ip::tcp::endpoint endpoint);
  boost::asio::ip::tcp::endpoint listen();
  void stop();

 private:
  boost::asio::io_context& ioc_;
  const ReadinessState& readiness_;
  const Metrics& metrics_;
  boost::asio::ip::tcp::endpoint endpoint_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace kubegap

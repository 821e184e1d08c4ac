#pragma once
// ServeApp: `serve` composed: the two event loops, the server, health and metrics, the
// cluster view, the reloaders, the background audit, signals and the drain. The config
// is checked before (serve_config.h); the constructor opens files (policy, certificates)
// and throws ConfigError when one is wrong; run() binds, serves until SIGTERM/SIGINT and
// drains.
//
//   ServeApp app(serve_config_from(flags));
//   return app.run();   // 0 after a clean drain

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "policies/cluster_view.h"
#include "webhook/cmd/serve_config.h"
#include "webhook/core/policy_store.h"
#include "webhook/core/review_handler.h"
#include "webhook/kube/cluster_watcher.h"
#include "webhook/report/background_audit.h"
#include "webhook/server/file_watcher.h"
#include "webhook/server/health_server.h"
#include "webhook/server/server.h"
#include "webhook/server/tls.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

class ServeApp {
 public:
  explicit ServeApp(ServeConfig config);
  ServeApp(const ServeApp&) = delete;
  ServeApp& operator=(const ServeApp&) = delete;

  // run: serves until a signal's drain ends; rethrows what escaped an event loop.
  int run();

 private:
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  void open_cluster_view();
  void start();
  void log_serving(const boost::asio::ip::tcp::endpoint& bound, const boost::asio::ip::tcp::endpoint& health_bound);
  void run_loops();
  boost::asio::awaitable<void> renew_certificate_note();
  boost::asio::awaitable<void> wait_for_sync();
  boost::asio::awaitable<void> shut_down_on_signal();
  boost::asio::awaitable<void> stop_on_second_signal();

  ServeConfig config_;
  // Two event loops: `ioc_` (--threads threads) serves reviews and nothing else;
  // `control_` (one thread) runs health and metrics, the cluster view, the reloaders and
  // the audit, so a probe answers while every review thread is busy, and the watcher's
  // work (parsing events, building and freeing snapshots) never lands on a review.
  boost::asio::io_context ioc_;
  boost::asio::io_context control_{1};
  Metrics metrics_;
  PolicyStore policies_;
  ServerTlsStore tls_;
  // The cluster view: a file when given, else the live API server when reachable
  // (--kubeconfig, or in a pod), else none ("not evaluated", never a guess).
  std::unique_ptr<ClusterView> cluster_;
  ClusterWatcher* watcher_ = nullptr;
  std::unique_ptr<BackgroundAudit> audit_;
  std::string cluster_source_ = "none";
  ReadinessState readiness_;
  std::unique_ptr<ReviewHandler> handler_;
  std::unique_ptr<WebhookServer> server_;
  std::unique_ptr<HealthServer> health_;
  std::unique_ptr<FileWatcher> tls_watch_, policy_watch_;
  boost::asio::signal_set signals_{control_, SIGINT, SIGTERM};
  // The review loop keeps running until the drain ends, even with nothing to do (so a
  // signal's drain, spawned on it, always runs).
  WorkGuard review_work_;
};

}  // namespace kubegap

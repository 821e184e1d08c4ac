#pragma once
// ClusterWatcher: the live cluster view. Lists and watches policy/v1
// PodDisruptionBudgets (all namespaces) and v1 Nodes through a small Kubernetes API
// client on Beast/Asio + OpenSSL, and publishes an immutable ClusterSnapshot that reviews
// read with one atomic load: the request path never waits on the network.
//
//   ClusterWatcher watcher(ioc, endpoint, metrics);
//   watcher.start();
//   ReviewHandler handler(policies, watcher);   // a ClusterView
//
// Resilience: resourceVersion tracking, watch bookmarks, watches renewed when their
// timeout ends, 410 Gone -> relist, exponential backoff with jitter on errors.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>

#include "policies/cluster_view.h"
#include "webhook/kube_config.h"
#include "webhook/metrics.h"

namespace kubegap {

struct WatcherOptions {
  std::chrono::seconds watch_timeout{300};  // server-side timeoutSeconds of each watch
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  std::chrono::milliseconds publish_delay{50};  // coalesces bursts of events
  std::size_t page_size = 500;
};

class ClusterWatcher final : public ClusterView {
 public:
  ClusterWatcher(boost::asio::io_context& ioc, KubeEndpoint endpoint, Metrics& metrics,
                 WatcherOptions options = {});
  ~ClusterWatcher() override;

  void start();
  void stop();

  // synced: both resources have been listed once.
  bool synced() const;
  std::shared_ptr<const ClusterSnapshot> snapshot() const override;
  std::string_view unavailable_reason() const override { return "cluster view not synced"; }

 private:
  struct Impl;
  // Shared with the coroutines, which may outlive this object by a few handlers.
  std::shared_ptr<Impl> impl_;
};

// make_client_tls_context: trust the endpoint's CA (or the system store), present its
// client certificate; throws ConfigError.
boost::asio::ssl::context make_client_tls_context(const KubeEndpoint& endpoint);

// url_encode: for continue tokens and resource versions in query strings.
std::string url_encode(std::string_view text);

}  // namespace kubegap

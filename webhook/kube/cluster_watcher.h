#pragma once
// ClusterWatcher: the live cluster view. Lists and watches policy/v1
// PodDisruptionBudgets (all namespaces), v1 Nodes, and Kubeflow Trainer's
// trainer.kubeflow.org/v1alpha1 ClusterTrainingRuntimes and TrainingRuntimes (Reflector
// over KubeClient, a small Kubernetes API client on Beast/Asio + OpenSSL), and publishes an immutable
// ClusterSnapshot that reviews read with one atomic load (SnapshotPublisher): the request
// path never waits on the network, and never frees an old view. Run it on an io_context
// the reviews do not use.
//
//   ClusterWatcher watcher(ioc, endpoint, metrics);
//   watcher.start();
//   ReviewHandler handler(policies, watcher);   // a ClusterView
//
// Resilience: resourceVersion tracking, watch bookmarks, watches renewed when their
// timeout ends, 410 Gone -> relist, exponential backoff with jitter on errors. The runtimes
// are optional: without the Trainer CRDs (404) or the RBAC to read them (403) the view
// syncs without them (RuntimeSet listed=false), logs that once at info and lists them
// again every WatcherOptions::absent_recheck (5 minutes).

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "policies/cluster_view.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/reflector.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {

class ClusterWatcher final : public ClusterView {
 public:
  ClusterWatcher(boost::asio::io_context& ioc, KubeEndpoint endpoint, Metrics& metrics, WatcherOptions options = {});
  ~ClusterWatcher() override;

  void start();
  void stop();

  // synced: the PDBs and Nodes have been listed once, and the runtimes tried once.
  bool synced() const;
  std::shared_ptr<const ClusterSnapshot> snapshot() const override;
  std::string_view unavailable_reason() const override { return "cluster view not synced"; }

 private:
  struct Impl;
  // Shared with the coroutines, which may outlive this object by a few handlers.
  std::shared_ptr<Impl> impl_;
};

}  // namespace kubegap

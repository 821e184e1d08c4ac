#include "webhook/kube/cluster_watcher.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "webhook/kube/kube_client.h"
#include "webhook/kube/reflector.h"
#include "webhook/kube/snapshot_publisher.h"
#include "webhook/telemetry/logging.h"

namespace kubegap {

namespace net = boost::asio;

// Impl: the pieces, client-go style. KubeClient is the transport; one Reflector per
// resource keeps its ResourceStore in step with the API server and says when something
// the checks read changed; the publish step turns the stores into a snapshot (after a
// short delay that folds a burst of events into one), rebuilding only the part that
// changed; SnapshotPublisher hands it to reviews and frees the replaced ones.
struct ClusterWatcher::Impl : std::enable_shared_from_this<ClusterWatcher::Impl> {
  Impl(net::io_context& ioc, KubeEndpoint endpoint, Metrics& shared_metrics, WatcherOptions watcher_options)
      : strand(net::make_strand(ioc)),
        metrics(shared_metrics),
        options(watcher_options),
        client(strand, std::move(endpoint)),
        publish_timer(strand),
        publisher(std::make_shared<SnapshotPublisher>(strand)) {}

  net::strand<net::io_context::executor_type> strand;  // every member below lives on it
  Metrics& metrics;
  WatcherOptions options;
  KubeClient client;
  net::steady_timer publish_timer;
  std::shared_ptr<SnapshotPublisher> publisher;
  std::atomic<bool> synced{false};
  bool publish_pending = false;
  bool stopped = false;
  bool budgets_dirty = false;  // changed since the last published snapshot
  bool nodes_dirty = false;
  bool runtimes_dirty = false;
  Reflector<DisruptionBudget> budgets{"poddisruptionbudgets",
                                      "/apis/policy/v1/poddisruptionbudgets",
                                      {decode_budget_object, budget_key},
                                      client,
                                      metrics,
                                      options,
                                      [this] { changed(budgets_dirty); }};
  Reflector<NodeInfo> nodes{"nodes", "/api/v1/nodes", {decode_node_object, node_key},  client,
                            metrics, options,         [this] { changed(nodes_dirty); }};
  // Kubeflow Trainer's runtimes, for TrainJobs: optional, since most clusters have no
  // Trainer CRDs (404: absent, rechecked every options.absent_recheck).
  Reflector<RuntimeObject> cluster_runtimes{"clustertrainingruntimes",
                                            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
                                            {decode_cluster_runtime_object, runtime_object_key},
                                            client,
                                            metrics,
                                            options,
                                            [this] { changed(runtimes_dirty); },
                                            ResourcePresence::kOptional};
  Reflector<RuntimeObject> namespaced_runtimes{"trainingruntimes",
                                               "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes",
                                               {decode_namespaced_runtime_object, runtime_object_key},
                                               client,
                                               metrics,
                                               options,
                                               [this] { changed(runtimes_dirty); },
                                               ResourcePresence::kOptional};

  void changed(bool& dirty) {
    dirty = true;
    if (publish_pending || stopped) return;
    publish_pending = true;
    publish_timer.expires_after(options.publish_delay);
    publish_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      self->publish_pending = false;
      if (!ec && !self->stopped) self->publish();
    });
  }

  // ready: the first snapshot waits for the PDBs and Nodes to be listed, and for one list
  // of each runtime kind to end, listed or not (a cluster without Trainer syncs without).
  bool ready() const {
    return budgets.listed() && nodes.listed() && cluster_runtimes.tried() && namespaced_runtimes.tried();
  }

  // runtime_set: both runtime kinds; `listed` only when both are (a runtime the set lacks
  // then does not exist; otherwise a TrainJob that names it is "not evaluated").
  std::shared_ptr<const RuntimeSet> runtime_set() const {
    std::vector<TrainingRuntimeInfo> all;
    all.reserve(cluster_runtimes.store().size() + namespaced_runtimes.store().size());
    for (const auto* reflector : {&cluster_runtimes, &namespaced_runtimes}) {
      for (auto& runtime : reflector->store().values()) all.push_back(std::move(runtime.info));
    }
    return std::make_shared<const RuntimeSet>(std::move(all),
                                              cluster_runtimes.listed() && namespaced_runtimes.listed());
  }

  void publish() {
    if (!synced && !ready()) return;
    // Only the part that changed is rebuilt (and re-indexed); the others are shared with
    // the previous snapshot, so a PDB change does not copy 5,000 Nodes, nor the reverse.
    std::shared_ptr<const BudgetSet> budget_part;
    std::shared_ptr<const NodeSet> node_part;
    std::shared_ptr<const RuntimeSet> runtime_part;
    {
      // Scoped: holding the previous snapshot across publish() would keep the publisher
      // from freeing it at once when no review holds it either.
      const auto previous = publisher->current();
      budget_part = budgets_dirty || !previous ? std::make_shared<const BudgetSet>(budgets.store().values())
                                               : previous->shared_budgets();
      node_part =
          nodes_dirty || !previous ? std::make_shared<const NodeSet>(nodes.store().values()) : previous->shared_nodes();
      runtime_part = runtimes_dirty || !previous ? runtime_set() : previous->shared_runtimes();
    }
    budgets_dirty = nodes_dirty = runtimes_dirty = false;
    publisher->publish(
        std::make_shared<const ClusterSnapshot>(std::move(budget_part), std::move(node_part), std::move(runtime_part)));
    metrics.cluster_published();
    for (const auto& [name, size] : {std::pair{budgets.name(), budgets.store().size()},
                                     {nodes.name(), nodes.store().size()},
                                     {cluster_runtimes.name(), cluster_runtimes.store().size()},
                                     {namespaced_runtimes.name(), namespaced_runtimes.store().size()}}) {
      metrics.cluster_objects(name, size);
    }
    if (!synced.exchange(true)) {
      log_event(spdlog::level::info, "cluster view synced",
                {{"poddisruptionbudgets", std::to_string(budgets.store().size()), false},
                 {"nodes", std::to_string(nodes.store().size()), false},
                 {"trainingruntimes_listed",
                  cluster_runtimes.listed() && namespaced_runtimes.listed() ? "true" : "false", false}});
    }
  }

  void stop() {
    stopped = true;
    publish_timer.cancel();
    publisher->stop();
    budgets.stop();
    nodes.stop();
    cluster_runtimes.stop();
    namespaced_runtimes.stop();
  }
};

ClusterWatcher::ClusterWatcher(net::io_context& ioc, KubeEndpoint endpoint, Metrics& metrics, WatcherOptions options)
    : impl_(std::make_shared<Impl>(ioc, std::move(endpoint), metrics, options)) {}

bool ClusterWatcher::synced() const { return impl_->synced.load(); }

std::shared_ptr<const ClusterSnapshot> ClusterWatcher::snapshot() const { return impl_->publisher->current(); }

ClusterWatcher::~ClusterWatcher() {
  try {
    stop();
  } catch (...) {
    // Posting the stop failed to allocate: a destructor must not throw, and the
    // watches end with the io_context anyway.
  }
}

void ClusterWatcher::start() {
  auto impl = impl_;
  net::co_spawn(
      impl->strand, [impl]() -> net::awaitable<void> { co_await impl->budgets.run(); }, net::detached);
  net::co_spawn(
      impl->strand, [impl]() -> net::awaitable<void> { co_await impl->nodes.run(); }, net::detached);
  net::co_spawn(
      impl->strand, [impl]() -> net::awaitable<void> { co_await impl->cluster_runtimes.run(); }, net::detached);
  net::co_spawn(
      impl->strand, [impl]() -> net::awaitable<void> { co_await impl->namespaced_runtimes.run(); }, net::detached);
}

void ClusterWatcher::stop() {
  auto impl = impl_;
  net::post(impl->strand, [impl] { impl->stop(); });
}

}  // namespace kubegap

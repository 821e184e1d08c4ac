// The Kubeflow Trainer runtimes in the live cluster view (ClusterTrainingRuntimes and
// TrainingRuntimes, trainer.kubeflow.org/v1alpha1), against the fake API server: an
// optional resource whose CRD is not installed (404) or not granted (403) is "absent" —
// the view syncs without it (RuntimeSet listed=false), says so once, counts no error and
// lists it again every absent_recheck; once listed, RuntimeSet listed=true, and a runtime
// change publishes a snapshot that shares the PDB and Node parts with the previous one.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fake_api_server.h"
#include "webhook/kube/cluster_watcher.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/reflector.h"

namespace kgtest {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

const std::string kClusterRuntimes = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes";
const std::string kRuntimes = "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes";

std::string runtime(const std::string& kind, const std::string& ns, const std::string& name, const std::string& rv,
                    const std::string& image) {
  const std::string meta_ns = ns.empty() ? "" : R"("namespace":")" + ns + R"(",)";
  return R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":")" + kind + R"(","metadata":{"name":")" + name +
         R"(",)" + meta_ns + R"("resourceVersion":")" + rv + R"(","managedFields":[{"manager":"kubectl-)" + rv +
         R"("}]},"spec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":{"template":{)"
         R"("spec":{"containers":[{"name":"node","image":")" +
         image + R"("}]}}}}}]}}}})";
}

std::string list_of(const std::string& kind, const std::string& rv, const std::vector<std::string>& items) {
  std::string out = R"({"kind":")" + kind + R"(List","apiVersion":"trainer.kubeflow.org/v1alpha1","metadata":{)" +
                    R"("resourceVersion":")" + rv + R"("},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]}";
}

std::string empty_list(const std::string& kind, const std::string& rv) {
  return R"({"kind":")" + kind + R"(","apiVersion":"v1","metadata":{"resourceVersion":")" + rv + R"("},"items":[]})";
}

const Reply kNotFound{404, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})"};

kubegap::WatcherOptions fast_options() {
  kubegap::WatcherOptions options;
  options.backoff_base = 20ms;
  options.backoff_cap = 100ms;
  options.watch_timeout = 60s;
  options.publish_delay = 10ms;
  options.absent_recheck = 100ms;
  return options;
}

std::string metric_line(const kubegap::Metrics& metrics, const std::string& name, const std::string& resource) {
  const std::string text = metrics.render();
  const std::string key = name + "{resource=\"" + resource + "\"} ";
  const auto at = text.find(key);
  return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
}

// Runs a Reflector<RuntimeObject> (ClusterTrainingRuntimes, optional) on its own thread.
class RuntimeReflectorRun {
 public:
  RuntimeReflectorRun(FakeApiServer& server, kubegap::WatcherOptions options)
      : strand_(net::make_strand(ioc_)),
        client_(strand_, server.endpoint()),
        reflector_(
            "clustertrainingruntimes", kClusterRuntimes.c_str(),
            {kubegap::decode_cluster_runtime_object, kubegap::runtime_object_key}, client_, metrics_, options,
            [this] { ++changes_; }, kubegap::ResourcePresence::kOptional) {
    metrics_.cluster_view_enabled();
    net::co_spawn(strand_, reflector_.run(), net::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~RuntimeReflectorRun() {
    net::post(strand_, [this] { reflector_.stop(); });
    thread_.join();
  }
  template <typename Fn>
  auto on_strand(Fn fn) {
    return kgtest::on_strand(strand_, fn);
  }
  int changes() {
    return on_strand([this] { return changes_; });
  }
  std::size_t size() {
    return on_strand([this] { return reflector_.store().size(); });
  }
  bool listed() {
    return on_strand([this] { return reflector_.listed(); });
  }
  bool absent() {
    return on_strand([this] { return reflector_.absent(); });
  }
  kubegap::Metrics& metrics() { return metrics_; }

 private:
  net::io_context ioc_;
  net::strand<net::io_context::executor_type> strand_;
  kubegap::Metrics metrics_;
  kubegap::KubeClient client_;
  kubegap::Reflector<kubegap::RuntimeObject> reflector_;
  int changes_ = 0;
  std::thread thread_;
};

TEST(ReflectorOptional, AnAbsentResourceIsRecheckedWithoutErrorsAndListedOnceInstalled) {
  std::atomic<int> lists{0};
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, kClusterRuntimes + "?limit=")) {
      if (++lists <= 3) return kNotFound;  // the CRD is installed after the third look
      return {200, list_of("ClusterTrainingRuntime", "40",
                           {runtime("ClusterTrainingRuntime", "", "torch", "39", "pytorch:1")})};
    }
    return {200, "", true};
  });
  RuntimeReflectorRun run(server, fast_options());
  ASSERT_TRUE(eventually([&] { return run.listed(); }));
  EXPECT_EQ(run.size(), 1u);
  EXPECT_FALSE(run.absent());
  EXPECT_EQ(lists.load(), 4);
  // on_change once when it went absent (not on every recheck), once when it was listed.
  EXPECT_EQ(run.changes(), 2);
  EXPECT_EQ(metric_line(run.metrics(), "kubegap_cluster_view_errors_total", "clustertrainingruntimes"),
            "kubegap_cluster_view_errors_total{resource=\"clustertrainingruntimes\"} 0");
  EXPECT_EQ(metric_line(run.metrics(), "kubegap_cluster_view_objects", "clustertrainingruntimes"),
            "kubegap_cluster_view_objects{resource=\"clustertrainingruntimes\"} 1");
}

TEST(ReflectorOptional, AbsentIsNotRetriedBeforeTheRecheckInterval) {
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, kClusterRuntimes)) return {403, R"({"kind":"Status","code":403,"reason":"Forbidden"})"};
    return {200, "", true};
  });
  auto options = fast_options();
  options.absent_recheck = 60s;
  RuntimeReflectorRun run(server, options);
  ASSERT_TRUE(eventually([&] { return run.absent(); }));
  // Longer than several backoffs (20-100 ms): an error would have been retried by now.
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(server.count(kClusterRuntimes), 1u);
  EXPECT_EQ(run.changes(), 1);
  EXPECT_EQ(run.size(), 0u);
  EXPECT_EQ(metric_line(run.metrics(), "kubegap_cluster_view_errors_total", "clustertrainingruntimes"),
            "kubegap_cluster_view_errors_total{resource=\"clustertrainingruntimes\"} 0");
  // In step with the API server (there is nothing to list): the stale-view alert is quiet.
  const std::string last_sync =
      metric_line(run.metrics(), "kubegap_cluster_view_last_sync_timestamp_seconds", "clustertrainingruntimes");
  EXPECT_FALSE(last_sync.empty());
  EXPECT_EQ(last_sync.find("} 0"), std::string::npos) << last_sync;
}

TEST(ReflectorOptional, AWatchAnswered404ListsAgainAndFindsTheResourceGone) {
  std::atomic<int> lists{0};
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, kClusterRuntimes + "?limit=")) {
      if (++lists == 1) {
        return {200, list_of("ClusterTrainingRuntime", "40",
                             {runtime("ClusterTrainingRuntime", "", "torch", "39", "pytorch:1")})};
      }
      return kNotFound;
    }
    if (starts_with(target, kClusterRuntimes + "?watch=1")) return kNotFound;  // the CRD was deleted
    return {200, "", true};
  });
  auto options = fast_options();
  options.absent_recheck = 60s;
  RuntimeReflectorRun run(server, options);
  ASSERT_TRUE(eventually([&] { return run.absent(); }));
  EXPECT_EQ(run.size(), 0u);
  EXPECT_FALSE(run.listed());
  EXPECT_EQ(run.changes(), 2);  // listed, then absent
  EXPECT_EQ(metric_line(run.metrics(), "kubegap_cluster_view_errors_total", "clustertrainingruntimes"),
            "kubegap_cluster_view_errors_total{resource=\"clustertrainingruntimes\"} 0");
}

TEST(ReflectorOptional, OtherListErrorsBackOffAndTellTheWatcherOnce) {
  std::atomic<int> lists{0};
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, kClusterRuntimes + "?limit=")) {
      if (++lists <= 2) return {500, R"({"kind":"Status","code":500})"};
      return {200, list_of("ClusterTrainingRuntime", "40", {})};
    }
    return {200, "", true};
  });
  RuntimeReflectorRun run(server, fast_options());
  ASSERT_TRUE(eventually([&] { return run.listed(); }));
  EXPECT_FALSE(run.absent());
  EXPECT_EQ(run.changes(), 2);  // the first failure (the watcher need not wait), the list
  EXPECT_EQ(metric_line(run.metrics(), "kubegap_cluster_view_errors_total", "clustertrainingruntimes"),
            "kubegap_cluster_view_errors_total{resource=\"clustertrainingruntimes\"} 2");
}

// A watcher on its own io_context thread, stopped and joined however the test ends.
struct WatcherRun {
  net::io_context ioc;
  kubegap::Metrics metrics;
  kubegap::ClusterWatcher watcher;
  std::thread thread;
  WatcherRun(FakeApiServer& server, kubegap::WatcherOptions options)
      : watcher(ioc, server.endpoint(), metrics, options) {
    metrics.cluster_view_enabled();
    watcher.start();
    thread = std::thread([this] { ioc.run(); });
  }
  ~WatcherRun() {
    watcher.stop();
    if (thread.joinable()) thread.join();
  }
  WatcherRun(const WatcherRun&) = delete;
  WatcherRun& operator=(const WatcherRun&) = delete;
};

Reply budgets_and_nodes(const std::string& target) {
  if (starts_with(target, "/api/v1/nodes?limit=")) return {200, empty_list("NodeList", "10")};
  if (starts_with(target, "/apis/policy/v1/poddisruptionbudgets?limit=")) {
    return {200, empty_list("PodDisruptionBudgetList", "11")};
  }
  return {200, "", true};
}

// one_runtime_of_each_kind: a cluster with Trainer installed, one runtime of each kind,
// plus the PDBs and Nodes.
Reply one_runtime_of_each_kind(const std::string& target) {
  if (starts_with(target, kClusterRuntimes + "?limit=")) {
    return {200, list_of("ClusterTrainingRuntime", "50",
                         {runtime("ClusterTrainingRuntime", "", "torch-distributed", "49", "pytorch:1")})};
  }
  if (starts_with(target, kRuntimes + "?limit=")) {
    return {200, list_of("TrainingRuntime", "51", {runtime("TrainingRuntime", "ml", "team-torch", "48", "team:1")})};
  }
  return budgets_and_nodes(target);
}

TEST(ClusterWatcherRuntimes, SyncsWithoutTheTrainerCrdsThenPicksThemUpReusingTheOtherParts) {
  std::atomic<bool> installed{false};
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, "/apis/trainer.kubeflow.org/") && !installed) return kNotFound;
    return one_runtime_of_each_kind(target);
  });
  WatcherRun run(server, fast_options());
  ASSERT_TRUE(eventually([&] { return run.watcher.synced(); }));
  const auto without = run.watcher.snapshot();
  ASSERT_NE(without, nullptr);
  EXPECT_FALSE(without->runtimes().listed());
  EXPECT_EQ(without->runtimes().size(), 0u);

  installed = true;
  ASSERT_TRUE(eventually([&] { return run.watcher.snapshot()->runtimes().listed(); }));
  const auto with = run.watcher.snapshot();
  EXPECT_EQ(with->runtimes().size(), 2u);
  const std::string* cluster = with->runtimes().find("ClusterTrainingRuntime", "any-namespace", "torch-distributed");
  ASSERT_NE(cluster, nullptr);
  EXPECT_NE(cluster->find(R"("image":"pytorch:1")"), std::string::npos) << *cluster;
  EXPECT_EQ(cluster->find("managedFields"), std::string::npos) << *cluster;
  EXPECT_EQ(cluster->find("resourceVersion"), std::string::npos) << *cluster;
  EXPECT_NE(with->runtimes().find("TrainingRuntime", "ml", "team-torch"), nullptr);
  EXPECT_EQ(with->runtimes().find("TrainingRuntime", "other", "team-torch"), nullptr);
  // The PDB and Node parts did not change: the new snapshot shares them.
  EXPECT_EQ(with->shared_budgets(), without->shared_budgets());
  EXPECT_EQ(with->shared_nodes(), without->shared_nodes());
  EXPECT_NE(with->shared_runtimes(), without->shared_runtimes());
}

TEST(ClusterWatcherRuntimes, ARuntimeChangePublishesASnapshotThatSharesTheBudgetsAndNodes) {
  FakeApiServer server([&](const std::string& target) -> Reply { return one_runtime_of_each_kind(target); });
  WatcherRun run(server, fast_options());
  ASSERT_TRUE(eventually([&] { return run.watcher.synced(); }));
  const auto before = run.watcher.snapshot();
  ASSERT_TRUE(before->runtimes().listed());
  ASSERT_EQ(before->runtimes().size(), 2u);
  ASSERT_TRUE(eventually([&] { return server.count(kClusterRuntimes + "?watch=1") == 1; }));
  ASSERT_TRUE(eventually([&] { return server.count(kRuntimes + "?watch=1") == 1; }));

  ASSERT_EQ(
      server.push(kClusterRuntimes + "?watch=1",
                  event("MODIFIED", runtime("ClusterTrainingRuntime", "", "torch-distributed", "60", "pytorch:2"))),
      1u);
  ASSERT_TRUE(eventually([&] {
    const std::string* text =
        run.watcher.snapshot()->runtimes().find("ClusterTrainingRuntime", "", "torch-distributed");
    return text != nullptr && text->find("pytorch:2") != std::string::npos;
  }));
  const auto after = run.watcher.snapshot();
  EXPECT_EQ(after->shared_budgets(), before->shared_budgets());
  EXPECT_EQ(after->shared_nodes(), before->shared_nodes());
  EXPECT_TRUE(after->runtimes().listed());

  ASSERT_EQ(server.push(kRuntimes + "?watch=1",
                        event("DELETED", runtime("TrainingRuntime", "ml", "team-torch", "61", "team:1"))),
            1u);
  ASSERT_TRUE(eventually(
      [&] { return run.watcher.snapshot()->runtimes().find("TrainingRuntime", "ml", "team-torch") == nullptr; }));
  EXPECT_EQ(run.watcher.snapshot()->shared_nodes(), before->shared_nodes());
  const std::string rendered = run.metrics.render();
  EXPECT_NE(rendered.find("kubegap_cluster_view_objects{resource=\"trainingruntimes\"} 0\n"), std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find("kubegap_cluster_view_objects{resource=\"clustertrainingruntimes\"} 1\n"), std::string::npos)
      << rendered;
}

// The store of runtimes, without sockets: what a watch event changes.
TEST(RuntimeObjectStore, AChangeOnlyToManagedFieldsOrTheVersionChangesNothing) {
  kubegap::ResourceStore<kubegap::RuntimeObject> store(kubegap::decode_namespaced_runtime_object,
                                                       kubegap::runtime_object_key);
  std::string continue_token;
  store.start_list();
  ASSERT_EQ(store.add_list_page(list_of("TrainingRuntime", "5", {runtime("TrainingRuntime", "ml", "r", "4", "a:1")}),
                                continue_token),
            "");
  store.finish_list();
  EXPECT_EQ(store.apply_event(event("MODIFIED", runtime("TrainingRuntime", "ml", "r", "6", "a:1"))),
            kubegap::WatchResult::kUnchanged);
  EXPECT_EQ(store.resource_version(), "6");
  EXPECT_EQ(store.apply_event(event("MODIFIED", runtime("TrainingRuntime", "ml", "r", "7", "a:2"))),
            kubegap::WatchResult::kChanged);
  const auto values = store.values();
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].info.kind, "TrainingRuntime");
  EXPECT_EQ(values[0].info.namespace_name, "ml");
  EXPECT_EQ(values[0].info.name, "r");
  EXPECT_NE(values[0].info.json.find(R"("metadata":{"name":"r","namespace":"ml"})"), std::string::npos)
      << values[0].info.json;
  // A runtime whose name is not a string is an unreadable event, not a runtime named "".
  std::string error;
  EXPECT_EQ(store.apply_event(R"({"type":"ADDED","object":{"metadata":{"name":5}}})", &error),
            kubegap::WatchResult::kError);
  EXPECT_NE(error.find("metadata.name"), std::string::npos) << error;
  store.clear();
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.resource_version(), "");
}

}  // namespace
}  // namespace kgtest

// The cluster view's pieces against a fake API server on loopback (TLS with the test
// certificates, fake_api_server.h): the Reflector lists in pages, watches from the list's
// resourceVersion, calls on_change only for changes the checks read, relists on 410 Gone
// and backs off on errors; ClusterWatcher publishes one snapshot per burst;
// SnapshotPublisher frees a replaced snapshot itself, never on the thread that dropped it
// last. The Trainer runtimes' part of the view: runtime_watch_test.cpp.
#include "webhook/kube/cluster_watcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fake_api_server.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/reflector.h"
#include "webhook/kube/snapshot_publisher.h"

namespace kgtest {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

std::string node(const std::string& name, const std::string& rv, const std::string& pool,
                 const std::string& heartbeat = "t0") {
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","resourceVersion":")" + rv +
         R"(","labels":{"pool":")" + pool +
         R"(","topology.kubernetes.io/zone":"z1"}},"spec":{},)"
         R"("status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":")" +
         heartbeat + R"("}]}})";
}

std::string node_list(const std::string& rv, const std::string& continue_token, const std::vector<std::string>& items) {
  std::string meta = R"("resourceVersion":")" + rv + "\"";
  if (!continue_token.empty()) meta += R"(,"continue":")" + continue_token + "\"";
  std::string out = R"({"kind":"NodeList","apiVersion":"v1","metadata":{)" + meta + R"(},"items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]}";
}

std::string bookmark(const std::string& rv) {
  return event("BOOKMARK", R"({"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":")" + rv + R"("}})");
}

// Runs a Reflector<NodeInfo> against `server` on its own thread until stopped.
class NodeReflectorRun {
 public:
  NodeReflectorRun(FakeApiServer& server, kubegap::WatcherOptions options)
      : strand_(net::make_strand(ioc_)),
        client_(strand_, server.endpoint()),
        reflector_("nodes", "/api/v1/nodes", {kubegap::decode_node_object, kubegap::node_key}, client_, metrics_,
                   options, [this] { ++changes_; }) {
    metrics_.cluster_view_enabled();
    net::co_spawn(strand_, reflector_.run(), net::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~NodeReflectorRun() {
    net::post(strand_, [this] { reflector_.stop(); });
    thread_.join();  // run() returns once the reflector has stopped
  }
  // on_strand: `fn` run on the reflector's strand, its result returned.
  template <typename Fn>
  auto on_strand(Fn fn) {
    return kgtest::on_strand(strand_, fn);
  }
  int changes() {
    return on_strand([this] { return changes_; });
  }
  std::vector<std::string> names() {
    return on_strand([this] {
      std::vector<std::string> out;
      for (const auto& n : reflector_.store().values()) out.push_back(n.name);
      std::sort(out.begin(), out.end());
      return out;
    });
  }
  std::string resource_version() {
    return on_strand([this] { return reflector_.store().resource_version(); });
  }
  kubegap::Metrics& metrics() { return metrics_; }

 private:
  net::io_context ioc_;
  net::strand<net::io_context::executor_type> strand_;
  kubegap::Metrics metrics_;
  kubegap::KubeClient client_;
  kubegap::Reflector<kubegap::NodeInfo> reflector_;
  int changes_ = 0;
  std::thread thread_;
};

kubegap::WatcherOptions fast_options() {
  kubegap::WatcherOptions options;
  options.backoff_base = 20ms;
  options.backoff_cap = 100ms;
  options.page_size = 2;
  options.watch_timeout = 60s;
  return options;
}

TEST(Reflector, ListsInPagesThenWatchesFromTheListsVersionAndRelistsOnGone) {
  int watches = 0;
  int lists = 0;
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, "/api/v1/nodes?limit=2&continue=c%201"))
      return {200, node_list("100", "", {node("n3", "90", "b")})};
    if (starts_with(target, "/api/v1/nodes?limit=2")) {
      ++lists;
      if (lists == 1) return {200, node_list("100", "c 1", {node("n1", "80", "a"), node("n2", "85", "a")})};
      return {200, node_list("300", "", {node("n1", "80", "a"), node("n5", "290", "c")})};
    }
    ++watches;
    if (watches == 1) {
      // A heartbeat (nothing the checks read), then a new node, then a bookmark; then the
      // watch ends as if its timeout had passed.
      return {200, event("MODIFIED", node("n1", "101", "a", "t1")) + event("ADDED", node("n4", "102", "b")) +
                       bookmark("150")};
    }
    if (watches == 2) return {410, R"({"kind":"Status","code":410,"reason":"Expired"})"};
    return {200, "", true};  // a quiet watch, until the test stops the reflector
  });
  {
    NodeReflectorRun run(server, fast_options());
    ASSERT_TRUE(server.wait_for(6));
    ASSERT_TRUE(eventually([&] { return run.resource_version() == "300"; }));
    EXPECT_EQ(run.names(), (std::vector<std::string>{"n1", "n5"}));
    // list -> on_change; the ADDED -> on_change; the heartbeat -> nothing; relist -> on_change.
    EXPECT_EQ(run.changes(), 3);
  }
  const auto targets = server.targets();
  ASSERT_GE(targets.size(), 6u);
  EXPECT_EQ(targets[0], "/api/v1/nodes?limit=2");
  EXPECT_EQ(targets[1], "/api/v1/nodes?limit=2&continue=c%201");
  EXPECT_EQ(targets[2], "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=60");
  EXPECT_EQ(targets[3], "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=150&timeoutSeconds=60")
      << "the next watch resumes from the bookmark";
  EXPECT_EQ(targets[4], "/api/v1/nodes?limit=2") << "410 Gone: list again";
  EXPECT_EQ(targets[5], "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=300&timeoutSeconds=60");
}

TEST(Reflector, AFailingListIsRetriedWithBackoffAndCounted) {
  int lists = 0;
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, "/api/v1/nodes?limit=")) {
      ++lists;
      if (lists < 3) return {500, R"({"kind":"Status","code":500})"};
      return {200, node_list("7", "", {node("n1", "5", "a")})};
    }
    return {200, "", true};
  });
  NodeReflectorRun run(server, fast_options());
  ASSERT_TRUE(server.wait_for(4));
  ASSERT_TRUE(eventually([&] { return run.resource_version() == "7"; }));
  EXPECT_EQ(run.names(), (std::vector<std::string>{"n1"}));
  EXPECT_NE(run.metrics().render().find("kubegap_cluster_view_errors_total{resource=\"nodes\"} 2\n"), std::string::npos)
      << run.metrics().render();
}

TEST(Reflector, AnUnreadableWatchEventMakesItListAgain) {
  int lists = 0;
  int watches = 0;
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, "/api/v1/nodes?limit=")) {
      ++lists;
      return {200, node_list(std::to_string(10 * lists), "", {node("n1", "5", "a")})};
    }
    if (++watches == 1) return {200, "{\"type\":\"ADDED\",\"object\":[]}\n", true};
    return {200, "", true};
  });
  NodeReflectorRun run(server, fast_options());
  ASSERT_TRUE(server.wait_for(4));
  const auto targets = server.targets();
  EXPECT_EQ(targets[2], "/api/v1/nodes?limit=2");
  EXPECT_EQ(targets[3], "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=20&timeoutSeconds=60");
}

TEST(BackoffDelay, GrowsToTheCapWithJitterBetweenHalfAndAll) {
  kubegap::WatcherOptions options;
  options.backoff_base = 100ms;
  options.backoff_cap = 1000ms;
  std::mt19937 random(1);
  for (int failures = 0; failures < 40; ++failures) {
    const auto ceiling = std::min<long long>(1000, 100LL << std::min(failures, 16));
    for (int i = 0; i < 50; ++i) {
      const auto delay = kubegap::backoff_delay(options, failures, random).count();
      EXPECT_GE(delay, ceiling / 2);
      EXPECT_LE(delay, ceiling);
    }
  }
}

// ClusterWatcher over both resources: one snapshot with both, and status-only events
// publish nothing.
TEST(ClusterWatcher, PublishesOneSnapshotWithBothResourcesAndNoneForHeartbeats) {
  int node_watches = 0;
  FakeApiServer server([&](const std::string& target) -> Reply {
    if (starts_with(target, "/api/v1/nodes?limit=")) return {200, node_list("10", "", {node("n1", "5", "a")})};
    if (starts_with(target, "/apis/policy/v1/poddisruptionbudgets?limit=")) {
      return {
          200,
          R"({"kind":"PodDisruptionBudgetList","apiVersion":"policy/v1","metadata":{"resourceVersion":"11"},"items":[)"
          R"({"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"name":"b","namespace":"ml","resourceVersion":"9"},)"
          R"("spec":{"selector":{"matchLabels":{"app":"x"}},"maxUnavailable":0}}]})"};
    }
    if (starts_with(target, "/apis/trainer.kubeflow.org/")) return {404, R"({"kind":"Status","code":404})"};
    if (starts_with(target, "/api/v1/nodes?watch=1") && ++node_watches == 1) {
      std::string heartbeats;
      for (int i = 0; i < 5; ++i)
        heartbeats += event("MODIFIED", node("n1", std::to_string(20 + i), "a", "t" + std::to_string(i)));
      return {200, heartbeats};  // then the watch ends, and the next resumes after them
    }
    return {200, "", true};
  });
  net::io_context ioc;
  kubegap::Metrics metrics;
  metrics.cluster_view_enabled();
  auto options = fast_options();
  options.publish_delay = 10ms;
  kubegap::ClusterWatcher watcher(ioc, server.endpoint(), metrics, options);
  watcher.start();
  std::thread thread([&] { ioc.run(); });
  struct Join {  // also when an ASSERT returns early
    kubegap::ClusterWatcher& watcher;
    net::io_context& ioc;
    std::thread& thread;
    ~Join() {
      watcher.stop();
      if (thread.joinable()) thread.join();
    }
  } join{watcher, ioc, thread};
  // Four lists (the Trainer runtimes answered 404: not installed), both watches, and the
  // node watch resumed.
  ASSERT_TRUE(server.wait_for(7));
  const auto targets = server.targets();
  EXPECT_NE(std::find(targets.begin(), targets.end(),
                      "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=24&timeoutSeconds=60"),
            targets.end())
      << "the heartbeats were not read";
  ASSERT_TRUE(eventually([&] { return watcher.synced(); }));
  // The heartbeats have been read (the watch resumed after them, above): a publish they
  // caused would have armed the publish timer by now. Wait for the event that any such
  // publish has run, instead of a sleep: everything the io_context runs before a timer
  // that expires after the publish delay, and one more hop.
  ASSERT_TRUE(io_barrier(ioc, 2 * options.publish_delay));
  const auto snapshot = watcher.snapshot();
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->nodes().size(), 1u);
  EXPECT_EQ(snapshot->budget_count(), 1u);
  const std::string rendered = metrics.render();
  EXPECT_NE(rendered.find("kubegap_cluster_view_snapshots_total 1\n"), std::string::npos) << rendered;
}

// SnapshotPublisher: a replaced snapshot that a review still holds is freed by the
// publisher once the review lets go, not by the review.
TEST(SnapshotPublisher, FreesAReplacedSnapshotItselfOnceNobodyElseHoldsIt) {
  net::io_context ioc;
  auto strand = net::make_strand(ioc);
  auto publisher = std::make_shared<kubegap::SnapshotPublisher>(strand, 10ms);
  publisher->publish(std::make_shared<const kubegap::ClusterSnapshot>());
  auto held_by_review = publisher->current();
  std::weak_ptr<const kubegap::ClusterSnapshot> first = held_by_review;
  publisher->publish(std::make_shared<const kubegap::ClusterSnapshot>());
  EXPECT_NE(publisher->current(), held_by_review);
  EXPECT_EQ(publisher->retired(), 1u);
  held_by_review.reset();  // the review ends: it does not free the snapshot
  EXPECT_FALSE(first.expired());
  ioc.run_for(200ms);  // the publisher's sweep does
  EXPECT_TRUE(first.expired());
  EXPECT_EQ(publisher->retired(), 0u);
  publisher->stop();
}

TEST(SnapshotPublisher, FreesAReplacedSnapshotNobodyHoldsAtOnce) {
  net::io_context ioc;
  auto publisher = std::make_shared<kubegap::SnapshotPublisher>(net::make_strand(ioc));
  publisher->publish(std::make_shared<const kubegap::ClusterSnapshot>());
  std::weak_ptr<const kubegap::ClusterSnapshot> first = publisher->current();
  publisher->publish(std::make_shared<const kubegap::ClusterSnapshot>());
  EXPECT_TRUE(first.expired());
  EXPECT_EQ(publisher->retired(), 0u);
}

}  // namespace
}  // namespace kgtest

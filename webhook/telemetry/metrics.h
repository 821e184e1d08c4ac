#pragma once
// Metrics: lock-free counters rendered in the Prometheus text exposition format
// (https://prometheus.io/docs/instrumenting/exposition_formats/).

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "webhook/core/memory_budget.h"

namespace kubegap {

// AuditSummary: one background audit run's figures.
struct AuditSummary {
  std::int64_t finished_unix = 0;
  double duration_seconds = 0;
  std::size_t objects = 0;
  std::size_t api_requests = 0;
  std::map<std::pair<std::string, std::string>, std::size_t> findings;  // (check, namespace) -> count
  bool ok = true;
};

class Metrics {
 public:
  Metrics();

  // record_review: one answered /validate request: its HTTP status, latency and the
  // check ids that produced warnings.
  void record_review(int status, std::uint64_t latency_us, const std::vector<std::string_view>& found);
  void connection_refused() { connections_refused_.fetch_add(1, std::memory_order_relaxed); }
  void health_connection_refused() { health_connections_refused_.fetch_add(1, std::memory_order_relaxed); }
  // connection_evicted: an idle connection closed to keep a slot free for new ones.
  // tls_handshake_failed: a handshake that failed for a reason other than the peer
  // leaving (no client certificate under --client-ca, no common protocol or suite).
  void tls_handshake_failed() { tls_handshakes_failed_.fetch_add(1, std::memory_order_relaxed); }
  void connection_evicted() { connections_evicted_.fetch_add(1, std::memory_order_relaxed); }
  // connection_refused_per_source: closed on accept, its address holding its share.
  // request_timed_out: a request whose header and body were not in by --request-timeout.
  // request_evicted: a request still arriving, closed near the cap for a new connection.
  void connection_refused_per_source() { connections_refused_per_source_.fetch_add(1, std::memory_order_relaxed); }
  void request_timed_out() { requests_timed_out_.fetch_add(1, std::memory_order_relaxed); }
  void request_evicted() { requests_evicted_.fetch_add(1, std::memory_order_relaxed); }
  // request_shed: a request answered 503 because the memory budget was spent.
  void request_shed() { requests_shed_.fetch_add(1, std::memory_order_relaxed); }
  // watch_memory_budget: /metrics shows this budget's capacity and use.
  void watch_memory_budget(std::shared_ptr<const MemoryBudget> budget) { budget_ = std::move(budget); }
  void request_started() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void request_finished() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  // The live cluster view, per resource ("poddisruptionbudgets", "nodes",
  // "clustertrainingruntimes", "trainingruntimes").
  void cluster_synced(std::string_view resource, std::size_t objects);
  void cluster_objects(std::string_view resource, std::size_t objects);
  void cluster_watch_restarted(std::string_view resource);
  void cluster_error(std::string_view resource);
  void cluster_view_enabled() { cluster_view_.store(true); }
  // cluster_published: a new snapshot was built (not when a watch event changed nothing).
  void cluster_published() { cluster_snapshots_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t cluster_snapshots() const { return cluster_snapshots_.load(); }

  // Hot reloads (webhook/server/reloaders.h).
  void tls_certificate_loaded(std::int64_t not_after_unix) { tls_not_after_.store(not_after_unix); }
  void tls_reloaded(bool ok) { (ok ? tls_reloads_ok_ : tls_reloads_failed_).fetch_add(1); }
  void policy_reloaded(bool ok) { (ok ? policy_reloads_ok_ : policy_reloads_failed_).fetch_add(1); }
  std::uint64_t policy_reloads(bool ok) const { return (ok ? policy_reloads_ok_ : policy_reloads_failed_).load(); }
  std::uint64_t tls_reloads(bool ok) const { return (ok ? tls_reloads_ok_ : tls_reloads_failed_).load(); }

  // The background audit (webhook/report/background_audit.h).
  void audit_enabled() { audit_enabled_.store(true); }
  void audit_leader(bool leading) { audit_leader_.store(leading); }
  void audit_finished(const AuditSummary& summary);

  std::uint64_t reviews(int status) const;
  std::uint64_t findings(std::string_view check) const;
  std::string render() const;

 private:
  static constexpr std::array<int, 8> kStatuses = {200, 400, 404, 405, 413, 431, 500, 503};
  // Latency buckets in seconds: reviews take tens of microseconds; the tail shows queueing.
  // 1 and 2.5 s so that a p99 past the 1 s alert threshold (the rules in
  // manifests/helm/kubegap-webhook/files/prometheus-rules.yaml) can be told from 0.5 s.
  static constexpr std::array<double, 14> kBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,    0.025,  0.05,    0.1,    0.5,   1,      2.5};

  std::array<std::atomic<std::uint64_t>, kStatuses.size()> by_status_{};
  std::atomic<std::uint64_t> other_status_{0};
  std::array<std::atomic<std::uint64_t>, kBuckets.size()> bucket_counts_{};  // non-cumulative
  std::atomic<std::uint64_t> latency_count_{0};
  std::atomic<std::uint64_t> latency_sum_us_{0};
  std::vector<std::string> check_ids_;
  std::vector<std::atomic<std::uint64_t>> findings_;
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::uint64_t> connections_refused_{0};
  std::atomic<std::uint64_t> health_connections_refused_{0};
  std::atomic<std::uint64_t> connections_evicted_{0};
  std::atomic<std::uint64_t> connections_refused_per_source_{0};
  std::atomic<std::uint64_t> requests_timed_out_{0};
  std::atomic<std::uint64_t> requests_evicted_{0};
  std::atomic<std::uint64_t> tls_handshakes_failed_{0};
  std::atomic<std::uint64_t> requests_shed_{0};
  std::shared_ptr<const MemoryBudget> budget_;
  std::atomic<std::uint64_t> cluster_snapshots_{0};

  static constexpr std::array<std::string_view, 4> kClusterResources = {"poddisruptionbudgets", "nodes",
                                                                        "clustertrainingruntimes", "trainingruntimes"};
  struct ClusterResourceMetrics {
    std::atomic<std::uint64_t> objects{0};
    std::atomic<std::int64_t> last_sync_unix{0};
    std::atomic<std::uint64_t> watch_restarts{0};
    std::atomic<std::uint64_t> errors{0};
  };
  std::array<ClusterResourceMetrics, kClusterResources.size()> cluster_{};
  std::atomic<bool> cluster_view_{false};
  std::atomic<std::int64_t> tls_not_after_{0};
  std::atomic<std::uint64_t> tls_reloads_ok_{0}, tls_reloads_failed_{0};
  std::atomic<std::uint64_t> policy_reloads_ok_{0}, policy_reloads_failed_{0};
  ClusterResourceMetrics* cluster_resource(std::string_view resource);
  void render_audit(std::ostringstream& out) const;
  void render_cluster_view(std::ostringstream& out) const;
  void render_reloads(std::ostringstream& out) const;
  std::atomic<bool> audit_enabled_{false}, audit_leader_{false};
  mutable std::mutex audit_mutex_;
  AuditSummary audit_last_;  // the last run's figures (guarded by audit_mutex_)
  std::uint64_t audit_runs_ok_ = 0, audit_runs_failed_ = 0;
};

}  // namespace kubegap

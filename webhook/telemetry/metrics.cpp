#include "webhook/telemetry/metrics.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "policies/checks.h"
#include "webhook/core/build_info.h"

namespace kubegap {

Metrics::Metrics() : findings_(check_registry().size()) {
  for (const auto& check : check_registry()) check_ids_.emplace_back(check.id);
}

void Metrics::record_review(int status, std::uint64_t latency_us, const std::vector<std::string_view>& found) {
  const auto it = std::find(kStatuses.begin(), kStatuses.end(), status);
  if (it != kStatuses.end()) {
    by_status_[static_cast<std::size_t>(it - kStatuses.begin())].fetch_add(1, std::memory_order_relaxed);
  } else {
    other_status_.fetch_add(1, std::memory_order_relaxed);
  }
  const double seconds = static_cast<double>(latency_us) / 1e6;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      bucket_counts_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  latency_count_.fetch_add(1, std::memory_order_relaxed);
  latency_sum_us_.fetch_add(latency_us, std::memory_order_relaxed);
  for (const auto& check : found) {
    const auto c = std::find(check_ids_.begin(), check_ids_.end(), check);
    if (c != check_ids_.end()) {
      findings_[static_cast<std::size_t>(c - check_ids_.begin())].fetch_add(1, std::memory_order_relaxed);
    }
  }
}

Metrics::ClusterResourceMetrics* Metrics::cluster_resource(std::string_view resource) {
  const auto it = std::find(kClusterResources.begin(), kClusterResources.end(), resource);
  return it == kClusterResources.end() ? nullptr : &cluster_[static_cast<std::size_t>(it - kClusterResources.begin())];
}

void Metrics::cluster_synced(std::string_view resource, std::size_t objects) {
  if (auto* m = cluster_resource(resource)) {
    m->objects.store(objects);
    // Wall-clock time, for alerting on a stale view ("time() - last_sync > 600").
    m->last_sync_unix.store(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
}

void Metrics::cluster_objects(std::string_view resource, std::size_t objects) {
  if (auto* m = cluster_resource(resource)) m->objects.store(objects);
}

void Metrics::cluster_watch_restarted(std::string_view resource) {
  if (auto* m = cluster_resource(resource)) m->watch_restarts.fetch_add(1);
}

void Metrics::cluster_error(std::string_view resource) {
  if (auto* m = cluster_resource(resource)) m->errors.fetch_add(1);
}

std::uint64_t Metrics::reviews(int status) const {
  const auto it = std::find(kStatuses.begin(), kStatuses.end(), status);
  return it == kStatuses.end() ? other_status_.load()
                               : by_status_[static_cast<std::size_t>(it - kStatuses.begin())].load();
}

std::uint64_t Metrics::findings(std::string_view check) const {
  const auto c = std::find(check_ids_.begin(), check_ids_.end(), check);
  return c == check_ids_.end() ? 0 : findings_[static_cast<std::size_t>(c - check_ids_.begin())].load();
}

void Metrics::audit_finished(const AuditSummary& summary) {
  std::lock_guard lock(audit_mutex_);
  // A failed run keeps the last whole run's findings: a gauge that drops to zero because
  // a list failed would read as "fixed".
  if (summary.ok) {
    audit_last_ = summary;
  } else {
    audit_last_.finished_unix = summary.finished_unix;
    audit_last_.duration_seconds = summary.duration_seconds;
  }
  ++(summary.ok ? audit_runs_ok_ : audit_runs_failed_);
}

void Metrics::render_audit(std::ostringstream& out) const {
  std::lock_guard lock(audit_mutex_);
  out << "# HELP kubegap_audit_leader Whether this replica holds the audit Lease (writes the reports).\n"
         "# TYPE kubegap_audit_leader gauge\n"
         "kubegap_audit_leader "
      << (audit_leader_.load() ? 1 : 0) << "\n"
      << "# HELP kubegap_audit_runs_total Background audit runs, by result (failure: a resource could not "
         "be listed or a report written).\n"
         "# TYPE kubegap_audit_runs_total counter\n"
         "kubegap_audit_runs_total{result=\"success\"} "
      << audit_runs_ok_
      << "\n"
         "kubegap_audit_runs_total{result=\"failure\"} "
      << audit_runs_failed_ << "\n"
      << "# HELP kubegap_audit_last_run_timestamp_seconds When the last background audit run ended (Unix time).\n"
         "# TYPE kubegap_audit_last_run_timestamp_seconds gauge\n"
         "kubegap_audit_last_run_timestamp_seconds "
      << audit_last_.finished_unix << "\n"
      << "# HELP kubegap_audit_duration_seconds How long the last background audit run took.\n"
         "# TYPE kubegap_audit_duration_seconds gauge\n"
         "kubegap_audit_duration_seconds "
      << audit_last_.duration_seconds << "\n"
      << "# HELP kubegap_audit_objects_scanned Objects reported by the last whole background audit run.\n"
         "# TYPE kubegap_audit_objects_scanned gauge\n"
         "kubegap_audit_objects_scanned "
      << audit_last_.objects << "\n"
      << "# HELP kubegap_audit_api_requests Requests the last whole run made to the API server.\n"
         "# TYPE kubegap_audit_api_requests gauge\n"
         "kubegap_audit_api_requests "
      << audit_last_.api_requests << "\n"
      << "# HELP kubegap_audit_findings Findings of the last whole background audit run, by check and "
         "namespace.\n"
         "# TYPE kubegap_audit_findings gauge\n";
  for (const auto& [key, count] : audit_last_.findings) {
    // Check ids and namespace names (DNS labels) need no escaping.
    out << "kubegap_audit_findings{check=\"" << key.first << "\",namespace=\"" << key.second << "\"} " << count << "\n";
  }
}

void Metrics::render_cluster_view(std::ostringstream& out) const {
  const auto each = [&](const char* name, const char* type, const char* help, auto value) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    for (std::size_t i = 0; i < kClusterResources.size(); ++i) {
      out << name << "{resource=\"" << kClusterResources[i] << "\"} " << value(cluster_[i]) << "\n";
    }
  };
  each("kubegap_cluster_view_objects", "gauge", "Objects in the live cluster view.",
       [](const ClusterResourceMetrics& m) { return m.objects.load(); });
  each("kubegap_cluster_view_last_sync_timestamp_seconds", "gauge",
       "When a list or a watch of the resource last completed (Unix time).",
       [](const ClusterResourceMetrics& m) { return m.last_sync_unix.load(); });
  each("kubegap_cluster_view_watch_restarts_total", "counter", "Watches ended and started again.",
       [](const ClusterResourceMetrics& m) { return m.watch_restarts.load(); });
  each("kubegap_cluster_view_errors_total", "counter", "Failed lists, watches and events.",
       [](const ClusterResourceMetrics& m) { return m.errors.load(); });
  out << "# HELP kubegap_cluster_view_snapshots_total Cluster view snapshots published (events that "
         "changed nothing the checks read publish none).\n"
         "# TYPE kubegap_cluster_view_snapshots_total counter\n"
         "kubegap_cluster_view_snapshots_total "
      << cluster_snapshots_.load() << "\n";
}

void Metrics::render_reloads(std::ostringstream& out) const {
  out << "# HELP kubegap_tls_certificate_expiry_timestamp_seconds When the serving certificate expires (Unix time).\n"
         "# TYPE kubegap_tls_certificate_expiry_timestamp_seconds gauge\n"
         "kubegap_tls_certificate_expiry_timestamp_seconds "
      << tls_not_after_.load() << "\n"
      << "# HELP kubegap_tls_reloads_total Serving certificate reloads after its files changed.\n"
         "# TYPE kubegap_tls_reloads_total counter\n"
         "kubegap_tls_reloads_total{result=\"success\"} "
      << tls_reloads_ok_.load()
      << "\n"
         "kubegap_tls_reloads_total{result=\"failure\"} "
      << tls_reloads_failed_.load() << "\n"
      << "# HELP kubegap_policy_reloads_total Policy file reloads after it changed.\n"
         "# TYPE kubegap_policy_reloads_total counter\n"
         "kubegap_policy_reloads_total{result=\"success\"} "
      << policy_reloads_ok_.load()
      << "\n"
         "kubegap_policy_reloads_total{result=\"failure\"} "
      << policy_reloads_failed_.load() << "\n";
}

std::string Metrics::render() const {
  std::ostringstream out;
  out << "# HELP kubegap_reviews_total AdmissionReview requests answered, by HTTP status code.\n"
         "# TYPE kubegap_reviews_total counter\n";
  for (std::size_t i = 0; i < kStatuses.size(); ++i) {
    out << "kubegap_reviews_total{code=\"" << kStatuses[i] << "\"} " << by_status_[i].load() << "\n";
  }
  out << "kubegap_reviews_total{code=\"other\"} " << other_status_.load() << "\n";

  out << "# HELP kubegap_review_duration_seconds Time from a complete request to its answer.\n"
         "# TYPE kubegap_review_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += bucket_counts_[i].load();
    out << "kubegap_review_duration_seconds_bucket{le=\"" << kBuckets[i] << "\"} " << cumulative << "\n";
  }
  const std::uint64_t count = latency_count_.load();
  out << "kubegap_review_duration_seconds_bucket{le=\"+Inf\"} " << count << "\n"
      << "kubegap_review_duration_seconds_sum " << static_cast<double>(latency_sum_us_.load()) / 1e6 << "\n"
      << "kubegap_review_duration_seconds_count " << count << "\n";

  out << "# HELP kubegap_findings_total Warnings issued, by check.\n"
         "# TYPE kubegap_findings_total counter\n";
  for (std::size_t i = 0; i < check_ids_.size(); ++i) {
    out << "kubegap_findings_total{check=\"" << check_ids_[i] << "\"} " << findings_[i].load() << "\n";
  }
  out << "# HELP kubegap_in_flight_requests Requests being handled now.\n"
         "# TYPE kubegap_in_flight_requests gauge\n"
         "kubegap_in_flight_requests "
      << in_flight_.load() << "\n"
      << "# HELP kubegap_connections_refused_total Connections closed on accept: over the connection cap.\n"
         "# TYPE kubegap_connections_refused_total counter\n"
         "kubegap_connections_refused_total "
      << connections_refused_.load() << "\n"
      << "# HELP kubegap_health_connections_refused_total Connections to the health listener closed on "
         "accept: over its cap.\n"
         "# TYPE kubegap_health_connections_refused_total counter\n"
         "kubegap_health_connections_refused_total "
      << health_connections_refused_.load() << "\n"
      << "# HELP kubegap_connections_evicted_total Connections without a request in progress (silent since "
         "accept, or idle) closed near the connection cap to take a new one.\n"
         "# TYPE kubegap_connections_evicted_total counter\n"
         "kubegap_connections_evicted_total "
      << connections_evicted_.load() << "\n"
      << "# HELP kubegap_connections_refused_per_source_total Connections closed on accept: their source "
         "address already held --max-connections-per-source.\n"
         "# TYPE kubegap_connections_refused_per_source_total counter\n"
         "kubegap_connections_refused_per_source_total "
      << connections_refused_per_source_.load() << "\n"
      << "# HELP kubegap_requests_timed_out_total Requests whose header and body were not in by "
         "--request-timeout; the connection was closed.\n"
         "# TYPE kubegap_requests_timed_out_total counter\n"
         "kubegap_requests_timed_out_total "
      << requests_timed_out_.load() << "\n"
      << "# HELP kubegap_requests_evicted_total Requests still arriving (after a second, or the oldest "
         "at the cap), closed near the connection cap to take a new connection.\n"
         "# TYPE kubegap_requests_evicted_total counter\n"
         "kubegap_requests_evicted_total "
      << requests_evicted_.load() << "\n"
      << "# HELP kubegap_tls_handshake_failures_total TLS handshakes that failed other than by the client "
         "leaving (e.g. no client certificate under --client-ca).\n"
         "# TYPE kubegap_tls_handshake_failures_total counter\n"
         "kubegap_tls_handshake_failures_total "
      << tls_handshakes_failed_.load() << "\n"
      << "# HELP kubegap_requests_shed_total Requests answered 503 (Retry-After) because the memory budget "
         "for requests in flight was spent.\n"
         "# TYPE kubegap_requests_shed_total counter\n"
         "kubegap_requests_shed_total "
      << requests_shed_.load() << "\n";
  if (budget_) {
    out << "# HELP kubegap_request_memory_budget_bytes Memory that requests in flight may be charged.\n"
           "# TYPE kubegap_request_memory_budget_bytes gauge\n"
           "kubegap_request_memory_budget_bytes "
        << budget_->capacity() << "\n"
        << "# HELP kubegap_request_memory_in_use_bytes Memory charged to requests in flight now.\n"
           "# TYPE kubegap_request_memory_in_use_bytes gauge\n"
           "kubegap_request_memory_in_use_bytes "
        << budget_->in_use() << "\n";
  }
  if (cluster_view_.load()) render_cluster_view(out);
  render_reloads(out);
  if (audit_enabled_.load()) render_audit(out);
  out << "# HELP kubegap_build_info Build information.\n"
         "# TYPE kubegap_build_info gauge\n"
         "kubegap_build_info{version=\""
      << kVersion << "\"} 1\n";
  return out.str();
}

}  // namespace kubegap

#pragma once
// BackgroundAudit: `serve --audit-interval`: the scan of what already runs, on a timer, off
// the review path (threads of its own, each with its own event loop and connections, so a
// review never waits for it). Its results go to metrics (every replica shows whether it
// leads) and, from the one replica holding the Lease, to PolicyReports: one per namespace,
// rewritten in place each run, deleted when nothing of theirs is left.
//
//   BackgroundAudit audit(endpoint, policies, metrics, options);
//   audit.start();   ...   audit.stop();   // joins; gives the Lease up so another replica takes over at once
//
// The decisions are pure and tested without sockets: LeaderElector (client-go's
// leaderelection rules) and the lease and report bodies.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "webhook/cluster_scan.h"
#include "webhook/kube_config.h"
#include "webhook/metrics.h"
#include "webhook/policy_report.h"
#include "webhook/review_handler.h"

namespace kubegap {

// LeaseRecord: what a coordination.k8s.io/v1 Lease says.
struct LeaseRecord {
  std::string holder;  // spec.holderIdentity; empty: released
  std::int64_t duration_seconds = 0;
  std::string renew_time;  // spec.renewTime (MicroTime text)
  std::string acquire_time;
  std::int64_t transitions = 0;
  std::string resource_version;
};

// parse_lease: nullopt when the text is not a Lease.
std::optional<LeaseRecord> parse_lease(std::string_view json);

// lease_body: a Lease `name` in `namespace_name` held by `record.holder` (resourceVersion
// set when it is not empty: an update that fails on a conflict).
std::string lease_body(const std::string& name, const std::string& namespace_name, const LeaseRecord& record);

// micro_time: a MicroTime ("2026-12-04T03:14:56.123456Z") for `t`.
std::string micro_time(std::chrono::system_clock::time_point t);

// LeaderElector: client-go's rules. Another holder's lease counts as expired only when
// its record has not changed for its duration by OUR clock (the renewTime it writes is
// never compared with our clock, so skew between nodes does not matter). A released
// lease (no holder) is taken at once.
class LeaderElector {
 public:
  enum class Action {
    kCreate,  // no Lease yet
    kUpdate,  // ours to renew, released, or expired: write it with our name
    kWait,    // someone else holds it
  };
  LeaderElector(std::string identity, std::chrono::seconds duration)
      : identity_(std::move(identity)), duration_(duration) {}

  // decide: what to do about `current` (nullopt: there is no Lease) at `now`.
  Action decide(const std::optional<LeaseRecord>& current, std::chrono::steady_clock::time_point now);
  // next_record: the record to write for kCreate/kUpdate.
  LeaseRecord next_record(const std::optional<LeaseRecord>& current, std::chrono::system_clock::time_point now) const;
  const std::string& identity() const { return identity_; }
  std::chrono::seconds duration() const { return duration_; }

 private:
  std::string identity_;
  std::chrono::seconds duration_;
  std::optional<LeaseRecord> observed_;
  std::chrono::steady_clock::time_point observed_at_{};
};

struct AuditOptions {
  std::chrono::seconds interval{600};
  bool write_reports = true;
  ReportFlavour flavour = ReportFlavour::kWgPolicy;
  std::string lease_namespace = "kubegap-system";
  std::string lease_name = "kubegap-webhook-audit";
  std::string identity;  // default: $POD_NAME, else hostname_pid
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_period{5};
  ScanOptions scan;
};

// count_findings: the findings of `report` by (check, namespace).
std::map<std::pair<std::string, std::string>, std::size_t> count_findings(const CheckReport& report);

class BackgroundAudit {
 public:
  BackgroundAudit(KubeEndpoint endpoint, const PolicyStore& policies, Metrics& metrics, AuditOptions options);
  ~BackgroundAudit();
  BackgroundAudit(const BackgroundAudit&) = delete;
  BackgroundAudit& operator=(const BackgroundAudit&) = delete;

  void start();
  // stop: ends both threads (an audit run in progress finishes its current request) and
  // releases the Lease if held.
  void stop();
  bool leader() const;

 private:
  void lease_loop();
  void audit_loop();
  bool sleep_for(std::chrono::steady_clock::duration d);  // false when stopped
  void run_once();
  void write_reports(const CheckReport& report, ScanStats& stats);

  KubeEndpoint endpoint_;
  const PolicyStore& policies_;
  Metrics& metrics_;
  AuditOptions options_;
  LeaderElector elector_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool leader_ = false;
  std::optional<LeaseRecord> held_;  // the record we last wrote (to release it)
  std::thread lease_thread_, audit_thread_;
};

}  // namespace kubegap

#pragma once
// BackgroundAudit: `serve --audit-interval`: the scan of what already runs, on a timer, off
// the review path. Two coroutines on the control loop (the one-thread loop of the cluster
// view and the reloaders; reviews never run there), written like the Reflector: the lease
// loop renews a coordination.k8s.io Lease, the audit loop scans while this replica holds
// it. Results go to metrics (every replica shows whether it leads) and, from the one
// replica holding the Lease, to PolicyReports: one per namespace, rewritten in place each
// run, deleted when nothing of theirs is left.
//
//   BackgroundAudit audit(control, endpoint, policies, metrics, options);
//   audit.start();
//   ...
//   audit.stop();                                // the run ends at its next request, the Lease is given up
//   co_await audit.async_stop(use_awaitable);    // ... and this resumes once it has
//
// The decisions are pure and tested without sockets: LeaderElector (client-go's
// leaderelection rules), the lease and report bodies, and weigh_scan_errors; the
// coroutines are tested against scripted API answers (a KubeRequester).

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "webhook/core/errors.h"
#include "webhook/core/policy_store.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/report/cluster_scan.h"
#include "webhook/report/policy_report.h"
#include "webhook/telemetry/metrics.h"

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

// ScanErrorWeight: a scan's errors as the audit weighs them, by HTTP status.
struct ScanErrorWeight {
  // forbidden: resources RBAC forbids (403). They stay forbidden run after run, so
  // leaving them out does not make reports flap: logged, and the reports still written.
  std::vector<InputProblem> forbidden;
  // transient: the first other error (a timeout, a 500, a page that is not a list, an
  // object that does not evaluate, a cancelled scan). Reports are written only from a
  // whole scan: a resource that failed to list would drop its objects' results, and bring
  // them back next run.
  std::optional<InputProblem> transient;
};

// weigh_scan_errors: `result`'s errors by their status (ScanResult::error_status), never
// by their text.
ScanErrorWeight weigh_scan_errors(const ScanResult& result);

class BackgroundAudit {
 public:
  // BackgroundAudit: runs on `control`, which must be a loop run by one thread. Each
  // request to `endpoint`'s API server makes its TLS context anew (a rotated CA is picked
  // up); requests are a few a minute, plus the pages of a run.
  BackgroundAudit(boost::asio::io_context& control, KubeEndpoint endpoint, const PolicyStore& policies,
                  Metrics& metrics, AuditOptions options);
  // BackgroundAudit: every request through `send` (tests script the API server's answers).
  BackgroundAudit(boost::asio::io_context& control, KubeRequester send, const PolicyStore& policies, Metrics& metrics,
                  AuditOptions options);
  // ~BackgroundAudit: stop() without waiting. The coroutines own what they use, so the
  // object may go before they end; `policies` and `metrics` must live until they have
  // (call stop() and let `done` run, or stop the loop).
  ~BackgroundAudit();
  BackgroundAudit(const BackgroundAudit&) = delete;
  BackgroundAudit& operator=(const BackgroundAudit&) = delete;

  // start: the lease and audit coroutines, on the control loop. No thread of its own.
  void start();
  // stop: from any thread; returns at once. The Lease is no longer renewed, a run in
  // progress ends before its next request (no report is written from it), and once it
  // has, the Lease is given up (client-go's ReleaseOnCancel: another replica takes over at
  // once instead of after the lease duration). Then `done` runs on the control loop, which
  // must keep running until it has; at once there when the audit has already stopped or
  // never started.
  void stop(std::function<void()> done = {});
  // async_stop: stop() as an Asio operation, complete when `done` would run:
  //   co_await audit.async_stop(boost::asio::use_awaitable);
  template <typename CompletionToken>
  auto async_stop(CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void()>(
        [this](auto handler) {
          // std::function wants a copy; a completion handler is move-only: shared.
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          // Its executor keeps work until the handler has run (Asio's rule for operations).
          auto work = boost::asio::prefer(boost::asio::get_associated_executor(*shared),
                                          boost::asio::execution::outstanding_work.tracked);
          stop([shared, work] { boost::asio::post(std::move(*shared)); });
        },
        token);
  }
  // leader: this replica holds the Lease (any thread).
  bool leader() const;

 private:
  struct Impl;
  // Shared with the coroutines, which may outlive this object.
  std::shared_ptr<Impl> impl_;
};

}  // namespace kubegap

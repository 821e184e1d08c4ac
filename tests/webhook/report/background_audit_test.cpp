// The background audit without sockets: leader election by client-go's rules on our own
// clock, the Lease bodies, the audit metrics, how a scan's errors are weighed (by status),
// and the coroutines themselves on a loop run by the test's thread against scripted API
// answers: a run, a stop during a run and while idle, a forbidden resource, a Lease held
// by another replica. tests/e2e/test_audit.py runs two replicas against a real
// kube-apiserver.
#include "webhook/report/background_audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "policies/policy.h"
#include "webhook/telemetry/metrics.h"

namespace kubegap {
namespace {

namespace net = boost::asio;
using Action = LeaderElector::Action;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

LeaseRecord held_by(const std::string& holder, const std::string& renew, const std::string& version) {
  LeaseRecord r;
  r.holder = holder;
  r.duration_seconds = 15;
  r.renew_time = renew;
  r.resource_version = version;
  return r;
}

TEST(LeaderElector, CreatesAMissingLease) {
  LeaderElector elector("me", 15s);
  EXPECT_EQ(elector.decide(std::nullopt, std::chrono::steady_clock::now()), Action::kCreate);
}

TEST(LeaderElector, RenewsItsOwnAndTakesAReleasedOneAtOnce) {
  LeaderElector elector("me", 15s);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(elector.decide(held_by("me", "r1", "1"), t0), Action::kUpdate);
  EXPECT_EQ(elector.decide(held_by("", "r1", "2"), t0 + 1s), Action::kUpdate);
}

TEST(LeaderElector, WaitsWhileTheOtherHolderKeepsRenewing) {
  LeaderElector elector("me", 15s);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(elector.decide(held_by("other", "r1", "1"), t0), Action::kWait);
  // Renewed every 10 s: never 15 s unchanged by our clock.
  EXPECT_EQ(elector.decide(held_by("other", "r2", "2"), t0 + 10s), Action::kWait);
  EXPECT_EQ(elector.decide(held_by("other", "r3", "3"), t0 + 20s), Action::kWait);
  EXPECT_EQ(elector.decide(held_by("other", "r3", "3"), t0 + 30s), Action::kWait);  // 10 s unchanged
}

TEST(LeaderElector, TakesOverARecordUnchangedForItsDurationByOurClock) {
  LeaderElector elector("me", 15s);
  const auto t0 = std::chrono::steady_clock::now();
  // The renewTime text is never compared with our clock: a holder whose clock runs a day
  // behind is still alive as long as its record keeps changing.
  EXPECT_EQ(elector.decide(held_by("other", "2020-01-01T00:00:00.000000Z", "1"), t0), Action::kWait);
  EXPECT_EQ(elector.decide(held_by("other", "2020-01-01T00:00:00.000000Z", "1"), t0 + 14s), Action::kWait);
  EXPECT_EQ(elector.decide(held_by("other", "2020-01-01T00:00:00.000000Z", "1"), t0 + 15s), Action::kUpdate);
}

TEST(LeaderElector, NextRecordKeepsAcquireTimeWhenRenewingAndCountsTransitions) {
  LeaderElector elector("me", 15s);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1764806400));
  LeaseRecord mine = held_by("me", "old", "7");
  mine.acquire_time = "2025-12-04T00:00:00.000000Z";
  mine.transitions = 3;
  const LeaseRecord renewed = elector.next_record(mine, now);
  EXPECT_EQ(renewed.acquire_time, "2025-12-04T00:00:00.000000Z");
  EXPECT_EQ(renewed.transitions, 3);
  EXPECT_EQ(renewed.resource_version, "7");
  EXPECT_EQ(renewed.renew_time, "2025-12-04T00:00:00.000000Z");
  const LeaseRecord taken = elector.next_record(held_by("other", "x", "8"), now);
  EXPECT_EQ(taken.holder, "me");
  EXPECT_EQ(taken.transitions, 1);
  EXPECT_EQ(taken.acquire_time, taken.renew_time);
}

TEST(Lease, BodyRoundTripsThroughParse) {
  LeaseRecord r = held_by("pod-a", "2026-12-04T03:14:56.123456Z", "42");
  r.acquire_time = "2026-12-04T03:00:00.000000Z";
  r.transitions = 2;
  const auto parsed = parse_lease(lease_body("kubegap-webhook-audit", "kubegap-system", r));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->holder, "pod-a");
  EXPECT_EQ(parsed->duration_seconds, 15);
  EXPECT_EQ(parsed->renew_time, r.renew_time);
  EXPECT_EQ(parsed->acquire_time, r.acquire_time);
  EXPECT_EQ(parsed->transitions, 2);
  EXPECT_EQ(parsed->resource_version, "42");
  EXPECT_FALSE(parse_lease(R"({"kind":"Status","code":404})").has_value());
  EXPECT_FALSE(parse_lease("garbage").has_value());
}

TEST(Lease, MicroTimeIsRfc3339WithMicroseconds) {
  const auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1764817496123456LL));
  EXPECT_EQ(micro_time(t), "2025-12-04T03:04:56.123456Z");
}

TEST(AuditMetrics, FindingsByCheckAndNamespaceAndAFailedRunKeepsTheLastWholeOne) {
  Metrics metrics;
  EXPECT_EQ(metrics.render().find("kubegap_audit_"), std::string::npos) << "not shown while the audit is off";
  metrics.audit_enabled();
  metrics.audit_leader(true);
  AuditSummary whole;
  whole.ok = true;
  whole.objects = 12;
  whole.finished_unix = 100;
  whole.findings[{"checkpoint-volume", "ml"}] = 3;
  metrics.audit_finished(whole);
  AuditSummary failed;
  failed.ok = false;
  failed.finished_unix = 200;
  metrics.audit_finished(failed);
  const std::string text = metrics.render();
  EXPECT_NE(text.find("kubegap_audit_findings{check=\"checkpoint-volume\",namespace=\"ml\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kubegap_audit_objects_scanned 12\n"), std::string::npos);
  EXPECT_NE(text.find("kubegap_audit_last_run_timestamp_seconds 200\n"), std::string::npos);
  EXPECT_NE(text.find("kubegap_audit_runs_total{result=\"failure\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("kubegap_audit_runs_total{result=\"success\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("kubegap_audit_leader 1\n"), std::string::npos);
}

TEST(AuditMetrics, CountFindingsCountsGapsOnly) {
  CheckReport report;
  CheckedObject o;
  o.namespace_name = "ml";
  o.findings.push_back({"zone-spread", Outcome::kFinding, "", "", {}, {}, false, ""});
  o.findings.push_back({"disruption-budget", Outcome::kNotEvaluated, "", "", {}, {}, false, ""});
  report.objects.push_back(o);
  report.objects.push_back(o);
  const auto counts = count_findings(report);
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts.at({"zone-spread", "ml"}), 2u);
}

TEST(WeighScanErrors, AForbiddenResourceIsKnownByItsStatusWhateverItsMessageSays) {
  ScanResult result;
  result.report.errors = {{"/apis/kubeflow.org/v1/pytorchjobs", 0, "pytorchjobs is forbidden"},
                          {"/api/v1/pods", 0, "HTTP 403: looks forbidden, is a 500"},
                          {"/apis/batch/v1/jobs", 0, "no words about access at all"}};
  result.error_status = {403, 500, 403};
  const ScanErrorWeight weight = weigh_scan_errors(result);
  ASSERT_EQ(weight.forbidden.size(), 2u);
  EXPECT_EQ(weight.forbidden[0].file, "/apis/kubeflow.org/v1/pytorchjobs");
  EXPECT_EQ(weight.forbidden[1].file, "/apis/batch/v1/jobs");
  ASSERT_TRUE(weight.transient.has_value());
  EXPECT_EQ(weight.transient->file, "/api/v1/pods");
}

TEST(WeighScanErrors, ErrorsWithoutAStatusAreTransient) {
  ScanResult result;
  result.report.errors = {{"/api/v1/pods", 0, "scan cancelled"}, {"/api/v1/pods/x", 0, "not an object"}};
  result.error_status = {0, 0};
  const ScanErrorWeight weight = weigh_scan_errors(result);
  EXPECT_TRUE(weight.forbidden.empty());
  ASSERT_TRUE(weight.transient.has_value());
  EXPECT_EQ(weight.transient->message, "scan cancelled");
  EXPECT_FALSE(weigh_scan_errors(ScanResult{}).transient.has_value());
}

// A GPU pod in "ml" that keeps checkpoints in an emptyDir: one PolicyReport with a fail.
const char* const kTrainingPod = R"({"metadata":{"name":"trainer","namespace":"ml","uid":"u1"},
  "spec":{"containers":[{"name":"t","image":"pytorch","command":["torchrun","train.py"],
  "resources":{"limits":{"nvidia.com/gpu":"8"}},"volumeMounts":[{"name":"ckpt","mountPath":"/checkpoints"}]}],
  "volumes":[{"name":"ckpt","emptyDir":{}}]}})";

const std::string kLease = "/apis/coordination.k8s.io/v1/namespaces/kubegap-system/leases/kubegap-webhook-audit";
const std::string kReports = "/apis/wgpolicyk8s.io/v1alpha2/";

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// ScriptedApi: the API server as the audit sees it, without sockets: a Lease (absent, or
// held by another replica that keeps renewing it), discovery with Pods only, empty PDB and
// Node lists, a Pods list of one training pod (or of endless pages, or an error status),
// PolicyReports that do not exist yet. Each answer comes after a short timer, as over a
// network. Records every request ("GET /api/v1"), the Lease bodies written, and the
// threads and thread counts the requests saw.
class ScriptedApi {
 public:
  KubeRequester requester() {
    return [this](verb v, std::string target, std::string body, std::size_t) {
      return answer(v, std::move(target), std::move(body));
    };
  }

  std::chrono::milliseconds delay{1};
  int pods_status = 200;
  std::string pods_message;
  bool endless_pods = false;  // every Pods page has a continue token
  std::string other_holder;   // set: another replica holds the Lease and renews it
  std::function<void(const std::string&)> on_request;

  std::vector<std::string> requests;
  std::vector<LeaseRecord> lease_writes;
  std::set<std::thread::id> threads;
  std::set<std::size_t> thread_counts;

  std::size_t count(const std::string& prefix) const {
    return static_cast<std::size_t>(
        std::count_if(requests.begin(), requests.end(), [&](const std::string& r) { return starts_with(r, prefix); }));
  }

 private:
  net::awaitable<KubeResponse> answer(verb v, std::string target, std::string body) {
    requests.push_back(std::string(boost::beast::http::to_string(v)) + " " + target);
    threads.insert(std::this_thread::get_id());
    thread_counts.insert(thread_count());
    if (on_request) on_request(requests.back());
    net::steady_timer timer(co_await net::this_coro::executor);
    timer.expires_after(delay);
    co_await timer.async_wait(net::use_awaitable);
    co_return reply(v, target, body);
  }

  static KubeResponse ok(std::string body, int status = 200) { return {status, std::move(body), {}}; }
  static KubeResponse status(int code, const std::string& message) {
    return {code,
            R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + message + R"(","code":)" +
                std::to_string(code) + "}",
            {}};
  }

  KubeResponse reply(verb v, const std::string& target, const std::string& body) {
    if (starts_with(target, "/apis/coordination.k8s.io/")) return lease(v, body);
    if (v != verb::get) return ok(body, v == verb::post ? 201 : 200);  // report writes
    if (starts_with(target, "/apis/policy/v1/poddisruptionbudgets?")) {
      return ok(R"({"kind":"PodDisruptionBudgetList","metadata":{},"items":[]})");
    }
    if (starts_with(target, "/api/v1/nodes?")) return ok(R"({"kind":"NodeList","metadata":{},"items":[]})");
    if (target == "/api/v1") {
      return ok(R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
        {"name":"pods","kind":"Pod","namespaced":true,"verbs":["get","list","watch"]}]})");
    }
    if (target == "/apis") return ok(R"({"kind":"APIGroupList","groups":[]})");
    if (starts_with(target, "/api/v1/pods?")) {
      if (pods_status != 200) return status(pods_status, pods_message);
      const std::string token = endless_pods ? "page-" + std::to_string(++pages_) : "";
      return ok(R"({"kind":"PodList","metadata":{"continue":")" + token + R"("},"items":[)" + kTrainingPod + "]}");
    }
    if (target.find("?labelSelector=") != std::string::npos) return ok(R"({"items":[]})");
    return status(404, "not found");
  }

  KubeResponse lease(verb v, const std::string& body) {
    if (v == verb::get) {
      if (!other_holder.empty()) {  // the other replica renewed since we last looked
        LeaseRecord r;
        r.holder = other_holder;
        r.duration_seconds = 15;
        r.renew_time = "2026-12-04T00:00:0" + std::to_string(version_ % 10) + ".000000Z";
        r.resource_version = std::to_string(++version_);
        return ok(lease_body("kubegap-webhook-audit", "kubegap-system", r));
      }
      return stored_ ? ok(*stored_) : status(404, "leases.coordination.k8s.io \"kubegap-webhook-audit\" not found");
    }
    std::optional<LeaseRecord> record = parse_lease(body);
    if (!record) return status(400, "not a Lease");
    lease_writes.push_back(*record);
    record->resource_version = std::to_string(++version_);
    stored_ = lease_body("kubegap-webhook-audit", "kubegap-system", *record);
    return ok(*stored_, v == verb::post ? 201 : 200);
  }

  std::optional<std::string> stored_;
  int version_ = 0;
  int pages_ = 0;
};

AuditOptions fast_options() {
  AuditOptions options;
  options.identity = "replica-a";
  options.renew_period = 1s;
  return options;  // interval 600 s: one run, then idle until stopped
}

// run_until_stopped: runs `control` on this thread until the audit's stop callback has
// run and nothing is left to do; how long that took.
std::chrono::steady_clock::duration run_until_stopped(net::io_context& control, const bool& stopped) {
  const auto start = std::chrono::steady_clock::now();
  control.run_for(20s);
  EXPECT_TRUE(stopped) << "the audit did not stop";
  return std::chrono::steady_clock::now() - start;
}

// stop_when: a coroutine on `control` that polls `ready` every 5 ms, then stops the audit
// and waits for it (async_stop).
void stop_when(net::io_context& control, BackgroundAudit& audit, std::function<bool()> ready, bool& stopped,
               std::chrono::steady_clock::time_point& stop_called) {
  net::co_spawn(
      control,
      [&audit, &stopped, &stop_called, ready = std::move(ready)]() -> net::awaitable<void> {
        net::steady_timer timer(co_await net::this_coro::executor);
        while (!ready()) {
          timer.expires_after(5ms);
          co_await timer.async_wait(net::use_awaitable);
        }
        stop_called = std::chrono::steady_clock::now();
        co_await audit.async_stop(net::use_awaitable);
        stopped = true;
      },
      net::detached);
}

TEST(BackgroundAuditRun, LeadsScansWritesReportsOnTheCallersLoopAndReleasesTheLeaseWhenStoppedIdle) {
  net::io_context control(1);
  ScriptedApi api;
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  const std::size_t threads_before = thread_count();
  audit.start();
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  // Stopped while idle: after the run's last request, waiting for the 600 s interval.
  const auto ran_once = [&] {
    return metrics.render().find("kubegap_audit_runs_total{result=\"success\"} 1") != std::string::npos;
  };
  stop_when(control, audit, ran_once, stopped, stop_called);
  run_until_stopped(control, stopped);
  EXPECT_LT(std::chrono::steady_clock::now() - stop_called, 2s) << "stop() waited for the interval";

  // Every request ran on this thread, and no thread was started for the audit.
  EXPECT_EQ(api.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(api.thread_counts, std::set<std::size_t>{threads_before});
  // The Lease created, the scan, the report created in place of a missing one.
  ASSERT_GE(api.requests.size(), 2u);
  EXPECT_EQ(api.requests[0], "GET " + kLease);
  EXPECT_EQ(api.requests[1], "POST /apis/coordination.k8s.io/v1/namespaces/kubegap-system/leases");
  EXPECT_EQ(api.count("GET /api/v1/pods?limit=250"), 1u);
  EXPECT_EQ(api.count("GET " + kReports + "namespaces/ml/policyreports/kubegap"), 1u);
  EXPECT_EQ(api.count("POST " + kReports + "namespaces/ml/policyreports"), 1u);
  EXPECT_EQ(api.count("GET " + kReports + "clusterpolicyreports?labelSelector="), 1u);
  // Released last: no holder, one second (client-go's ReleaseOnCancel).
  EXPECT_EQ(api.requests.back(), "PUT " + kLease);
  ASSERT_FALSE(api.lease_writes.empty());
  EXPECT_EQ(api.lease_writes.front().holder, "replica-a");
  EXPECT_EQ(api.lease_writes.back().holder, "");
  EXPECT_EQ(api.lease_writes.back().duration_seconds, 1);
  EXPECT_FALSE(audit.leader());
  const std::string text = metrics.render();
  EXPECT_NE(text.find("kubegap_audit_leader 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kubegap_audit_findings{check=\"checkpoint-volume\",namespace=\"ml\"} 1\n"), std::string::npos)
      << text;
}

TEST(BackgroundAuditRun, StopDuringARunEndsItBeforeItsNextRequestAndThenReleasesTheLease) {
  net::io_context control(1);
  ScriptedApi api;
  api.endless_pods = true;  // the run would never end by itself
  api.delay = 5ms;
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  api.on_request = [&](const std::string& request) {
    if (starts_with(request, "GET /api/v1/pods?") && api.count("GET /api/v1/pods?") == 3) {
      stop_called = std::chrono::steady_clock::now();
      audit.stop([&] { stopped = true; });
    }
  };
  audit.start();
  run_until_stopped(control, stopped);
  EXPECT_LT(std::chrono::steady_clock::now() - stop_called, 2s);
  // The page in flight was answered; no further page was asked for, no report written.
  EXPECT_EQ(api.count("GET /api/v1/pods?"), 3u);
  EXPECT_EQ(api.count("GET " + kReports), 0u);
  EXPECT_EQ(api.count("POST " + kReports), 0u);
  EXPECT_EQ(api.requests.back(), "PUT " + kLease);
  EXPECT_EQ(api.lease_writes.back().holder, "");
  const std::string text = metrics.render();
  EXPECT_NE(text.find("kubegap_audit_runs_total{result=\"failure\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kubegap_audit_runs_total{result=\"success\"} 0\n"), std::string::npos) << text;
}

TEST(BackgroundAuditRun, AForbiddenListIsLeftOutByItsStatusAndTheReportsAreStillWritten) {
  net::io_context control(1);
  ScriptedApi api;
  api.pods_status = 403;
  api.pods_message = "the words of this message do not matter";
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  stop_when(
      control, audit, [&] { return api.count("GET " + kReports + "clusterpolicyreports?") == 1; }, stopped,
      stop_called);
  audit.start();
  run_until_stopped(control, stopped);
  // Nothing evaluated, so no report to write, but the stale ones were looked for: the run
  // counted as whole.
  EXPECT_EQ(api.count("GET " + kReports + "policyreports?labelSelector="), 1u);
  EXPECT_NE(metrics.render().find("kubegap_audit_runs_total{result=\"success\"} 1\n"), std::string::npos);
}

TEST(BackgroundAuditRun, AnotherStatusIsTransientEvenWhenItsMessageSaysForbidden) {
  net::io_context control(1);
  ScriptedApi api;
  api.pods_status = 500;
  api.pods_message = "HTTP 403: forbidden";
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  stop_when(
      control, audit, [&] { return metrics.render().find("result=\"failure\"} 1") != std::string::npos; }, stopped,
      stop_called);
  audit.start();
  run_until_stopped(control, stopped);
  EXPECT_EQ(api.count("GET " + kReports), 0u) << "a partial scan wrote reports";
}

TEST(BackgroundAuditRun, WhileAnotherReplicaRenewsTheLeaseItNeitherScansNorReleases) {
  net::io_context control(1);
  ScriptedApi api;
  api.other_holder = "replica-b";
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  stop_when(
      control, audit, [&] { return api.count("GET " + kLease) >= 2; }, stopped, stop_called);
  audit.start();
  run_until_stopped(control, stopped);
  EXPECT_EQ(api.requests.size(), api.count("GET " + kLease)) << "only the Lease was read";
  EXPECT_TRUE(api.lease_writes.empty());
  EXPECT_FALSE(audit.leader());
}

TEST(BackgroundAuditRun, StopBeforeStartRunsItsCallbackAtOnce) {
  net::io_context control(1);
  ScriptedApi api;
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, api.requester(), policies, metrics, fast_options());
  bool stopped = false;
  audit.stop([&] { stopped = true; });
  audit.start();  // after stop(): does nothing
  run_until_stopped(control, stopped);
  EXPECT_TRUE(api.requests.empty());
}

TEST(BackgroundAuditRun, ACaThatNoLongerLoadsFailsItsRequestsNotTheLoop) {
  // The real requester makes each request's TLS context anew; one that cannot be made is
  // that request's error (the Lease cannot be read), never an exception on the loop.
  net::io_context control(1);
  KubeEndpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = "9";
  endpoint.ca_pem = "not a certificate";
  endpoint.source = "test";
  Metrics metrics;
  PolicyStore policies(default_policy());
  BackgroundAudit audit(control, endpoint, policies, metrics, fast_options());
  audit.start();
  bool stopped = false;
  std::chrono::steady_clock::time_point stop_called;
  stop_when(
      control, audit, [] { return true; }, stopped, stop_called);
  run_until_stopped(control, stopped);
  EXPECT_FALSE(audit.leader());
}

}  // namespace
}  // namespace kubegap

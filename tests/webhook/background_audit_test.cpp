// The background audit's decisions, without sockets: leader election by client-go's rules
// on our own clock, the Lease bodies, and the audit metrics. tests/e2e/test_audit.py runs
// two replicas against a real kube-apiserver.
#include "webhook/background_audit.h"

#include <gtest/gtest.h>

#include "policies/policy.h"
#include "webhook/metrics.h"

namespace kubegap {
namespace {

using Action = LeaderElector::Action;
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
  EXPECT_NE(text.find("kubegap_audit_findings{check=\"checkpoint-volume\",namespace=\"ml\"} 3\n"), std::string::npos) << text;
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

}  // namespace
}  // namespace kubegap

#pragma once
// PolicyReports from a scan: the output convention that Kyverno, Kubewarden, Trivy Operator
// and Policy Reporter's UI share (wgpolicyk8s.io/v1alpha2 PolicyReport and
// ClusterPolicyReport; openreports.io/v1alpha1, its successor, has the same shape).
//
//   auto reports = build_policy_reports(scan_report, ReportFlavour::kWgPolicy, now_seconds);
//   for (const auto& r : reports) write(r.namespace_name, r.json);   // one per namespace
//
// One result per (evaluated object, check): `fail` for a finding, `skip` when the check
// was exempted or could not judge, `pass` otherwise; `properties.cases` carries the case
// ids. Objects none of whose parts were evaluated (not training pods) get no results.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/report/offline_check.h"

namespace kubegap {

enum class ReportFlavour {
  kWgPolicy,     // wgpolicyk8s.io/v1alpha2
  kOpenReports,  // openreports.io/v1alpha1
};

// kReportName: the name of every report kubegap writes (one per namespace, and one
// ClusterPolicyReport); the managed-by label marks them as ours.
inline constexpr const char* kReportName = "kubegap";
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedBy = "kubegap-webhook";

struct PolicyReportObject {
  std::string namespace_name;  // empty: the ClusterPolicyReport
  std::string api_version;     // "wgpolicyk8s.io/v1alpha2"
  std::string kind;            // "PolicyReport" or "ClusterPolicyReport"
  std::string json;            // the whole object, ready to create or update
  std::size_t pass = 0, fail = 0, skip = 0;
};

// report_api_version: "wgpolicyk8s.io/v1alpha2" or "openreports.io/v1alpha1".
std::string_view report_api_version(ReportFlavour flavour);
// report_resource / report_kind: "policyreports" / "PolicyReport", the cluster-scoped
// "clusterpolicyreports" / "ClusterPolicyReport"; openreports.io's "reports" / "Report".
std::string_view report_resource(ReportFlavour flavour, bool cluster_scoped);
std::string_view report_kind(ReportFlavour flavour, bool cluster_scoped);

// build_policy_reports: one report per namespace that has evaluated objects (and a
// ClusterPolicyReport for cluster-scoped ones), sorted by namespace; every result stamped
// `timestamp_seconds`. Pure: same input, same text.
std::vector<PolicyReportObject> build_policy_reports(const CheckReport& report, ReportFlavour flavour,
                                                     std::int64_t timestamp_seconds);

// severity_of: the severity a check's failures are reported with.
std::string_view severity_of(std::string_view check);

}  // namespace kubegap

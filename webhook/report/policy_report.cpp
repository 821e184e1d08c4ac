#include "webhook/report/policy_report.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <span>

#include "policies/checks.h"
#include "policies/text.h"

namespace kubegap {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void write(Writer& w, std::string_view text) { w.String(text.data(), static_cast<rapidjson::SizeType>(text.size())); }

void member(Writer& w, const char* key, std::string_view value) {
  w.Key(key);
  write(w, value);
}

// Result: one (object, check) row.
struct Result {
  const char* result;  // pass | fail | skip
  std::string message;
  const Finding* finding;  // nullptr for a pass without anything to say
};

Result result_of(const CheckedObject& object, const CheckDefinition& check) {
  const auto found = std::find_if(object.findings.begin(), object.findings.end(),
                                  [&](const Finding& f) { return f.check == check.id; });
  if (found == object.findings.end()) return {"pass", "kubegap/" + std::string(check.id) + ": no gap found", nullptr};
  switch (found->outcome) {
    case Outcome::kFinding:
      return {"fail", format_warning(*found), &*found};
    case Outcome::kNote:
      return {"pass", "kubegap/" + std::string(found->check) + ": " + format_annotation(*found), &*found};
    case Outcome::kExempt:
    case Outcome::kNotEvaluated:
      break;
  }
  return {"skip", "kubegap/" + std::string(found->check) + ": " + format_annotation(*found), &*found};
}

bool any_part_evaluated(const CheckedObject& object) {
  return std::any_of(object.parts.begin(), object.parts.end(), [](const PartVerdict& p) { return p.evaluated; });
}

void write_result(Writer& w, const CheckedObject& object, const CheckDefinition& check, const Result& r,
                  std::int64_t timestamp_seconds) {
  w.StartObject();
  member(w, "source", "kubegap");
  member(w, "policy", check.id);
  member(w, "rule", check.id);
  member(w, "category", "Training reliability");
  member(w, "result", r.result);
  w.Key("scored");
  w.Bool(true);
  member(w, "severity", severity_of(check.id));
  member(w, "message", r.message);
  w.Key("properties");  // map[string]string in both schemas
  w.StartObject();
  const std::span<const std::string> cases =
      r.finding != nullptr && !r.finding->cases.empty() ? r.finding->cases : std::span<const std::string>(check.cases);
  member(w, "cases", join(cases, ","));
  if (r.finding != nullptr && !r.finding->parts.empty()) member(w, "parts", join(r.finding->parts, ", "));
  if (r.finding != nullptr && !r.finding->remedy.empty()) member(w, "fix", sanitize_text(r.finding->remedy));
  w.EndObject();
  w.Key("resources");
  w.StartArray();
  w.StartObject();
  member(w, "apiVersion", object.api_version);
  member(w, "kind", object.kind);
  if (!object.namespace_name.empty()) member(w, "namespace", object.namespace_name);
  member(w, "name", object.name);
  if (!object.uid.empty()) member(w, "uid", object.uid);
  w.EndObject();
  w.EndArray();
  w.Key("timestamp");
  w.StartObject();
  w.Key("seconds");
  w.Int64(timestamp_seconds);
  w.Key("nanos");
  w.Int(0);
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string_view report_api_version(ReportFlavour flavour) {
  return flavour == ReportFlavour::kWgPolicy ? "wgpolicyk8s.io/v1alpha2" : "openreports.io/v1alpha1";
}

std::string_view report_resource(ReportFlavour flavour, bool cluster_scoped) {
  if (flavour == ReportFlavour::kWgPolicy) return cluster_scoped ? "clusterpolicyreports" : "policyreports";
  return cluster_scoped ? "clusterreports" : "reports";
}

std::string_view report_kind(ReportFlavour flavour, bool cluster_scoped) {
  if (flavour == ReportFlavour::kWgPolicy) return cluster_scoped ? "ClusterPolicyReport" : "PolicyReport";
  return cluster_scoped ? "ClusterReport" : "Report";
}

std::string_view severity_of(std::string_view check) {
  // Our judgement of what a gap costs when it bites: losing every checkpoint costs the
  // run's progress since it began; the others cost a restart or minutes of a stalled job.
  if (check == "checkpoint-volume") return "high";
  // restart-on-failure: the run stops until someone restarts it by hand.
  if (check == "gpu-health-tolerations" || check == "disruption-budget" || check == "zone-spread" ||
      check == "restart-on-failure") {
    return "medium";
  }
  return "info";
}

std::vector<PolicyReportObject> build_policy_reports(const CheckReport& report, ReportFlavour flavour,
                                                     std::int64_t timestamp_seconds) {
  // Group the evaluated objects by namespace ("" for cluster-scoped ones), sorted.
  std::map<std::string, std::vector<const CheckedObject*>> by_namespace;
  for (const auto& object : report.objects) {
    if (any_part_evaluated(object)) by_namespace[object.namespace_name].push_back(&object);
  }
  std::vector<PolicyReportObject> out;
  for (const auto& [namespace_name, objects] : by_namespace) {
    const bool cluster_scoped = namespace_name.empty();
    PolicyReportObject doc{namespace_name,
                           std::string(report_api_version(flavour)),
                           std::string(report_kind(flavour, cluster_scoped)),
                           "",
                           0,
                           0,
                           0};
    rapidjson::StringBuffer buffer;
    Writer w(buffer);
    w.StartObject();
    member(w, "apiVersion", doc.api_version);
    member(w, "kind", doc.kind);
    w.Key("metadata");
    w.StartObject();
    member(w, "name", kReportName);
    if (!cluster_scoped) member(w, "namespace", namespace_name);
    w.Key("labels");
    w.StartObject();
    member(w, kManagedByLabel, kManagedBy);
    w.EndObject();
    w.EndObject();
    if (flavour == ReportFlavour::kOpenReports) member(w, "source", "kubegap");
    w.Key("results");
    w.StartArray();
    for (const CheckedObject* object : objects) {
      for (const auto& check : check_registry()) {
        const Result r = result_of(*object, check);
        write_result(w, *object, check, r, timestamp_seconds);
        const std::string_view result = r.result;
        if (result == "pass") ++doc.pass;
        if (result == "fail") ++doc.fail;
        if (result == "skip") ++doc.skip;
      }
    }
    w.EndArray();
    w.Key("summary");
    w.StartObject();
    w.Key("pass");
    w.Uint64(doc.pass);
    w.Key("fail");
    w.Uint64(doc.fail);
    w.Key("warn");
    w.Uint64(0);
    w.Key("error");
    w.Uint64(0);
    w.Key("skip");
    w.Uint64(doc.skip);
    w.EndObject();
    w.EndObject();
    doc.json.assign(buffer.GetString(), buffer.GetSize());
    out.push_back(std::move(doc));
  }
  return out;
}

}  // namespace kubegap

#include "policies/evaluate.h"

#include <algorithm>

#include "policies/checks.h"
#include "policies/classifier.h"

namespace kubegap {
namespace {

// exempted_checks: the check ids listed in kubegap.io/exempt ("a,b, c").
bool exempts(const StringMap& annotations, std::string_view check_id) {
  const auto it = annotations.find(kExemptAnnotation);
  if (it == annotations.end()) return false;
  std::string_view list = it->second;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == check_id) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string exempt_reason(const PodSpecView& pod, const WorkloadView& object) {
  for (const StringMap* annotations : {&pod.annotations, &object.annotations}) {
    const auto it = annotations->find(kExemptReasonAnnotation);
    if (it != annotations->end() && !it->second.empty()) return it->second;
  }
  return "no reason given (" + std::string(kExemptReasonAnnotation) + " not set)";
}

// PartResult: one check's conclusion for one training pod spec.
struct PartResult {
  const PodSpecView* pod;
  Gap gap;
};

// kMaxWarningsPerCheck: parts that fail a check in different ways get their own
// warnings, up to this many; the rest are summarised in the last one. All warnings of a
// request share the API server's 4096-rune budget with every other webhook.
constexpr std::size_t kMaxWarningsPerCheck = 2;

// group: one Finding per distinct (outcome, message) among the parts, in part order, so
// the same gap in several parts is one finding that lists them.
void group(const CheckDefinition& check, std::vector<PartResult>& results,
           std::vector<Finding>& out) {
  const std::size_t first = out.size();
  for (auto& result : results) {
    auto same = std::find_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), [&](const Finding& f) {
      return f.outcome == result.gap.outcome && f.message == result.gap.message;
    });
    if (same == out.end()) {
      out.push_back(Finding{std::string(check.id), result.gap.outcome, std::move(result.gap.message),
                            std::move(result.gap.reason), check.cases, {}});
      same = out.end() - 1;
    }
    if (!result.pod->part.empty()) same->parts.push_back(result.pod->part);
  }
  // Past the cap, fold the remaining gaps into one summary finding.
  std::vector<Finding> gaps;
  std::vector<Finding> others;
  for (auto it = out.begin() + static_cast<std::ptrdiff_t>(first); it != out.end(); ++it) {
    (it->outcome == Outcome::kFinding ? gaps : others).push_back(std::move(*it));
  }
  out.resize(first);
  if (gaps.size() > kMaxWarningsPerCheck) {
    Finding summary{std::string(check.id), Outcome::kFinding, std::string(check.summary),
                    "", check.cases, {}};
    for (auto it = gaps.begin() + kMaxWarningsPerCheck - 1; it != gaps.end(); ++it) {
      summary.parts.insert(summary.parts.end(), it->parts.begin(), it->parts.end());
      summary.reason += (summary.reason.empty() ? "" : "; ") + it->reason;
    }
    gaps.resize(kMaxWarningsPerCheck - 1);
    gaps.push_back(std::move(summary));
  }
  for (auto& f : gaps) out.push_back(std::move(f));
  for (auto& f : others) out.push_back(std::move(f));
}

}  // namespace

std::vector<Finding> evaluate(const WorkloadView& object, const ClusterSnapshot* cluster,
                              const Policy& policy, std::string_view cluster_unavailable,
                              const ClusterSnapshot* claims) {
  if (claims == nullptr) claims = cluster;
  std::vector<Finding> findings;
  if (policy.namespace_excluded(object.namespace_name)) return findings;

  // A Pod made by a controller in the table is judged like that controller's row.
  const WorkloadKind* row = judging_row(object, policy);
  struct JudgedPod {
    const PodSpecView* pod;
    bool accelerator;
    WorkloadClass workload_class;
  };
  std::vector<JudgedPod> judged;
  for (const auto& pod : object.pods) {
    const bool accelerator = requests_accelerator(pod, policy, object.namespace_name, claims);
    const PodClass pod_class = classify_pod(pod, object, row, accelerator, policy);
    if (pod_class.evaluated) judged.push_back({&pod, accelerator, pod_class.workload_class});
  }
  if (judged.empty()) return findings;

  const auto skipped = [&](std::string_view id) {
    return row != nullptr && std::find(row->skip_checks.begin(), row->skip_checks.end(), id) != row->skip_checks.end();
  };
  for (const auto& check : check_registry()) {
    if (!policy.check_enabled(check.id) || skipped(check.id)) continue;
    std::vector<PartResult> results;
    for (const auto& [pod, accelerator, workload_class] : judged) {
      if (!policy.check_applies(check.id, workload_class)) continue;
      const CheckContext ctx{object, policy, cluster, cluster_unavailable, accelerator, workload_class};
      auto gap = check.run(*pod, ctx);
      if (!gap) continue;
      if (gap->outcome == Outcome::kFinding &&
          (exempts(object.annotations, check.id) || exempts(pod->annotations, check.id))) {
        gap->outcome = Outcome::kExempt;
        gap->reason = exempt_reason(*pod, object);
      }
      results.push_back({pod, std::move(*gap)});
    }
    const std::size_t first = findings.size();
    group(check, results, findings);
    if (policy.action(check.id) == CheckAction::kAudit) {
      for (auto it = findings.begin() + static_cast<std::ptrdiff_t>(first); it != findings.end(); ++it) {
        it->audit_only = true;
      }
    }
  }
  return findings;
}

}  // namespace kubegap

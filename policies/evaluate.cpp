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

// merge: one Finding for a check from the gaps of every part. A real gap in any part
// outranks an exemption, which outranks "not evaluated".
Finding merge(const CheckDefinition& check, std::vector<PartResult>& results) {
  const auto rank = [](Outcome o) {
    return o == Outcome::kFinding ? 0 : o == Outcome::kExempt ? 1 : 2;
  };
  const Outcome outcome =
      std::min_element(results.begin(), results.end(), [&](const auto& a, const auto& b) {
        return rank(a.gap.outcome) < rank(b.gap.outcome);
      })->gap.outcome;
  Finding finding{std::string(check.id), outcome, "", "", check.cases, {}};
  for (auto& result : results) {
    if (result.gap.outcome != outcome) continue;
    if (finding.message.empty()) {
      finding.message = std::move(result.gap.message);
      finding.reason = std::move(result.gap.reason);
    }
    if (!result.pod->part.empty()) finding.parts.push_back(result.pod->part);
  }
  return finding;
}

}  // namespace

std::vector<Finding> evaluate(const WorkloadView& object, const ClusterSnapshot* cluster,
                              const Policy& policy, const std::string& cluster_unavailable) {
  std::vector<Finding> findings;
  if (policy.namespace_excluded(object.namespace_name)) return findings;

  struct TrainingPod {
    const PodSpecView* pod;
    bool accelerator;
  };
  std::vector<TrainingPod> training;
  for (const auto& pod : object.pods) {
    if (is_training_pod(pod, object, policy)) {
      training.push_back({&pod, requests_accelerator(pod, policy)});
    }
  }
  if (training.empty()) return findings;

  for (const auto& check : check_registry()) {
    if (!policy.check_enabled(std::string(check.id))) continue;
    std::vector<PartResult> results;
    for (const auto& [pod, accelerator] : training) {
      const CheckContext ctx{object, policy, cluster, cluster_unavailable, accelerator};
      auto gap = check.run(*pod, ctx);
      if (!gap) continue;
      if (gap->outcome == Outcome::kFinding &&
          (exempts(object.annotations, check.id) || exempts(pod->annotations, check.id))) {
        gap->outcome = Outcome::kExempt;
        gap->reason = exempt_reason(*pod, object);
      }
      results.push_back({pod, std::move(*gap)});
    }
    if (!results.empty()) findings.push_back(merge(check, results));
  }
  return findings;
}

}  // namespace kubegap

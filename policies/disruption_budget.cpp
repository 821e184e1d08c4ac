// DisruptionBudgetCheck: without a PodDisruptionBudget, node drains, upgrades and
// autoscaler scale-downs may evict any rank, and one lost rank can fail the whole job
// (cases kubetorch-evictions-2025, training-evictions-without-pdb,
// llama3-pretraining-2024). A budget guards only the Eviction API: it does nothing
// against node crashes or hardware faults, which the other checks are about.
#include <algorithm>

#include "policies/checks.h"
#include "policies/label_selector.h"

namespace kubegap {

std::optional<Gap> check_disruption_budget(const PodSpecView& pod, const CheckContext& ctx) {
  // Never guess: without the cluster's budgets the check cannot know.
  if (ctx.cluster == nullptr) {
    return not_evaluated(std::string(ctx.cluster_unavailable));
  }
  if (ctx.cluster->budgets().any_selects(ctx.object.namespace_name, pod.labels)) return std::nullopt;
  // A kind with no row: its controller may add labels a budget selects, which nothing
  // here knows; only a budget over the template's own labels can be seen.
  if (ctx.object.unlisted_kind) {
    return not_evaluated("kind " + ctx.object.kind +
                         " has no row in the workload table: the labels its controller adds to its pods are unknown, "
                         "and no PodDisruptionBudget selects the template's own labels");
  }
  // For pods of an operator or bare pods the API accepts only an integer minAvailable
  // (kubernetes.io, "Specifying a Disruption Budget for your Application"), so the
  // remedy names exactly that.
  return Gap{Outcome::kFinding,
             "no PodDisruptionBudget selects these pods: a drain or scale-down may evict one and fail the "
             "whole job",
             "no PodDisruptionBudget in namespace " + ctx.object.namespace_name + " selects the pod's labels",
             "add a PDB selecting all its pods with integer minAvailable = their count"};
}

}  // namespace kubegap

// DisruptionBudgetCheck: without a PodDisruptionBudget, drains, upgrades and autoscaler
// scale-downs evict ranks at will (cases training-evictions-without-pdb,
// osm-amsterdam-power-2022).
#include <algorithm>

#include "policies/checks.h"
#include "policies/label_selector.h"

namespace kubegap {

std::optional<Gap> check_disruption_budget(const PodSpecView& pod, const CheckContext& ctx) {
  // Never guess: without the cluster's budgets the check cannot know.
  if (ctx.cluster == nullptr) {
    return Gap{Outcome::kNotEvaluated, "", std::string(ctx.cluster_unavailable)};
  }
  const auto& budgets = ctx.cluster->budgets_in(ctx.object.namespace_name);
  const bool protected_by_budget =
      std::any_of(budgets.begin(), budgets.end(),
                  [&](const DisruptionBudget& b) { return selects(b.selector, pod.labels); });
  if (protected_by_budget) return std::nullopt;
  return Gap{Outcome::kFinding,
             "no PodDisruptionBudget selects these pods: a node drain or scale-down can evict "
             "ranks at any time and restart the job",
             "no PodDisruptionBudget in namespace " + ctx.object.namespace_name +
                 " selects the pod's labels"};
}

}  // namespace kubegap

#include "policies/cluster_view.h"

namespace kubegap {

ClusterSnapshot::ClusterSnapshot(std::vector<DisruptionBudget> budgets,
                                 std::vector<NodeInfo> nodes)
    : nodes_(std::move(nodes)), budget_count_(budgets.size()) {
  for (auto& budget : budgets) {
    auto& list = budgets_by_namespace_[budget.namespace_name];
    list.push_back(std::move(budget));
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) node_index_.emplace(nodes_[i].name, i);
}

const std::vector<DisruptionBudget>& ClusterSnapshot::budgets_in(
    const std::string& namespace_name) const {
  static const std::vector<DisruptionBudget> kNone;
  const auto it = budgets_by_namespace_.find(namespace_name);
  return it == budgets_by_namespace_.end() ? kNone : it->second;
}

const NodeInfo* ClusterSnapshot::node(const std::string& name) const {
  const auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

}  // namespace kubegap

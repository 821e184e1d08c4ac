#include "policies/cluster_view.h"

namespace kubegap {
namespace {

std::string claim_key(const std::string& namespace_name, const std::string& name, bool is_template) {
  // '/' cannot occur in either name, so the key is unambiguous.
  return namespace_name + (is_template ? "/template/" : "/claim/") + name;
}

}  // namespace

ClusterSnapshot::ClusterSnapshot(std::vector<DisruptionBudget> budgets,
                                 std::vector<NodeInfo> nodes, std::vector<ResourceClaimInfo> claims,
                                 std::vector<ConfigMapInfo> config_maps)
    : nodes_(std::move(nodes)), budget_count_(budgets.size()) {
  for (auto& c : config_maps) config_maps_.insert_or_assign(c.namespace_name + "/" + c.name, std::move(c.data));
  for (auto& claim : claims) {
    claims_.insert_or_assign(claim_key(claim.namespace_name, claim.name, claim.is_template),
                             std::move(claim.device_classes));
  }
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

const std::vector<std::string>* ClusterSnapshot::device_classes(const std::string& namespace_name,
                                                                const std::string& name, bool is_template) const {
  const auto it = claims_.find(claim_key(namespace_name, name, is_template));
  return it == claims_.end() ? nullptr : &it->second;
}

const StringMap* ClusterSnapshot::config_map(const std::string& namespace_name, const std::string& name) const {
  const auto it = config_maps_.find(namespace_name + "/" + name);
  return it == config_maps_.end() ? nullptr : &it->second;
}

}  // namespace kubegap

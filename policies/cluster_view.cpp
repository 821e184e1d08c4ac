#include "policies/cluster_view.h"

#include <algorithm>

namespace kubegap {
namespace {

std::string claim_key(const std::string& namespace_name, const std::string& name, bool is_template) {
  // '/' cannot occur in either name, so the key is unambiguous.
  return namespace_name + (is_template ? "/template/" : "/claim/") + name;
}

// label_key: "key\0value" ('\0' cannot occur in a label key, so the pair is unambiguous).
std::string label_key(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(key.size() + 1 + value.size());
  out.append(key).push_back('\0');
  out.append(value);
  return out;
}

}  // namespace

const std::string* zone_label(const StringMap& labels) {
  for (const auto key : kZoneLabelKeys) {
    const auto it = labels.find(key);
    if (it != labels.end()) return &it->second;
  }
  return nullptr;
}

NodeSet::NodeSet(std::vector<NodeInfo> nodes) : nodes_(std::move(nodes)) {
  std::unordered_map<std::string, int> zone_ids;
  node_zones_.reserve(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    by_name_.emplace(nodes_[i].name, i);
    int zone = kUnzoned;
    if (const std::string* name = zone_label(nodes_[i].labels)) {
      const auto [it, added] = zone_ids.emplace(*name, static_cast<int>(zone_names_.size()));
      if (added) zone_names_.push_back(*name);
      zone = it->second;
    }
    node_zones_.push_back(zone);
    for (const auto& [key, value] : nodes_[i].labels) {
      Posting& posting = by_label_[label_key(key, value)];
      if (posting.nodes.empty()) {
        posting.zone = zone;
      } else if (posting.zone != zone && posting.zone != kUnzoned) {
        posting.zone = zone == kUnzoned ? kUnzoned : kSeveral;
      }
      posting.nodes.push_back(static_cast<std::uint32_t>(i));  // ascending: i only grows
    }
  }
}

const NodeInfo* NodeSet::node(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &nodes_[it->second];
}

const NodeSet::Posting* NodeSet::labelled(std::string_view key, std::string_view value) const {
  const auto it = by_label_.find(label_key(key, value));
  return it == by_label_.end() ? nullptr : &it->second;
}

BudgetSet::BudgetSet(std::vector<DisruptionBudget> budgets) : count_(budgets.size()) {
  for (auto& budget : budgets) {
    Namespace& ns = by_namespace_[budget.namespace_name];
    const auto position = static_cast<std::uint32_t>(ns.budgets.size());
    if (!budget.selector) {
      // A null selector selects nothing: kept for budgets_in, never a candidate.
    } else if (budget.selector->match_labels.empty()) {
      ns.unindexed.push_back(position);
    } else {
      // Every matchLabels pair must be on the pod, so the first one finds every pod it
      // can select.
      const auto& [key, value] = *budget.selector->match_labels.begin();
      ns.by_label[label_key(key, value)].push_back(position);
    }
    ns.budgets.push_back(std::move(budget));
  }
}

const std::vector<DisruptionBudget>& BudgetSet::budgets_in(const std::string& namespace_name) const {
  static const std::vector<DisruptionBudget> kNone;
  const auto it = by_namespace_.find(namespace_name);
  return it == by_namespace_.end() ? kNone : it->second.budgets;
}

bool BudgetSet::any_selects(const std::string& namespace_name, const StringMap& labels) const {
  const auto it = by_namespace_.find(namespace_name);
  if (it == by_namespace_.end()) return false;
  const Namespace& ns = it->second;
  const auto selects_pod = [&](std::uint32_t position) { return selects(ns.budgets[position].selector, labels); };
  if (std::any_of(ns.unindexed.begin(), ns.unindexed.end(), selects_pod)) return true;
  for (const auto& [key, value] : labels) {
    const auto found = ns.by_label.find(label_key(key, value));
    if (found != ns.by_label.end() && std::any_of(found->second.begin(), found->second.end(), selects_pod)) {
      return true;
    }
  }
  return false;
}

ClusterSnapshot::ClusterSnapshot(std::vector<DisruptionBudget> budgets, std::vector<NodeInfo> nodes,
                                 std::vector<ResourceClaimInfo> claims, std::vector<ConfigMapInfo> config_maps,
                                 std::shared_ptr<const RuntimeSet> runtimes)
    : budgets_(std::make_shared<const BudgetSet>(std::move(budgets))),
      nodes_(std::make_shared<const NodeSet>(std::move(nodes))),
      runtimes_(runtimes ? std::move(runtimes) : std::make_shared<const RuntimeSet>()) {
  for (auto& c : config_maps) config_maps_.insert_or_assign(c.namespace_name + "/" + c.name, std::move(c.data));
  for (auto& claim : claims) {
    claims_.insert_or_assign(claim_key(claim.namespace_name, claim.name, claim.is_template),
                             std::move(claim.device_classes));
  }
}

ClusterSnapshot::ClusterSnapshot(std::shared_ptr<const BudgetSet> budgets, std::shared_ptr<const NodeSet> nodes,
                                 std::shared_ptr<const RuntimeSet> runtimes)
    : budgets_(budgets ? std::move(budgets) : std::make_shared<const BudgetSet>()),
      nodes_(nodes ? std::move(nodes) : std::make_shared<const NodeSet>()),
      runtimes_(runtimes ? std::move(runtimes) : std::make_shared<const RuntimeSet>()) {}

namespace {
std::string runtime_key(std::string_view kind, const std::string& namespace_name, const std::string& name) {
  std::string key(kind);
  // A ClusterTrainingRuntime has no namespace, whatever the TrainJob's is.
  key += '/';
  if (kind != "ClusterTrainingRuntime") key += namespace_name;
  key += '/';
  key += name;
  return key;
}
}  // namespace

RuntimeSet::RuntimeSet(std::vector<TrainingRuntimeInfo> runtimes, bool listed, bool shipped_defaults)
    : listed_(listed), shipped_defaults_(shipped_defaults) {
  for (auto& r : runtimes) by_key_.insert_or_assign(runtime_key(r.kind, r.namespace_name, r.name), std::move(r.json));
}

const std::string* RuntimeSet::find(std::string_view kind, const std::string& namespace_name,
                                    const std::string& name) const {
  const auto it = by_key_.find(runtime_key(kind, namespace_name, name));
  return it == by_key_.end() ? nullptr : &it->second;
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

#pragma once
// ClusterSnapshot: the parts of the cluster's state the checks need, as an immutable
// value. Sources (a file today; list+watch against the API server later) build a new
// snapshot and swap it in; a review holds one snapshot for its whole evaluation.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/label_selector.h"
#include "policies/pod_view.h"

namespace kubegap {

struct DisruptionBudget {
  std::string namespace_name;
  std::string name;
  std::optional<LabelSelector> selector;  // nullopt: null selector, selects nothing
};

struct NodeInfo {
  std::string name;
  StringMap labels;
};

// ResourceClaimInfo: a resource.k8s.io ResourceClaim or ResourceClaimTemplate, reduced to
// the device classes its requests name (a pod names no device class itself).
struct ResourceClaimInfo {
  std::string namespace_name;
  std::string name;
  bool is_template = false;
  std::vector<std::string> device_classes;
};

// ConfigMapInfo: a ConfigMap's data, for env vars a container takes from it (envFrom).
struct ConfigMapInfo {
  std::string namespace_name;
  std::string name;
  StringMap data;
};

class ClusterSnapshot {
 public:
  ClusterSnapshot() = default;
  ClusterSnapshot(std::vector<DisruptionBudget> budgets, std::vector<NodeInfo> nodes,
                  std::vector<ResourceClaimInfo> claims = {}, std::vector<ConfigMapInfo> config_maps = {});

  // budgets_in: the PodDisruptionBudgets of one namespace (empty when none).
  const std::vector<DisruptionBudget>& budgets_in(const std::string& namespace_name) const;
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  const NodeInfo* node(const std::string& name) const;
  std::size_t budget_count() const { return budget_count_; }
  // device_classes: the device classes of a claim (or claim template) in a namespace;
  // nullptr when the snapshot does not know it.
  const std::vector<std::string>* device_classes(const std::string& namespace_name, const std::string& name,
                                                 bool is_template) const;
  // config_map: a ConfigMap's data; nullptr when unknown.
  const StringMap* config_map(const std::string& namespace_name, const std::string& name) const;

 private:
  std::unordered_map<std::string, std::vector<std::string>> claims_;  // claim_key -> classes
  std::unordered_map<std::string, StringMap> config_maps_;            // namespace/name -> data
  std::unordered_map<std::string, std::vector<DisruptionBudget>> budgets_by_namespace_;
  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string, std::size_t> node_index_;
  std::size_t budget_count_ = 0;
};

// ClusterView: where the webhook gets the current snapshot from. snapshot() returns
// nullptr when no view is configured (or it has not synced): checks that need it then
// report "not evaluated" instead of guessing.
class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::shared_ptr<const ClusterSnapshot> snapshot() const = 0;
  // describe: why there is no snapshot, for the "not evaluated" annotation.
  // A static text: it is read on every review, so it must not allocate.
  virtual std::string_view unavailable_reason() const { return "no cluster view"; }
};

// StaticClusterView: a fixed snapshot (from --cluster-state FILE, tests, offline check).
class StaticClusterView final : public ClusterView {
 public:
  explicit StaticClusterView(std::shared_ptr<const ClusterSnapshot> snapshot)
      : snapshot_(std::move(snapshot)) {}
  std::shared_ptr<const ClusterSnapshot> snapshot() const override { return snapshot_; }

 private:
  std::shared_ptr<const ClusterSnapshot> snapshot_;
};

// NoClusterView: nothing is known about the cluster.
class NoClusterView final : public ClusterView {
 public:
  std::shared_ptr<const ClusterSnapshot> snapshot() const override { return nullptr; }
};

}  // namespace kubegap

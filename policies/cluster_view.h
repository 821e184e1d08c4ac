#pragma once
// ClusterSnapshot: the parts of the cluster's state the checks need, as an immutable
// value. Sources (a file today; list+watch against the API server later) build a new
// snapshot and swap it in; a review holds one snapshot for its whole evaluation.

#include <array>
#include <cstdint>
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
  bool operator==(const DisruptionBudget&) const = default;
};

struct NodeInfo {
  std::string name;
  StringMap labels;
  bool operator==(const NodeInfo&) const = default;
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

// TrainingRuntimeInfo: a Kubeflow Trainer ClusterTrainingRuntime (no namespace) or
// TrainingRuntime, kept as its JSON text: a TrainJob that references it is resolved
// against it at review time (webhook/core/trainjob_resolver.h). Text, not a view: the
// resolver merges the TrainJob into the runtime's JobSet template field by field.
struct TrainingRuntimeInfo {
  std::string kind;  // "ClusterTrainingRuntime" or "TrainingRuntime"
  std::string namespace_name;
  std::string name;
  std::string json;
};

// RuntimeSet: the training runtimes a source knows, by kind, namespace and name.
// `listed`: the source lists runtimes (the cluster view watches them, or `check` read its
// inputs), so a runtime it does not hold does not exist there. `shipped_defaults`: the
// source is not a cluster (`check`'s files), so a ClusterTrainingRuntime that Trainer
// ships and the input lacks is taken as Trainer ships it.
class RuntimeSet {
 public:
  RuntimeSet() = default;
  RuntimeSet(std::vector<TrainingRuntimeInfo> runtimes, bool listed, bool shipped_defaults = false);
  bool shipped_defaults() const { return shipped_defaults_; }
  // find: the runtime's JSON text; nullptr when unknown.
  const std::string* find(std::string_view kind, const std::string& namespace_name, const std::string& name) const;
  bool listed() const { return listed_; }
  std::size_t size() const { return by_key_.size(); }

 private:
  std::unordered_map<std::string, std::string> by_key_;  // kind/namespace/name -> JSON
  bool listed_ = false;
  bool shipped_defaults_ = false;
};

// The well-known zone label and its deprecated predecessor (still set by some clouds).
inline constexpr std::array<std::string_view, 2> kZoneLabelKeys = {"topology.kubernetes.io/zone",
                                                                   "failure-domain.beta.kubernetes.io/zone"};

// zone_label: a node's zone from its labels; nullptr when it has none.
const std::string* zone_label(const StringMap& labels);

// NodeSet: the cluster's Nodes, with what zone-spread asks of them precomputed once per
// set, so that for the common shapes (a pool nodeSelector, In affinity) a review does not
// walk every node: each node's zone, the number of zones, and a label index (key=value ->
// the nodes carrying it, and the zone they share).
class NodeSet {
 public:
  static constexpr int kUnzoned = -1;  // a node without a zone label
  static constexpr int kSeveral = -2;  // nodes in more than one zone
  // A posting list of the label index: sorted node positions and the zone they share.
  struct Posting {
    std::vector<std::uint32_t> nodes;
    int zone = kUnzoned;  // a zone id, kSeveral, or kUnzoned when any node has none
  };

  NodeSet() = default;
  explicit NodeSet(std::vector<NodeInfo> nodes);

  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  const NodeInfo* node(const std::string& name) const;
  std::size_t zone_count() const { return zone_names_.size(); }
  // zone: the zone id of the node at `position` (kUnzoned when it has no zone label).
  int zone(std::size_t position) const { return node_zones_[position]; }
  const std::string& zone_name(int zone) const { return zone_names_[static_cast<std::size_t>(zone)]; }
  // labelled: the nodes carrying label key=value; nullptr when none do.
  const Posting* labelled(std::string_view key, std::string_view value) const;

 private:
  std::vector<NodeInfo> nodes_;
  std::vector<int> node_zones_;
  std::vector<std::string> zone_names_;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::unordered_map<std::string, Posting> by_label_;  // "key\0value" -> posting
};

// BudgetSet: the PodDisruptionBudgets, by namespace, indexed by one matchLabels pair of
// each selector, so finding the budgets that select a pod looks at the pod's labels, not
// at every budget of its namespace.
class BudgetSet {
 public:
  BudgetSet() = default;
  explicit BudgetSet(std::vector<DisruptionBudget> budgets);

  std::size_t size() const { return count_; }
  // budgets_in: the PodDisruptionBudgets of one namespace (empty when none).
  const std::vector<DisruptionBudget>& budgets_in(const std::string& namespace_name) const;
  // any_selects: whether a budget of the namespace selects a pod with these labels.
  bool any_selects(const std::string& namespace_name, const StringMap& labels) const;

 private:
  struct Namespace {
    std::vector<DisruptionBudget> budgets;
    std::unordered_map<std::string, std::vector<std::uint32_t>> by_label;  // "key\0value"
    std::vector<std::uint32_t> unindexed;                                  // no matchLabels: checked for every pod
  };
  std::unordered_map<std::string, Namespace> by_namespace_;
  std::size_t count_ = 0;
};

class ClusterSnapshot {
 public:
  ClusterSnapshot() : ClusterSnapshot(std::vector<DisruptionBudget>{}, std::vector<NodeInfo>{}) {}
  ClusterSnapshot(std::vector<DisruptionBudget> budgets, std::vector<NodeInfo> nodes,
                  std::vector<ResourceClaimInfo> claims = {}, std::vector<ConfigMapInfo> config_maps = {},
                  std::shared_ptr<const RuntimeSet> runtimes = nullptr);
  // From shared parts: a live view publishing a Node change reuses its budgets, and
  // the other way round.
  ClusterSnapshot(std::shared_ptr<const BudgetSet> budgets, std::shared_ptr<const NodeSet> nodes,
                  std::shared_ptr<const RuntimeSet> runtimes = nullptr);

  const BudgetSet& budgets() const { return *budgets_; }
  const NodeSet& node_set() const { return *nodes_; }
  std::shared_ptr<const BudgetSet> shared_budgets() const { return budgets_; }
  std::shared_ptr<const NodeSet> shared_nodes() const { return nodes_; }

  const std::vector<DisruptionBudget>& budgets_in(const std::string& namespace_name) const {
    return budgets_->budgets_in(namespace_name);
  }
  const std::vector<NodeInfo>& nodes() const { return nodes_->nodes(); }
  const NodeInfo* node(const std::string& name) const { return nodes_->node(name); }
  std::size_t budget_count() const { return budgets_->size(); }
  // device_classes: the device classes of a claim (or claim template) in a namespace;
  // nullptr when the snapshot does not know it.
  const std::vector<std::string>* device_classes(const std::string& namespace_name, const std::string& name,
                                                 bool is_template) const;
  // config_map: a ConfigMap's data; nullptr when unknown.
  const StringMap* config_map(const std::string& namespace_name, const std::string& name) const;
  // runtimes: the Kubeflow Trainer runtimes this snapshot knows (possibly none, unlisted).
  const RuntimeSet& runtimes() const { return *runtimes_; }
  std::shared_ptr<const RuntimeSet> shared_runtimes() const { return runtimes_; }

 private:
  std::shared_ptr<const BudgetSet> budgets_;
  std::shared_ptr<const NodeSet> nodes_;
  std::shared_ptr<const RuntimeSet> runtimes_;
  std::unordered_map<std::string, std::vector<std::string>> claims_;  // claim_key -> classes
  std::unordered_map<std::string, StringMap> config_maps_;            // namespace/name -> data
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
  explicit StaticClusterView(std::shared_ptr<const ClusterSnapshot> snapshot) : snapshot_(std::move(snapshot)) {}
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

// The cluster view's indices (NodeSet's label postings and zone summaries, BudgetSet's
// matchLabels index) answer exactly what a scan of every node and every budget answers.
// Random clusters, pods and budgets from small label alphabets (so labels collide and
// selectors match), against brute-force references written here from the Kubernetes rules.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

const std::vector<std::string> kZones = {"zone-a", "zone-b", "zone-c"};
const std::vector<std::string> kKeys = {"pool", "gpu", "rack"};
const std::vector<std::string> kNames = {"n1", "n2"};

std::string pick(std::mt19937& rng, const std::vector<std::string>& from) {
  return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
}
bool coin(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }
std::string value(std::mt19937& rng) { return "v" + std::to_string(std::uniform_int_distribution<int>(0, 3)(rng)); }

std::vector<NodeInfo> random_nodes(std::mt19937& rng) {
  std::vector<NodeInfo> nodes;
  const int count = std::uniform_int_distribution<int>(0, 40)(rng);
  const bool one_zone = coin(rng, 0.2);
  for (int i = 0; i < count; ++i) {
    StringMap labels;
    if (!coin(rng, 0.05)) labels[coin(rng, 0.1) ? kOldZone : kZone] = one_zone ? kZones[0] : pick(rng, kZones);
    for (const auto& key : kKeys) {
      if (coin(rng, 0.8)) labels[key] = value(rng);
    }
    nodes.push_back(node("n" + std::to_string(i), labels));
  }
  return nodes;
}

Requirement random_requirement(std::mt19937& rng) {
  static const std::vector<std::string> ops = {"In", "In", "NotIn", "Exists", "DoesNotExist"};
  Requirement r{pick(rng, kKeys), pick(rng, ops), {}};
  if (r.op == "In" || r.op == "NotIn") {
    const int values = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int v = 0; v < values; ++v) r.values.push_back(value(rng));
  }
  return r;
}

PodSpecView random_pod(std::mt19937& rng) {
  PodSpecView pod = gpu_pod();
  const int selectors = std::uniform_int_distribution<int>(0, 2)(rng);
  for (int i = 0; i < selectors; ++i) pod.node_selector[pick(rng, kKeys)] = value(rng);
  const int terms = std::uniform_int_distribution<int>(0, 2)(rng);
  for (int t = 0; t < terms; ++t) {
    NodeSelectorTerm term;
    const int requirements = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int r = 0; r < requirements; ++r) term.match_expressions.push_back(random_requirement(rng));
    // metadata.name takes In or NotIn with exactly one value (nodeaffinity)
    if (coin(rng, 0.1))
      term.match_fields.push_back({"metadata.name", coin(rng, 0.5) ? "In" : "NotIn", {pick(rng, kNames)}});
    pod.required_node_terms.push_back(term);
  }
  return pod;
}

// The reference: every node scanned with the scheduler's rules (nodeSelector pairs all
// present; required terms ORed, an empty term matching nothing, metadata.name the only
// field).
bool admits(const PodSpecView& pod, const NodeInfo& n) {
  for (const auto& [key, v] : pod.node_selector) {
    const auto it = n.labels.find(key);
    if (it == n.labels.end() || it->second != v) return false;
  }
  if (pod.required_node_terms.empty()) return true;
  for (const auto& term : pod.required_node_terms) {
    if (term.match_expressions.empty() && term.match_fields.empty()) continue;
    bool all = true;
    for (const auto& r : term.match_expressions) all = all && requirement_matches(r, n.labels);
    for (const auto& r : term.match_fields)
      all = all && requirement_matches({"name", r.op, r.values}, {{"name", n.name}});
    if (all) return true;
  }
  return false;
}

const std::string* zone_of(const NodeInfo& n) {
  for (const char* key : {kZone, kOldZone}) {
    const auto it = n.labels.find(key);
    if (it != n.labels.end()) return &it->second;
  }
  return nullptr;
}

// reference_pin: "zone (count)" when the admitted nodes are all in one zone of a
// multi-zone cluster; empty otherwise.
std::string reference_pin(const PodSpecView& pod, const std::vector<NodeInfo>& nodes) {
  std::set<std::string> cluster_zones, zones;
  std::size_t admitted = 0;
  bool all_zoned = true;
  for (const auto& n : nodes) {
    const std::string* zone = zone_of(n);
    if (zone) cluster_zones.insert(*zone);
    if (!admits(pod, n)) continue;
    ++admitted;
    if (zone) {
      zones.insert(*zone);
    } else {
      all_zoned = false;
    }
  }
  if (admitted == 0 || !all_zoned || zones.size() != 1 || cluster_zones.size() < 2) return "";
  return "(" + std::to_string(admitted) + ") is in zone \"" + *zones.begin() + "\"";
}

TEST(ClusterIndex, ZoneSpreadMatchesAScanOfEveryNode) {
  std::mt19937 rng(20261203);
  int pinned = 0, free = 0;
  for (int i = 0; i < 3000; ++i) {
    const auto nodes = random_nodes(rng);
    const auto snapshot = cluster({}, nodes);
    const PodSpecView pod = random_pod(rng);
    const std::string want = reference_pin(pod, nodes);
    const auto gap = run_check(check_zone_spread, pod, snapshot.get());
    if (want.empty()) {
      ASSERT_FALSE(gap.has_value()) << "case " << i << ": " << gap->message;
      ++free;
    } else {
      ASSERT_TRUE(gap.has_value()) << "case " << i << ": want a pin " << want;
      EXPECT_NE(gap->message.find(want), std::string::npos) << "case " << i << ": " << gap->message << " / " << want;
      ++pinned;
    }
  }
  // The generator must exercise both answers, or the comparison proves little.
  EXPECT_GT(pinned, 100);
  EXPECT_GT(free, 100);
}

TEST(ClusterIndex, PostingsCarryTheirNodesAndSharedZone) {
  const NodeSet set({node("a", {{kZone, "z1"}, {"pool", "p"}}), node("b", {{kZone, "z1"}, {"pool", "p"}}),
                     node("c", {{kZone, "z2"}, {"pool", "q"}}), node("d", {{"pool", "q"}}),
                     node("e", {{kOldZone, "z3"}, {"pool", "r"}}), node("f", {{kZone, "z2"}, {"pool", "r"}})});
  EXPECT_EQ(set.zone_count(), 3u);
  const auto* p = set.labelled("pool", "p");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->nodes, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(set.zone_name(p->zone), "z1");
  EXPECT_EQ(set.labelled("pool", "q")->zone, NodeSet::kUnzoned);  // d has no zone
  EXPECT_EQ(set.labelled("pool", "r")->zone, NodeSet::kSeveral);
  EXPECT_EQ(set.labelled("pool", "none"), nullptr);
  EXPECT_EQ(set.labelled("poo", "lp"), nullptr);  // the key/value split is not ambiguous
  EXPECT_EQ(set.zone(3), NodeSet::kUnzoned);
  EXPECT_EQ(set.node("e")->name, "e");
}

LabelSelector random_selector(std::mt19937& rng) {
  LabelSelector s;
  const int pairs = std::uniform_int_distribution<int>(0, 2)(rng);
  for (int i = 0; i < pairs; ++i) s.match_labels[pick(rng, kKeys)] = value(rng);
  if (coin(rng, 0.4)) s.match_expressions.push_back(random_requirement(rng));
  return s;
}

TEST(ClusterIndex, BudgetIndexMatchesAScanOfEveryBudget) {
  std::mt19937 rng(7);
  int selected = 0, unselected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<DisruptionBudget> budgets;
    const int count = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int b = 0; b < count; ++b) {
      std::optional<LabelSelector> selector;
      if (!coin(rng, 0.1)) selector = random_selector(rng);  // else a null selector
      budgets.push_back({coin(rng, 0.7) ? "ml" : "other", "pdb-" + std::to_string(b), selector});
    }
    StringMap labels;
    for (const auto& key : kKeys) {
      if (coin(rng, 0.7)) labels[key] = value(rng);
    }
    bool want = false;
    for (const auto& b : budgets) want = want || (b.namespace_name == "ml" && selects(b.selector, labels));
    const BudgetSet set(budgets);
    ASSERT_EQ(set.any_selects("ml", labels), want) << "case " << i;
    EXPECT_EQ(set.size(), budgets.size());
    (want ? selected : unselected)++;
  }
  EXPECT_GT(selected, 300);
  EXPECT_GT(unselected, 300);
}

}  // namespace
}  // namespace kgtest

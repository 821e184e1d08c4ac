// Which nodes a pod's required selectors admit (policies/node_affinity.h), as the
// scheduler's nodeaffinity.GetRequiredNodeAffinity(pod).Match decides it. The cases on
// input the API server would refuse are the classes the differential oracle (tests/oracle,
// seed 29) found; they reach kubegap as pod templates inside custom resources and through
// `check`, so they stay covered here without Go.
#include "policies/node_affinity.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace kubegap {
namespace {

const NodeInfo kNode = {"node-1", {{"zone", "a"}, {"pool", "gpu"}, {"rank", "+5"}}};

Requirement req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return Requirement{std::move(key), std::move(op), std::move(values)};
}

PodSpecView required(std::vector<NodeSelectorTerm> terms) {
  PodSpecView pod;
  pod.required_node_terms = std::move(terms);
  pod.required_node_affinity = true;
  return pod;
}

NodeSelectorTerm labels_term(std::vector<Requirement> expressions) { return {std::move(expressions), {}}; }
NodeSelectorTerm fields_term(std::vector<Requirement> fields) { return {{}, std::move(fields)}; }

TEST(NodeAffinity, NoRequirementAdmitsEveryNode) { EXPECT_TRUE(pod_admits_node(PodSpecView{}, kNode)); }

TEST(NodeAffinity, NodeSelectorIsPlainEquality) {
  PodSpecView pod;
  pod.node_selector = {{"zone", "a"}};
  EXPECT_TRUE(pod_admits_node(pod, kNode));
  pod.node_selector = {{"zone", "b"}};
  EXPECT_FALSE(pod_admits_node(pod, kNode));
  pod.node_selector = {{"rank", "+5"}};  // SelectorFromSet validates nothing
  EXPECT_TRUE(pod_admits_node(pod, kNode));
}

TEST(NodeAffinity, TermsAreOredAndRequirementsAnded) {
  EXPECT_TRUE(pod_admits_node(required({labels_term({req("zone", "In", {"b"})}), labels_term({req("pool", "Exists")})}),
                              kNode));
  EXPECT_FALSE(
      pod_admits_node(required({labels_term({req("zone", "In", {"a"}), req("pool", "DoesNotExist")})}), kNode));
}

TEST(NodeAffinity, RequiredAffinityWithoutTermsAdmitsNoNode) {  // oracle: "without terms"
  EXPECT_FALSE(pod_admits_node(required({}), kNode));
  EXPECT_FALSE(pod_admits_node(required({NodeSelectorTerm{}}), kNode));  // the empty term is dropped
}

TEST(NodeAffinity, RefusedRequirementSpoilsOnlyItsTerm) {  // oracle: NewRequirement classes
  const std::vector<Requirement> refused = {
      req("zone", "NotIn"),                 // NotIn without values
      req("zone", "Exists", {"a"}),         // Exists with values
      req("team", "DoesNotExist", {"10"}),  // DoesNotExist with values
      req("rank", "Gt", {"1", "2"}),        // Gt with two values
      req("rank", "Lt", {"x"}),             // Lt, not an integer
      req("bad key", "DoesNotExist"),       // invalid key
      req("zone", "NotIn", {" 1"}),         // invalid value
      req("zone", "in", {"a"}),             // unknown operator
  };
  for (const auto& r : refused) {
    EXPECT_FALSE(pod_admits_node(required({labels_term({r})}), kNode)) << r.key << " " << r.op;
    EXPECT_TRUE(pod_admits_node(required({labels_term({r}), labels_term({req("zone", "In", {"a"})})}), kNode))
        << r.key << " " << r.op;
  }
}

TEST(NodeAffinity, GtReadsAPlusSignedLabel) {  // oracle: "+5" read by Gt/Lt
  EXPECT_TRUE(pod_admits_node(required({labels_term({req("rank", "Gt", {"4"})})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({labels_term({req("rank", "Lt", {"5"})})}), kNode));
}

TEST(NodeAffinity, MatchFieldsTakeInOrNotInWithOneValue) {  // oracle: matchFields classes
  EXPECT_TRUE(pod_admits_node(required({fields_term({req("metadata.name", "In", {"node-1"})})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("metadata.name", "In", {"node-2"})})}), kNode));
  EXPECT_TRUE(pod_admits_node(required({fields_term({req("metadata.name", "NotIn", {"node-2"})})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("metadata.name", "In", {"node-1", "node-2"})})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("metadata.name", "In")})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("metadata.name", "Exists")})}), kNode));
}

TEST(NodeAffinity, AnotherFieldReadsEmpty) {  // oracle: "key not metadata.name"
  EXPECT_TRUE(pod_admits_node(required({fields_term({req("spec.unschedulable", "In", {""})})}), kNode));
  EXPECT_TRUE(pod_admits_node(required({fields_term({req("spec.unschedulable", "NotIn", {"x"})})}), kNode));
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("spec.unschedulable", "In", {"x"})})}), kNode));
}

TEST(NodeAffinity, NodeWithoutNameIsNotHeldToMatchFields) {  // oracle: "node: invalid name"
  const NodeInfo nameless = {"", {{"zone", "a"}}};
  EXPECT_TRUE(pod_admits_node(required({fields_term({req("metadata.name", "In", {"node-2"})})}), nameless));
  // ... but a field requirement that does not parse still spoils the term
  EXPECT_FALSE(pod_admits_node(required({fields_term({req("metadata.name", "Exists")})}), nameless));
}

}  // namespace
}  // namespace kubegap

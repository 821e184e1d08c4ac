// The cluster view from a file (--cluster-state): kubectl's `List` output, typed lists,
// multi-document YAML and JSON; PDB namespaces and selectors; Node zone labels; other
// kinds ignored; type errors named by file and line.
#include "webhook/core/cluster_state_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "policies/cluster_view.h"
#include "policies/label_selector.h"
#include "tests/webhook/test_util.h"

namespace kgtest {
namespace {

using kubegap::ClusterSnapshot;
using kubegap::ConfigError;
using kubegap::DisruptionBudget;
using kubegap::load_cluster_state_file;
using kubegap::parse_cluster_state;
using kubegap::Requirement;
using kubegap::selects;
using kubegap::StringMap;

constexpr const char* kZone = "topology.kubernetes.io/zone";

const DisruptionBudget* budget(const ClusterSnapshot& snapshot, const std::string& ns, const std::string& name) {
  for (const auto& b : snapshot.budgets_in(ns)) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::string config_error(const std::string& text, const std::string& source = "cluster.yaml") {
  try {
    parse_cluster_state(text, source);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

TEST(ClusterStateFile, ReadsKubectlGetListOutputOfPdbsAndNodes) {
  const auto snapshot = load_cluster_state_file(fixture_path("cluster/kubectl-get-pdb-nodes.yaml"));
  ASSERT_NE(snapshot, nullptr);
  EXPECT_EQ(snapshot->budget_count(), 2u);
  ASSERT_EQ(snapshot->budgets_in("ml-research").size(), 1u);
  const DisruptionBudget* training = budget(*snapshot, "ml-research", "llm-pretrain");
  ASSERT_NE(training, nullptr);
  ASSERT_TRUE(training->selector.has_value());
  EXPECT_EQ(training->selector->match_labels, (StringMap{{"training.kubeflow.org/job-name", "llm-pretrain"}}));
  EXPECT_TRUE(training->selector->match_expressions.empty());

  const DisruptionBudget* dns = budget(*snapshot, "kube-system", "coredns-pdb");
  ASSERT_NE(dns, nullptr);
  ASSERT_TRUE(dns->selector.has_value());
  ASSERT_EQ(dns->selector->match_expressions.size(), 1u);
  const Requirement& r = dns->selector->match_expressions[0];
  EXPECT_EQ(r.key, "k8s-app");
  EXPECT_EQ(r.op, "In");
  EXPECT_EQ(r.values, (std::vector<std::string>{"kube-dns"}));

  ASSERT_EQ(snapshot->nodes().size(), 2u);
  const auto* node17 = snapshot->node("gpu-node-17");
  ASSERT_NE(node17, nullptr);
  EXPECT_EQ(node17->labels.at(kZone), "us-east-1a");
  EXPECT_EQ(node17->labels.at("nvidia.com/gpu.count"), "8");
  const auto* node42 = snapshot->node("gpu-node-42");
  ASSERT_NE(node42, nullptr);
  EXPECT_EQ(node42->labels.at("failure-domain.beta.kubernetes.io/zone"), "us-east-1b");
}

TEST(ClusterStateFile, TypedListItemsWithoutKindTakeTheKindOfTheList) {
  // The API server's own list (GET /apis/policy/v1/poddisruptionbudgets) leaves kind off
  // its items.
  const auto snapshot = load_cluster_state_file(fixture_path("cluster/pdb-list.json"));
  EXPECT_EQ(snapshot->budget_count(), 1u);
  EXPECT_NE(budget(*snapshot, "ml-research", "llm-pretrain"), nullptr);

  const auto nodes = parse_cluster_state(R"(
apiVersion: v1
kind: NodeList
items:
- metadata: {name: n1, labels: {topology.kubernetes.io/zone: z1}}
- kind: Node
  metadata: {name: n2}
)",
                                         "nodes.yaml");
  EXPECT_EQ(nodes->nodes().size(), 2u);
  EXPECT_NE(nodes->node("n1"), nullptr);
  EXPECT_NE(nodes->node("n2"), nullptr);
}

TEST(ClusterStateFile, ReadsEveryDocumentOfAMultiDocumentFile) {
  const auto snapshot = parse_cluster_state(R"(---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: a
  namespace: team-a
spec:
  maxUnavailable: 0
  selector:
    matchLabels: {app: a}
---
# an empty document
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    topology.kubernetes.io/zone: eu-west-1a
---
apiVersion: v1
kind: Node
metadata:
  name: n2
  labels:
    topology.kubernetes.io/zone: eu-west-1b
...
)",
                                            "multi.yaml");
  EXPECT_EQ(snapshot->budget_count(), 1u);
  EXPECT_NE(budget(*snapshot, "team-a", "a"), nullptr);
  ASSERT_EQ(snapshot->nodes().size(), 2u);
  EXPECT_EQ(snapshot->node("n1")->labels.at(kZone), "eu-west-1a");
  EXPECT_EQ(snapshot->node("n2")->labels.at(kZone), "eu-west-1b");
}

TEST(ClusterStateFile, ReadsJson) {
  const auto snapshot = parse_cluster_state(
      R"({"apiVersion":"v1","kind":"List","items":[
          {"apiVersion":"policy/v1","kind":"PodDisruptionBudget",
           "metadata":{"name":"p","namespace":"ns"},
           "spec":{"selector":{"matchExpressions":[{"key":"tier","operator":"NotIn","values":["web","db"]}]}}},
          {"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"topology.kubernetes.io/zone":"z9"}}}]})",
      "cluster.json");
  const DisruptionBudget* p = budget(*snapshot, "ns", "p");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->selector.has_value());
  ASSERT_EQ(p->selector->match_expressions.size(), 1u);
  EXPECT_EQ(p->selector->match_expressions[0].op, "NotIn");
  EXPECT_EQ(p->selector->match_expressions[0].values, (std::vector<std::string>{"web", "db"}));
  ASSERT_NE(snapshot->node("n"), nullptr);
  EXPECT_EQ(snapshot->node("n")->labels.at(kZone), "z9");
}

TEST(ClusterStateFile, PdbWithoutNamespaceGoesToDefault) {
  const auto snapshot = parse_cluster_state(R"(
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: no-ns}
spec: {selector: {matchLabels: {app: x}}}
)",
                                            "cluster.yaml");
  EXPECT_EQ(snapshot->budgets_in("default").size(), 1u);
  EXPECT_NE(budget(*snapshot, "default", "no-ns"), nullptr);
  EXPECT_TRUE(snapshot->budgets_in("").empty());
}

TEST(ClusterStateFile, AbsentOrNullSelectorIsNullAndSelectsNothing) {
  const auto snapshot = parse_cluster_state(R"(
kind: PodDisruptionBudget
metadata: {name: absent, namespace: ns}
spec: {minAvailable: 1}
---
kind: PodDisruptionBudget
metadata: {name: explicit-null, namespace: ns}
spec: {minAvailable: 1, selector: null}
---
kind: PodDisruptionBudget
metadata: {name: tilde, namespace: ns}
spec:
  selector: ~
---
kind: PodDisruptionBudget
metadata: {name: no-spec, namespace: ns}
)",
                                            "cluster.yaml");
  for (const char* name : {"absent", "explicit-null", "tilde", "no-spec"}) {
    const DisruptionBudget* b = budget(*snapshot, "ns", name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_FALSE(b->selector.has_value()) << name;
    EXPECT_FALSE(selects(b->selector, StringMap{{"app", "x"}})) << name;
    EXPECT_FALSE(selects(b->selector, StringMap{})) << name;
  }
}

TEST(ClusterStateFile, EmptySelectorIsPresentAndSelectsEveryPod) {
  const auto snapshot = parse_cluster_state(R"(
kind: PodDisruptionBudget
metadata: {name: everything, namespace: ns}
spec: {maxUnavailable: 1, selector: {}}
)",
                                            "cluster.yaml");
  const DisruptionBudget* b = budget(*snapshot, "ns", "everything");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->selector.has_value());
  EXPECT_TRUE(b->selector->match_labels.empty());
  EXPECT_TRUE(b->selector->match_expressions.empty());
  EXPECT_TRUE(selects(b->selector, StringMap{{"app", "anything"}}));
  EXPECT_TRUE(selects(b->selector, StringMap{}));
}

TEST(ClusterStateFile, UnknownKindsAndKindlessObjectsAreIgnored) {
  const auto snapshot = parse_cluster_state(R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: ns}
data: {spec: "5"}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, labels: [not, a, map]}
spec: 5
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
---
metadata: {name: no-kind}
---
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata: {name: psp}
---
kind: Node
metadata: {name: only-node}
)",
                                            "cluster.yaml");
  EXPECT_EQ(snapshot->budget_count(), 0u);
  ASSERT_EQ(snapshot->nodes().size(), 1u);
  EXPECT_EQ(snapshot->nodes()[0].name, "only-node");
  EXPECT_TRUE(snapshot->nodes()[0].labels.empty());
}

TEST(ClusterStateFile, EmptyFileGivesAnEmptySnapshot) {
  for (const char* text : {"", "# nothing\n", "---\n---\n"}) {
    const auto snapshot = parse_cluster_state(text, "empty.yaml");
    ASSERT_NE(snapshot, nullptr);
    EXPECT_EQ(snapshot->budget_count(), 0u);
    EXPECT_TRUE(snapshot->nodes().empty());
  }
}

TEST(ClusterStateFile, QuotedLabelValuesStayStrings) {
  const auto snapshot = parse_cluster_state(R"(
kind: Node
metadata:
  name: n
  labels: {gpu.count: "8", ready: "true", zone-id: "0123"}
)",
                                            "cluster.yaml");
  EXPECT_EQ(snapshot->node("n")->labels, (StringMap{{"gpu.count", "8"}, {"ready", "true"}, {"zone-id", "0123"}}));
}

// ---------------------------------------------------------------------------------------
// Errors name the file and the line of the offending field (its key), not only of the
// document that holds it.

TEST(ClusterStateFile, LabelsAsAListIsAnErrorNamingFileAndLine) {
  const std::string message = config_error(R"(apiVersion: v1
kind: Node
metadata:
  name: ok
---
apiVersion: v1
kind: Node
metadata:
  name: bad
  labels: [a]
)");
  EXPECT_EQ(message, "cluster.yaml:10: Node.metadata.labels: expected an object");
}

TEST(ClusterStateFile, TypeErrorsInPdbsAreErrors) {
  EXPECT_NE(
      config_error("kind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {selector: {matchLabels: {app: [x]}}}\n")
          .find("cluster.yaml:3: PodDisruptionBudget.spec.selector.matchLabels.app: expected a string"),
      std::string::npos);
  EXPECT_NE(config_error("kind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {selector: []}\n")
                .find("PodDisruptionBudget.spec.selector: expected an object"),
            std::string::npos);
  EXPECT_NE(
      config_error("kind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {selector: {matchExpressions: {key: a}}}\n")
          .find("PodDisruptionBudget.spec.selector.matchExpressions: expected an array"),
      std::string::npos);
  EXPECT_NE(config_error("kind: PodDisruptionBudget\nmetadata: {name: 7}\n")
                .find("PodDisruptionBudget.metadata.name: expected a string"),
            std::string::npos);
}

TEST(ClusterStateFile, TypeErrorInAListItemIsAnError) {
  const std::string message = config_error(R"(apiVersion: v1
kind: List
items:
- kind: Node
  metadata: {name: n, labels: {zone: {a: b}}}
)");
  EXPECT_EQ(message.rfind("cluster.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("Node.metadata.labels.zone: expected a string"), std::string::npos) << message;
}

TEST(ClusterStateFile, ItemsThatAreNotAListAreAnError) {
  const std::string message = config_error("kind: List\nitems: {a: 1}\n");
  EXPECT_EQ(message, "cluster.yaml:2: List.items: expected an array");
}

TEST(ClusterStateFile, DocumentThatIsNotAnObjectIsAnError) {
  EXPECT_EQ(config_error("kind: Node\nmetadata: {name: n}\n---\n- a\n- b\n"),
            "cluster.yaml:4: expected a Kubernetes object");
  EXPECT_EQ(config_error("just a string\n"), "cluster.yaml:1: expected a Kubernetes object");
  EXPECT_NE(config_error("kind: List\nitems: [5]\n").find("expected a Kubernetes object"), std::string::npos);
}

TEST(ClusterStateFile, InvalidYamlIsAnErrorNamingFileAndLine) {
  const std::string message = config_error("kind: Node\nmetadata:\n  name: n\n labels: {a: b}\n");
  EXPECT_EQ(message.rfind("cluster.yaml:4: invalid YAML", 0), 0u) << message;
}

TEST(ClusterStateFile, MissingFileIsAConfigErrorNamingIt) {
  const std::string path = fixture_path("cluster/no-such-file.yaml");
  try {
    load_cluster_state_file(path);
    FAIL() << "loaded a missing file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ClusterStateFileHostile, CyclicAliasesAreRefusedNotExpanded) {
  EXPECT_THROW(
      kubegap::parse_cluster_state("apiVersion: v1\nkind: Node\nmetadata: &m {name: x, labels: *m}\n", "cyclic.yaml"),
      kubegap::ConfigError);
}

TEST(ClusterStateFileHostile, ExponentialAliasesAreRefused) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 12; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
    text += "]\n";
  }
  try {
    kubegap::parse_cluster_state(text, "laughs.yaml");
    FAIL() << "10^12 nodes were expanded";
  } catch (const kubegap::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("laughs.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("too many nodes"), std::string::npos) << e.what();
  }
}

// The security review's merge-key bomb as a --cluster-state file: refused by the node
// budget (a bounded walk) with the file and line, like the same file given to `check`.
TEST(ClusterStateFile, AMergeKeyBombIsRefusedNamingTheFileAndLine) {
  const std::string text = alias_bomb("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", true);
  try {
    parse_cluster_state(text, "state.yaml");
    FAIL() << "read a merge-key bomb";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("state.yaml:", 0), 0u) << message;
    EXPECT_NE(message.find("too many nodes"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kgtest

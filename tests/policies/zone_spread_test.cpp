// zone-spread: fires when the pod is hard-pinned to one zone (nodeSelector on a zone key,
// required affinity whose every term pins the same single zone, nodeName, or, with a
// cluster view, every admitted node in one zone of a multi-zone cluster).
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

constexpr const char* kCost = "if that zone fails the job cannot restart in another zone";
constexpr const char* kPool = "cloud.google.com/gke-nodepool";
constexpr const char* kGpuCount = "nvidia.com/gpu.count";

Requirement zone_in(std::vector<std::string> zones, std::string key = kZone) {
  return Requirement{std::move(key), "In", std::move(zones)};
}

// Two zones: the H100 pool exists only in us-east-1a; the A100 pool spans both zones.
std::shared_ptr<const ClusterSnapshot> two_zone_cluster() {
  return cluster({}, {node("h100-a1", {{kZone, "us-east-1a"}, {kPool, "h100"}, {kGpuCount, "8"}}),
                      node("h100-a2", {{kZone, "us-east-1a"}, {kPool, "h100"}, {kGpuCount, "8"}}),
                      node("a100-a1", {{kZone, "us-east-1a"}, {kPool, "a100"}, {kGpuCount, "4"}}),
                      node("a100-b1", {{kZone, "us-east-1b"}, {kPool, "a100"}, {kGpuCount, "4"}}),
                      node("cpu-b1", {{kZone, "us-east-1b"}, {kPool, "cpu"}})});
}

// Every node in one zone: nothing else to offer, so a pool selector pins nothing extra.
std::shared_ptr<const ClusterSnapshot> single_zone_cluster() {
  return cluster({}, {node("h100-a1", {{kZone, "us-east-1a"}, {kPool, "h100"}}),
                      node("cpu-a1", {{kZone, "us-east-1a"}, {kPool, "cpu"}})});
}

// The only H100 node carries no zone label at all: its zone is unknown.
std::shared_ptr<const ClusterSnapshot> unlabelled_node_cluster() {
  return cluster({}, {node("h100-a1", {{kZone, "us-east-1a"}, {kPool, "h100"}}), node("h100-x", {{kPool, "h100"}}),
                      node("cpu-b1", {{kZone, "us-east-1b"}, {kPool, "cpu"}})});
}

// Nodes labelled only with the deprecated zone key.
std::shared_ptr<const ClusterSnapshot> deprecated_label_cluster() {
  return cluster({}, {node("h100-a1", {{kOldZone, "eu-west-1a"}, {kPool, "h100"}}),
                      node("cpu-b1", {{kOldZone, "eu-west-1b"}, {kPool, "cpu"}})});
}

PodSpecView on_node(std::string name) {
  PodSpecView pod = gpu_pod();
  pod.node_name = std::move(name);
  return pod;
}

const std::vector<CheckRow> kRows = {
    // --- without a cluster view: the spec alone ---
    {"UnconstrainedPodPasses", gpu_pod(), Expect::kPasses},
    {"PinnedByNodeSelectorFires",
     with_node_selector(gpu_pod(), {{kZone, "us-east-1a"}}),
     Expect::kFires,
     {"pinned to zone \"us-east-1a\"", "nodeSelector topology.kubernetes.io/zone", kCost}},
    {"PinnedByDeprecatedZoneKeyFires",
     with_node_selector(gpu_pod(), {{kOldZone, "us-east-1b"}}),
     Expect::kFires,
     {"pinned to zone \"us-east-1b\"", kOldZone, kCost}},
    {"PoolNodeSelectorWithoutClusterPasses", with_node_selector(gpu_pod(), {{kPool, "h100"}}), Expect::kPasses},
    {"AffinityInSingleZoneFires",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"})})}),
     Expect::kFires,
     {"pinned to zone \"us-east-1a\"", "required node affinity", kCost}},
    {"AffinityInMultipleZonesPasses",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a", "us-east-1b", "us-east-1c"})})}), Expect::kPasses},
    {"AffinityDeprecatedZoneKeyFires",
     with_terms(gpu_pod(), {term({zone_in({"eu-west-1a"}, kOldZone)})}),
     Expect::kFires,
     {"pinned to zone \"eu-west-1a\"", "required node affinity"}},
    {"AllTermsPinSameZoneFires",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"}), {kPool, "In", {"h100"}}}),
                            term({zone_in({"us-east-1a"}), {kPool, "In", {"a100"}}})}),
     Expect::kFires,
     {"pinned to zone \"us-east-1a\"", "required node affinity"}},
    {"TermsPinningDifferentZonesPass",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"})}), term({zone_in({"us-east-1b"})})}), Expect::kPasses},
    {"OneTermWithoutZonePasses",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"})}), term({{kPool, "In", {"h100"}}})}), Expect::kPasses},
    {"InRequirementsIntersectingToOneZoneFire",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a", "us-east-1b"}), zone_in({"us-east-1b", "us-east-1c"})})}),
     Expect::kFires,
     {"pinned to zone \"us-east-1b\""}},
    // Found by the differential oracle: a term Kubernetes cannot parse, or an empty one,
    // admits no node, so it does not widen the zones the other terms pin.
    {"UnparsableTermBesideAPinStillPins",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"})}), term({{kPool, "NotIn", {}}})}),
     Expect::kFires,
     {"pinned to zone \"us-east-1a\""}},
    {"EmptyTermBesideAPinStillPins",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a"})}), NodeSelectorTerm{}}),
     Expect::kFires,
     {"pinned to zone \"us-east-1a\""}},
    {"PinInAnUnparsableTermIsNoPin", with_terms(gpu_pod(), {term({zone_in({"us-east-1a"}), {kPool, "Exists", {"x"}}})}),
     Expect::kPasses},
    {"NotInZoneWithoutClusterPasses", with_terms(gpu_pod(), {term({{kZone, "NotIn", {"us-east-1a"}}})}),
     Expect::kPasses},
    {"ExistsZonePasses", with_terms(gpu_pod(), {term({{kZone, "Exists", {}}})}), Expect::kPasses},
    {"DoesNotExistZonePasses", with_terms(gpu_pod(), {term({{kZone, "DoesNotExist", {}}})}), Expect::kPasses},
    {"NodeNameFires",
     on_node("gpu-node-7"),
     Expect::kFires,
     {"bound to node \"gpu-node-7\"", "by nodeName", "cannot run elsewhere"},
     {"in zone"}},
    // --- with a cluster view: which nodes the required selectors admit ---
    {"NodeNameWithClusterNamesTheZone",
     on_node("h100-a1"),
     Expect::kFires,
     {"bound to node \"h100-a1\" in zone \"us-east-1a\"", "by nodeName"},
     {},
     two_zone_cluster()},
    {"NodeNameOfUnknownNodeStillFires",
     on_node("gone-1"),
     Expect::kFires,
     {"bound to node \"gone-1\""},
     {"in zone"},
     two_zone_cluster()},
    {"PoolInOneZoneOfMultiZoneClusterFires",
     with_node_selector(gpu_pod(), {{kPool, "h100"}}),
     Expect::kFires,
     {"every node its node selector and affinity admit (2) is in zone \"us-east-1a\"", kCost},
     {},
     two_zone_cluster()},
    {"PoolSpanningZonesPasses",
     with_node_selector(gpu_pod(), {{kPool, "a100"}}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"SingleZoneClusterDoesNotFire",
     with_node_selector(gpu_pod(), {{kPool, "h100"}}),
     Expect::kPasses,
     {},
     {},
     single_zone_cluster()},
    {"AdmittedNodeWithoutZoneLabelPasses",
     with_node_selector(gpu_pod(), {{kPool, "h100"}}),
     Expect::kPasses,
     {},
     {},
     unlabelled_node_cluster()},
    {"NoAdmittedNodePasses",
     with_node_selector(gpu_pod(), {{kPool, "tpu-v5"}}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"UnconstrainedPodInMultiZoneClusterPasses", gpu_pod(), Expect::kPasses, {}, {}, two_zone_cluster()},
    {"AffinityMultiZoneInPassesWithCluster",
     with_terms(gpu_pod(), {term({zone_in({"us-east-1a", "us-east-1b"})})}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"NotInOtherZoneLeavesOneZoneFires",
     with_terms(gpu_pod(), {term({{kZone, "NotIn", {"us-east-1a"}}})}),
     Expect::kFires,
     {"is in zone \"us-east-1b\""},
     {},
     two_zone_cluster()},
    {"GtOnGpuCountAdmittingOneZoneFires",
     with_terms(gpu_pod(), {term({{kGpuCount, "Gt", {"4"}}})}),
     Expect::kFires,
     {"admit (2) is in zone \"us-east-1a\""},
     {},
     two_zone_cluster()},
    {"LtOnGpuCountAdmittingBothZonesPasses",
     with_terms(gpu_pod(), {term({{kGpuCount, "Lt", {"8"}}})}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"GtWithNonIntegerValueAdmitsNothingPasses",
     with_terms(gpu_pod(), {term({{kGpuCount, "Gt", {"four"}}})}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"TermsOredAcrossZonesPass",
     with_terms(gpu_pod(), {term({{kPool, "In", {"h100"}}}), term({{kPool, "In", {"cpu"}}})}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"NodeSelectorAndAffinityAreAnded",
     with_terms(with_node_selector(gpu_pod(), {{kPool, "a100"}}),
                {term({{kGpuCount, "In", {"4"}}, {kZone, "NotIn", {"us-east-1b"}}})}),
     Expect::kFires,
     {"admit (1) is in zone \"us-east-1a\""},
     {},
     two_zone_cluster()},
    {"MatchFieldsMetadataNamePinsToOneNodesZone",
     with_terms(gpu_pod(), {NodeSelectorTerm{{}, {{"metadata.name", "In", {"a100-b1"}}}}}),
     Expect::kFires,
     {"admit (1) is in zone \"us-east-1b\""},
     {},
     two_zone_cluster()},
    {"EmptyTermAdmitsNoNodePasses",
     with_terms(gpu_pod(), {NodeSelectorTerm{}}),
     Expect::kPasses,
     {},
     {},
     two_zone_cluster()},
    {"DeprecatedZoneLabelOnNodesIsDetected",
     with_node_selector(gpu_pod(), {{kPool, "h100"}}),
     Expect::kFires,
     {"is in zone \"eu-west-1a\""},
     {},
     deprecated_label_cluster()},
};

class ZoneSpreadTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(ZoneSpreadTable, Rule) { verify_row(GetParam(), check_zone_spread); }

INSTANTIATE_TEST_SUITE_P(ZoneSpread, ZoneSpreadTable, ::testing::ValuesIn(kRows), row_name);

TEST(ZoneSpread, MessageDoesNotDemandMultiZoneGangs) {
  const auto gap = run_check(check_zone_spread, with_node_selector(gpu_pod(), {{kZone, "us-east-1a"}}));
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->message.find("restart"), std::string::npos);
  EXPECT_EQ(gap->message.find("spread"), std::string::npos) << gap->message;
  EXPECT_NE(gap->reason.find("us-east-1a"), std::string::npos) << gap->reason;
}

}  // namespace
}  // namespace kgtest

// gpu-health-tolerations (accelerator pods only): fires on a blanket toleration, on
// not-ready/unreachable NoExecute tolerations not strictly below 300 s (the API server's
// default, which every untuned pod arrives with), and on an untimed GPU-fault toleration.
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

constexpr const char* kXid = "nvidia.com/gpu-xid-error";
// What the warning says happens with the API server's 300 s default, and how to fix it.
constexpr const char* kBound300 = "stays on an unresponsive node 300 s before eviction";
constexpr const char* kFix300 = "fix: add them as NoExecute tolerations with tolerationSeconds < 300";

std::vector<Toleration> plus(std::vector<Toleration> base, std::vector<Toleration> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

PodSpecView gpu_in_init_container_only() {
  PodSpecView pod = cpu_pod();
  pod.init_containers.push_back({.name = "warmup", .resources = {"nvidia.com/gpu"}, .volume_mounts = {}});
  return pod;
}

PodSpecView requesting(std::string resource) {
  PodSpecView pod = cpu_pod();
  pod.containers.front().resources.push_back(std::move(resource));
  return pod;
}

const std::vector<CheckRow> kRows = {
    {"DefaultTolerationsOf300SecondsFire",
     gpu_pod(),
     Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s", kBound300, "(default not-ready/unreachable tolerations)",
      kFix300},
     {"GPU"}},  // nothing here is about GPUs: the same words for a TPU pod
    {"BoundedAt299SecondsPasses", with_tolerations(gpu_pod(), health_tolerations(299)), Expect::kPasses},
    {"BoundedAt30SecondsPasses", with_tolerations(gpu_pod(), health_tolerations(30)), Expect::kPasses},
    {"ExplicitlyAt300SecondsFires",
     with_tolerations(gpu_pod(), health_tolerations(300)),
     Expect::kFires,
     {"for 300 s"}},
    {"NotReady299ButUnreachable300FiresForUnreachableOnly",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute", 299),
                                  toleration(kUnreachable, "Exists", "NoExecute", 300)}),
     Expect::kFires,
     {"tolerates unreachable nodes for 300 s"},
     {"not-ready"}},
    {"NotReadyWithoutSecondsMeansForever",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute"),
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires,
     {"tolerates not-ready nodes with no time limit", "is never evicted from a not-ready node"},
     {"unreachable"}},
    {"BothWithoutSecondsFireOnce",
     with_tolerations(gpu_pod(),
                      {toleration(kNotReady, "Exists", "NoExecute"), toleration(kUnreachable, "Exists", "NoExecute")}),
     Expect::kFires,
     {"tolerates not-ready and unreachable nodes with no time limit"}},
    {"DifferentLongBoundsReportedSeparately",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute", 600),
                                  toleration(kUnreachable, "Exists", "NoExecute", 900)}),
     Expect::kFires,
     {"tolerates not-ready nodes for 600 s", "tolerates unreachable nodes for 900 s",
      "stays on a not-ready node 600 s before eviction (its not-ready toleration)",
      "stays on an unreachable node 900 s"}},
    {"NoTolerationsAtAllCountAs300",
     with_tolerations(gpu_pod(), {}),
     Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s"}},
    {"TheFirstOfTwoMatchingTolerationsDecides",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kNotReady, "Exists", "NoExecute", 3600)})),
     Expect::kPasses},
    {"ABoundedFirstTolerationBeatsALaterUntimedOne",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kNotReady, "Exists", "NoExecute")})),
     Expect::kPasses},
    {"NoScheduleTolerationDoesNotBoundEviction",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoSchedule"),
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires,
     {"tolerates not-ready nodes for 300 s"},
     {"unreachable"}},
    {"EmptyEffectUntimedTolerationIsForever",
     with_tolerations(gpu_pod(),
                      {toleration(kNotReady, "Exists", ""), toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires,
     {"tolerates not-ready nodes with no time limit"}},
    {"EqualOperatorWithEmptyValueCounts",
     with_tolerations(gpu_pod(),
                      {toleration(kNotReady, "Equal", "NoExecute", 60), toleration(kUnreachable, "", "NoExecute", 60)}),
     Expect::kPasses},
    {"NegativeSecondsMeanEvictAtOnce", with_tolerations(gpu_pod(), health_tolerations(-5)), Expect::kPasses},
    {"BlanketTolerationFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "")})),
     Expect::kFires,
     {"tolerates every taint", "no health or GPU-fault taint keeps it off or moves it off a failed node",
      "fix: replace the empty-key toleration"}},
    // Issue 29: an empty-key toleration with an effect tolerates only the taints of that
    // effect (ToleratesTaint), and the first toleration of a taint decides its eviction
    // (the taint-eviction controller's GetMatchingTolerations).
    {"EveryNoExecuteTaintIsNotEveryTaint",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "NoExecute")})),
     Expect::kFires,
     {"tolerates every NoExecute taint (empty key, operator Exists), no time limit: a GPU-fault NoExecute taint "
      "never evicts it",
      "fix: name the taints it tolerates instead of the empty key"},
     {"tolerates every taint", "keeps it off", "not-ready", "unreachable"}},
    {"EveryNoExecuteTaintFirstIsNeverEvicted",
     with_tolerations(gpu_pod(), plus({toleration("", "Exists", "NoExecute")}, health_tolerations(60))),
     Expect::kFires,
     {"tolerates every NoExecute taint (empty key, operator Exists), no time limit: never evicted from an "
      "unresponsive or GPU-failed node"},
     {"tolerates every taint", "not-ready"}},
    {"EveryNoScheduleTaintCanLandOnAQuarantinedNode",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "NoSchedule")})),
     Expect::kFires,
     {"tolerates every NoSchedule taint (empty key, operator Exists): can be scheduled onto a node quarantined for "
      "a GPU fault"},
     {"tolerates every taint", "not-ready", "unreachable"}},
    {"TheFirstMatchingTolerationDecidesNotTheShortest",
     with_tolerations(gpu_pod(),
                      {toleration(kNotReady, "Exists", "NoExecute"), toleration(kNotReady, "Exists", "NoExecute", 60),
                       toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires,
     {"is never evicted from a not-ready node"}},
    {"AnEqualValueThatNoTaintHasIsEvictedAtOnce",
     with_tolerations(gpu_pod(), {Toleration{kNotReady, "Equal", "x", "NoExecute", std::nullopt},
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kPasses},
    {"GpuFaultTaintWithoutSecondsFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoExecute")})),
     Expect::kFires,
     {"tolerates GPU-fault taint nvidia.com/gpu-xid-error (NoExecute) with no time limit",
      "that taint never evicts it from a node whose GPU failed",
      "fix: set tolerationSeconds on the toleration for nvidia.com/gpu-xid-error"},
     {"not-ready", "unreachable"}},
    {"GpuFaultTaintWithAValueStillCounts",
     with_tolerations(gpu_pod(),
                      plus(health_tolerations(60), {Toleration{kXid, "Equal", "79", "NoExecute", std::nullopt}})),
     Expect::kFires,
     {"tolerates GPU-fault taint nvidia.com/gpu-xid-error (NoExecute) with no time limit"}},
    {"GpuFaultTaintNoScheduleSaysSchedulable",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoSchedule")})),
     Expect::kFires,
     {"nvidia.com/gpu-xid-error (NoSchedule): can land on a quarantined node",
      "fix: remove the toleration for nvidia.com/gpu-xid-error"},
     {"tolerationSeconds"}},  // invalid on a NoSchedule toleration: never advise it
    {"GpuFaultTaintForEveryEffectFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "")})),
     Expect::kFires,
     {"nvidia.com/gpu-xid-error for every effect: can be scheduled onto a quarantined node, and that taint never "
      "evicts it",
      "fix: remove the toleration for nvidia.com/gpu-xid-error, or make it NoExecute with tolerationSeconds"}},
    {"GpuFaultTaintPreferNoSchedulePasses",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "PreferNoSchedule")})),
     Expect::kPasses},
    {"GpuFaultTaintWithSecondsPasses",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoExecute", 30)})),
     Expect::kPasses},
    {"OtherVendorTaintIsNotAGpuFaultTaint",
     with_tolerations(gpu_pod(),
                      plus(health_tolerations(60), {toleration("example.com/maintenance", "Exists", "NoExecute")})),
     Expect::kPasses},
    {"DefaultsAndUntimedGpuFaultReportBoth",
     with_tolerations(gpu_pod(),
                      plus(default_tolerations(), {toleration("nvidia.com/gpu-nvlink-error", "Exists", "NoExecute")})),
     Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s (API server default; policy: under 300 s); tolerates "
      "GPU-fault taint "
      "nvidia.com/gpu-nvlink-error (NoExecute) with no time limit",
      "300 s before eviction (default not-ready/unreachable tolerations); tolerates GPU-fault taint",
      "fix: add them as NoExecute tolerations with tolerationSeconds < 300; set tolerationSeconds on the "
      "toleration for nvidia.com/gpu-nvlink-error"}},
    {"NonAcceleratorPodIsSkipped", cpu_pod(), Expect::kPasses},
    {"NonAcceleratorPodWithBlanketTolerationIsSkipped", with_tolerations(cpu_pod(), {toleration("", "Exists", "")}),
     Expect::kPasses},
    {"GpuOnlyInInitContainerMakesAcceleratorPod", gpu_in_init_container_only(), Expect::kFires, {"for 300 s"}},
    {"MigSliceMakesAcceleratorPod", requesting("nvidia.com/mig-1g.5gb"), Expect::kFires, {"for 300 s"}},
    {"NeuronCoreMakesAcceleratorPod", requesting("aws.amazon.com/neuroncore"), Expect::kFires, {"for 300 s"}},
    {"TpuPodIsNotCalledAGpuPod", requesting("google.com/tpu"), Expect::kFires, {kBound300, kFix300}, {"GPU"}},
};

class GpuHealthTolerationsTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(GpuHealthTolerationsTable, Rule) { verify_row(GetParam(), check_gpu_health_tolerations); }

INSTANTIATE_TEST_SUITE_P(GpuHealthTolerations, GpuHealthTolerationsTable, ::testing::ValuesIn(kRows), row_name);

TEST(GpuHealthTolerations, BoundComesFromPolicyAndIsStrict) {
  const PodSpecView pod = with_tolerations(gpu_pod(), health_tolerations(120));
  Policy policy = default_policy();
  policy.health_toleration_seconds_bound = 121;
  EXPECT_FALSE(run_check(check_gpu_health_tolerations, pod, nullptr, "ml", policy));
  policy.health_toleration_seconds_bound = 120;
  const auto gap = run_check(check_gpu_health_tolerations, pod, nullptr, "ml", policy);
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->reason.find("(policy: under 120 s)"), std::string::npos) << gap->reason;
  EXPECT_NE(gap->remedy.find("tolerationSeconds < 120"), std::string::npos) << gap->remedy;
}

TEST(GpuHealthTolerations, GpuFaultTaintsComeFromPolicy) {
  const PodSpecView pod = with_tolerations(
      gpu_pod(), plus(health_tolerations(60), {toleration("amd.com/gpu-fault", "Exists", "NoExecute")}));
  EXPECT_FALSE(run_check(check_gpu_health_tolerations, pod));
  Policy policy = default_policy();
  policy.gpu_fault_taints.push_back("amd.com/gpu-fault");
  const auto gap = run_check(check_gpu_health_tolerations, pod, nullptr, "ml", policy);
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->message.find("amd.com/gpu-fault"), std::string::npos) << gap->message;
}

}  // namespace
}  // namespace kgtest

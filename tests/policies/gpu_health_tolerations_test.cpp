// gpu-health-tolerations (accelerator pods only): fires on a blanket toleration, on
// not-ready/unreachable NoExecute tolerations not strictly below 300 s (the API server's
// default, which every untuned pod arrives with), and on an untimed GPU-fault toleration.
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

constexpr const char* kXid = "nvidia.com/gpu-xid-error";
constexpr const char* kCost = "a failed GPU node keeps the job bound";

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
    {"DefaultTolerationsOf300SecondsFire", gpu_pod(), Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s", kCost}},
    {"BoundedAt299SecondsPasses", with_tolerations(gpu_pod(), health_tolerations(299)),
     Expect::kPasses},
    {"BoundedAt30SecondsPasses", with_tolerations(gpu_pod(), health_tolerations(30)),
     Expect::kPasses},
    {"ExplicitlyAt300SecondsFires", with_tolerations(gpu_pod(), health_tolerations(300)),
     Expect::kFires, {"for 300 s"}},
    {"NotReady299ButUnreachable300FiresForUnreachableOnly",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute", 299),
                                  toleration(kUnreachable, "Exists", "NoExecute", 300)}),
     Expect::kFires, {"tolerates unreachable nodes for 300 s"}, {"not-ready"}},
    {"NotReadyWithoutSecondsMeansForever",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute"),
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires, {"tolerates not-ready nodes with no time limit"}, {"unreachable"}},
    {"BothWithoutSecondsFireOnce",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute"),
                                  toleration(kUnreachable, "Exists", "NoExecute")}),
     Expect::kFires, {"tolerates not-ready and unreachable nodes with no time limit"}},
    {"DifferentLongBoundsReportedSeparately",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoExecute", 600),
                                  toleration(kUnreachable, "Exists", "NoExecute", 900)}),
     Expect::kFires, {"tolerates not-ready nodes for 600 s", "tolerates unreachable nodes for 900 s"}},
    {"NoTolerationsAtAllCountAs300", with_tolerations(gpu_pod(), {}), Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s"}},
    {"SmallestMatchingSecondsWins",
     with_tolerations(gpu_pod(), plus(health_tolerations(60),
                                      {toleration(kNotReady, "Exists", "NoExecute", 3600)})),
     Expect::kPasses},
    {"BoundedTolerationBeatsUntimedOneForSameKey",
     with_tolerations(gpu_pod(), plus(health_tolerations(60),
                                      {toleration(kNotReady, "Exists", "NoExecute")})),
     Expect::kPasses},
    {"NoScheduleTolerationDoesNotBoundEviction",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", "NoSchedule"),
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires, {"tolerates not-ready nodes for 300 s"}, {"unreachable"}},
    {"EmptyEffectUntimedTolerationIsForever",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Exists", ""),
                                  toleration(kUnreachable, "Exists", "NoExecute", 60)}),
     Expect::kFires, {"tolerates not-ready nodes with no time limit"}},
    {"EqualOperatorWithEmptyValueCounts",
     with_tolerations(gpu_pod(), {toleration(kNotReady, "Equal", "NoExecute", 60),
                                  toleration(kUnreachable, "", "NoExecute", 60)}),
     Expect::kPasses},
    {"NegativeSecondsMeanEvictAtOnce", with_tolerations(gpu_pod(), health_tolerations(-5)),
     Expect::kPasses},
    {"BlanketTolerationFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "")})),
     Expect::kFires, {"tolerates every taint", kCost}},
    {"BlanketNoExecuteTolerationFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "NoExecute")})),
     Expect::kFires, {"tolerates every taint"}},
    {"KeylessNoScheduleTolerationIsNotBlanket",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("", "Exists", "NoSchedule")})),
     Expect::kPasses},
    {"GpuFaultTaintWithoutSecondsFires",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoExecute")})),
     Expect::kFires, {"tolerates GPU-fault taint nvidia.com/gpu-xid-error with no time limit"},
     {"not-ready", "unreachable"}},
    {"GpuFaultTaintWithAValueStillCounts",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {Toleration{kXid, "Equal", "79", "NoExecute", std::nullopt}})),
     Expect::kFires, {"tolerates GPU-fault taint nvidia.com/gpu-xid-error with no time limit"}},
    {"GpuFaultTaintNoScheduleSaysSchedulable",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoSchedule")})),
     Expect::kFires, {"nvidia.com/gpu-xid-error (NoSchedule): schedulable onto a failed GPU"}},
    {"GpuFaultTaintWithSecondsPasses",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration(kXid, "Exists", "NoExecute", 30)})),
     Expect::kPasses},
    {"OtherVendorTaintIsNotAGpuFaultTaint",
     with_tolerations(gpu_pod(), plus(health_tolerations(60), {toleration("example.com/maintenance", "Exists", "NoExecute")})),
     Expect::kPasses},
    {"DefaultsAndUntimedGpuFaultReportBoth",
     with_tolerations(gpu_pod(), plus(default_tolerations(),
                                      {toleration("nvidia.com/gpu-nvlink-error", "Exists", "NoExecute")})),
     Expect::kFires,
     {"tolerates not-ready and unreachable nodes for 300 s; tolerates GPU-fault taint "
      "nvidia.com/gpu-nvlink-error with no time limit"}},
    {"NonAcceleratorPodIsSkipped", cpu_pod(), Expect::kPasses},
    {"NonAcceleratorPodWithBlanketTolerationIsSkipped",
     with_tolerations(cpu_pod(), {toleration("", "Exists", "")}), Expect::kPasses},
    {"GpuOnlyInInitContainerMakesAcceleratorPod", gpu_in_init_container_only(), Expect::kFires,
     {"for 300 s"}},
    {"MigSliceMakesAcceleratorPod", requesting("nvidia.com/mig-1g.5gb"), Expect::kFires,
     {"for 300 s"}},
    {"NeuronCoreMakesAcceleratorPod", requesting("aws.amazon.com/neuroncore"), Expect::kFires,
     {"for 300 s"}},
};

class GpuHealthTolerationsTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(GpuHealthTolerationsTable, Rule) { verify_row(GetParam(), check_gpu_health_tolerations); }

INSTANTIATE_TEST_SUITE_P(GpuHealthTolerations, GpuHealthTolerationsTable,
                         ::testing::ValuesIn(kRows), row_name);

TEST(GpuHealthTolerations, BoundComesFromPolicyAndIsStrict) {
  const PodSpecView pod = with_tolerations(gpu_pod(), health_tolerations(120));
  Policy policy = default_policy();
  policy.health_toleration_seconds_bound = 121;
  EXPECT_FALSE(run_check(check_gpu_health_tolerations, pod, nullptr, "ml", policy));
  policy.health_toleration_seconds_bound = 120;
  const auto gap = run_check(check_gpu_health_tolerations, pod, nullptr, "ml", policy);
  ASSERT_TRUE(gap);
  EXPECT_NE(gap->reason.find("tolerationSeconds < 120"), std::string::npos) << gap->reason;
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

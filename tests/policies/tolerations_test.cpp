// Taints and tolerations as Kubernetes decides them (policies/tolerations.h). Each case
// here is one the differential oracle (tests/oracle) found or guards, kept so that the
// semantics stay covered without Go.
#include "policies/tolerations.h"

#include <gtest/gtest.h>

#include <limits>

namespace {

using kubegap::eviction_delay;
using kubegap::first_untolerated;
using kubegap::kNeverEvicted;
using kubegap::Taint;
using kubegap::tolerates_taint;
using kubegap::Toleration;
using kubegap::with_default_tolerations;

Toleration tol(std::string key, std::string op, std::string effect, std::optional<std::int64_t> seconds = {}) {
  return Toleration{std::move(key), std::move(op), "", std::move(effect), seconds};
}

const Taint kFaultNoSchedule{"nvidia.com/gpu-xid-error", "79", "NoSchedule"};
const Taint kFaultNoExecute{"nvidia.com/gpu-xid-error", "79", "NoExecute"};
const Taint kNotReady{"node.kubernetes.io/not-ready", "", "NoExecute"};

TEST(Tolerations, AnEmptyKeyWithAnEffectToleratesOnlyThatEffect) {
  EXPECT_FALSE(tolerates_taint(tol("", "Exists", "NoExecute"), kFaultNoSchedule));
  EXPECT_TRUE(tolerates_taint(tol("", "Exists", "NoExecute"), kFaultNoExecute));
  EXPECT_TRUE(tolerates_taint(tol("", "Exists", "NoSchedule"), kFaultNoSchedule));
  EXPECT_FALSE(tolerates_taint(tol("", "Exists", "NoSchedule"), kFaultNoExecute));
  EXPECT_TRUE(tolerates_taint(tol("", "Exists", ""), kFaultNoExecute));
  EXPECT_FALSE(tolerates_taint(tol("nvidia.com/gpu-xid-error", "exists", ""), kFaultNoExecute)) << "case matters";
  EXPECT_FALSE(tolerates_taint(tol("nvidia.com/gpu-xid-error", "Equal", ""), kFaultNoExecute)) << "value 79 differs";
  EXPECT_EQ(first_untolerated({kFaultNoSchedule}, {tol("", "Exists", "NoExecute")}), 0u);
  EXPECT_EQ(first_untolerated({kFaultNoSchedule}, {tol("", "Exists", "NoSchedule")}), std::nullopt);
  EXPECT_EQ(first_untolerated({Taint{"a", "", "PreferNoSchedule"}}, {}), std::nullopt) << "only NoSchedule, NoExecute";
}

TEST(Tolerations, TheFirstTolerationOfATaintDecidesItsEviction) {
  const std::string k = "nvidia.com/gpu-xid-error";
  EXPECT_EQ(eviction_delay({tol(k, "Exists", "NoExecute", 100), tol(k, "Exists", "NoExecute")}, {kFaultNoExecute}),
            100);
  EXPECT_EQ(eviction_delay({tol(k, "Exists", "NoExecute"), tol(k, "Exists", "NoExecute", 100)}, {kFaultNoExecute}),
            kNeverEvicted);
  EXPECT_EQ(eviction_delay({tol(k, "Exists", "NoExecute", -5)}, {kFaultNoExecute}), 0);
  EXPECT_EQ(eviction_delay({tol(k, "Exists", "NoExecute", 0)}, {kFaultNoExecute}), 0);
  EXPECT_EQ(eviction_delay({}, {kFaultNoExecute}), 0) << "not tolerated: at once";
  EXPECT_EQ(eviction_delay({}, {kFaultNoSchedule}), kNeverEvicted) << "no NoExecute taint evicts";
  EXPECT_EQ(eviction_delay({tol("a", "Exists", "NoExecute", 100), tol("b", "Exists", "NoExecute")},
                           {Taint{"a", "", "NoExecute"}, Taint{"b", "", "NoExecute"}}),
            100);
}

TEST(Tolerations, SecondsPastTwoToTheSixtyThreeNanosecondsWrapAsInTheController) {
  // getMinTolerationTime returns time.Duration(seconds) * time.Second: it wraps.
  EXPECT_EQ(eviction_delay({tol("k", "Exists", "NoExecute", 9223372036)}, {Taint{"k", "", "NoExecute"}}), 9223372036);
  EXPECT_EQ(eviction_delay({tol("k", "Exists", "NoExecute", 9223372037)}, {Taint{"k", "", "NoExecute"}}),
            kNeverEvicted);
  EXPECT_EQ(eviction_delay({tol("k", "Exists", "NoExecute", 18446744074)}, {Taint{"k", "", "NoExecute"}}), 1);
  EXPECT_EQ(eviction_delay({tol("k", "Exists", "NoExecute", std::numeric_limits<std::int64_t>::max())},
                           {Taint{"k", "", "NoExecute"}}),
            kNeverEvicted);
}

TEST(Tolerations, TheApiServerAddsItsDefaultsOnlyWhereTheKeyHasNoNoExecuteToleration) {
  bool added = false;
  EXPECT_EQ(with_default_tolerations({}, &added).size(), 2u);
  EXPECT_TRUE(added);
  // An Equal toleration with a value no not-ready taint has still stops the default, so
  // the pod is evicted at once from a not-ready node (the plugin looks at key and effect).
  const auto stored = with_default_tolerations({Toleration{kNotReady.key, "Equal", "x", "NoExecute", {}}}, &added);
  EXPECT_EQ(stored.size(), 2u) << "the unreachable default only";
  EXPECT_EQ(eviction_delay(stored, {kNotReady}), 0);
  EXPECT_EQ(with_default_tolerations({tol("", "Exists", "NoExecute")}, &added).size(), 1u);
  EXPECT_FALSE(added);
}

}  // namespace

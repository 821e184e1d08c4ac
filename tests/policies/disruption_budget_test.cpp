// disruption-budget: passes when a policy/v1 PDB in the object's namespace selects the
// pod's labels; not evaluated (never a false warning) without a cluster view.
#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

PodSpecView labelled_pod() {
  return with_labels(gpu_pod(), {{"app", "trainer"},
                                 {"training.kubeflow.org/job-name", "llama"},
                                 {"training.kubeflow.org/replica-type", "worker"}});
}

DisruptionBudget pdb(std::optional<LabelSelector> selector, std::string ns = "ml") {
  return DisruptionBudget{std::move(ns), "train-pdb", std::move(selector)};
}

LabelSelector labels(StringMap match) { return LabelSelector{std::move(match), {}}; }
LabelSelector exprs(std::vector<Requirement> expressions, StringMap match = {}) {
  return LabelSelector{std::move(match), std::move(expressions)};
}

constexpr const char* kNoBudget = "no PodDisruptionBudget in namespace ml selects";

const std::vector<CheckRow> kRows = {
    {"NoClusterViewIsNotEvaluated", labelled_pod(), Expect::kNotEvaluated, {"no cluster view"}},
    {"NoBudgetsInClusterFires", labelled_pod(), Expect::kFires, {kNoBudget, "evict"}, {}, cluster({})},
    {"MatchLabelsSelectingPodPasses",
     labelled_pod(),
     Expect::kPasses,
     {},
     {},
     cluster({pdb(labels({{"training.kubeflow.org/job-name", "llama"}}))})},
    {"MatchLabelsOtherJobFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(labels({{"training.kubeflow.org/job-name", "gpt"}}))})},
    {"MatchLabelsEveryPairMustHold",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(labels({{"app", "trainer"}, {"tier", "gpu"}}))})},
    {"EmptySelectorSelectsEveryPodPasses", labelled_pod(), Expect::kPasses, {}, {}, cluster({pdb(LabelSelector{})})},
    {"EmptySelectorSelectsUnlabelledPodPasses", gpu_pod(), Expect::kPasses, {}, {}, cluster({pdb(LabelSelector{})})},
    {"NullSelectorSelectsNothingFires", labelled_pod(), Expect::kFires, {kNoBudget}, {}, cluster({pdb(std::nullopt)})},
    {"MatchingBudgetInOtherNamespaceFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(labels({{"app", "trainer"}}), "other")})},
    {"EmptySelectorInOtherNamespaceFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(LabelSelector{}, "default")})},
    {"BudgetFollowsObjectNamespace",
     labelled_pod(),
     Expect::kFires,
     {"no PodDisruptionBudget in namespace research"},
     {"namespace ml"},
     cluster({pdb(LabelSelector{}, "ml")}),
     "research"},
    {"MatchLabelsAndExpressionBothHoldPasses",
     labelled_pod(),
     Expect::kPasses,
     {},
     {},
     cluster({pdb(exprs({{"training.kubeflow.org/replica-type", "In", {"worker", "master"}}}, {{"app", "trainer"}}))})},
    {"MatchLabelsHoldButExpressionFailsFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(exprs({{"training.kubeflow.org/replica-type", "In", {"master"}}}, {{"app", "trainer"}}))})},
    {"NotInListingPodValueFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(exprs({{"app", "NotIn", {"trainer", "web"}}}))})},
    {"NotInOnAbsentKeyPasses",
     labelled_pod(),
     Expect::kPasses,
     {},
     {},
     cluster({pdb(exprs({{"tier", "NotIn", {"web"}}}))})},
    {"ExistsPasses",
     labelled_pod(),
     Expect::kPasses,
     {},
     {},
     cluster({pdb(exprs({{"training.kubeflow.org/job-name", "Exists", {}}}))})},
    {"DoesNotExistOnPresentKeyFires",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(exprs({{"app", "DoesNotExist", {}}}))})},
    {"UnknownOperatorSelectsNothing",
     labelled_pod(),
     Expect::kFires,
     {kNoBudget},
     {},
     cluster({pdb(exprs({{"app", "Equals", {"trainer"}}}))})},
    {"AnyOneOfSeveralBudgetsSuffices",
     labelled_pod(),
     Expect::kPasses,
     {},
     {},
     cluster({pdb(std::nullopt), pdb(labels({{"app", "web"}})), pdb(LabelSelector{}, "other"),
              pdb(labels({{"app", "trainer"}}))})},
};

class DisruptionBudgetTable : public ::testing::TestWithParam<CheckRow> {};

TEST_P(DisruptionBudgetTable, Rule) { verify_row(GetParam(), check_disruption_budget); }

INSTANTIATE_TEST_SUITE_P(DisruptionBudget, DisruptionBudgetTable, ::testing::ValuesIn(kRows), row_name);

TEST(DisruptionBudget, NotEvaluatedReasonComesFromContext) {
  const PodSpecView pod = labelled_pod();
  const WorkloadView object = pod_object(pod);
  const CheckContext ctx{object, default_policy(), nullptr, "cluster view has not synced", true};
  const auto gap = check_disruption_budget(pod, ctx);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->outcome, Outcome::kNotEvaluated);
  EXPECT_EQ(gap->reason, "cluster view has not synced");
  EXPECT_TRUE(gap->message.empty()) << "not-evaluated must not produce a warning body";
}

TEST(DisruptionBudget, AKindWithNoRowIsNotEvaluatedUnlessABudgetSelectsItsTemplateLabels) {
  const PodSpecView pod = labelled_pod();
  WorkloadView object = pod_object(pod);
  object.kind = "AdaptDLJob";
  object.unlisted_kind = true;
  const auto none = cluster({pdb(labels({{"app", "other"}}))});
  const CheckContext ctx{object, default_policy(), none.get(), "no cluster view", true};
  const auto gap = check_disruption_budget(pod, ctx);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->outcome, Outcome::kNotEvaluated) << "its controller may add labels a budget selects";
  EXPECT_NE(gap->reason.find("kind AdaptDLJob has no row"), std::string::npos) << gap->reason;
  EXPECT_TRUE(gap->message.empty());

  const auto selecting = cluster({pdb(labels({{"app", "trainer"}}))});
  const CheckContext found{object, default_policy(), selecting.get(), "no cluster view", true};
  EXPECT_FALSE(check_disruption_budget(pod, found)) << "a budget over the template's own labels is seen";

  object.unlisted_kind = false;  // a listed kind: the same view is a finding
  const CheckContext listed{object, default_policy(), none.get(), "no cluster view", true};
  const auto fires = check_disruption_budget(pod, listed);
  ASSERT_TRUE(fires);
  EXPECT_EQ(fires->outcome, Outcome::kFinding);
}

}  // namespace
}  // namespace kgtest

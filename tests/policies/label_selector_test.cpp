// Label selector semantics (metav1.LabelSelector as used by policy/v1 PDBs, plus the
// Gt/Lt operators of node selector requirements). The rows marked as found by the
// differential oracle (tests/oracle) keep its findings covered without Go.
#include "policies/label_selector.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace kubegap {
namespace {

struct SelectorRow {
  std::string name;
  std::optional<LabelSelector> selector;
  StringMap labels;
  bool selected;
};

void PrintTo(const SelectorRow& row, std::ostream* os) { *os << row.name; }

const StringMap kPod = {{"app", "trainer"}, {"job", "llama"}, {"rank", "12"}, {"tier", "gpu"}};

LabelSelector expr(std::string key, std::string op, std::vector<std::string> values = {}) {
  return LabelSelector{{}, {Requirement{std::move(key), std::move(op), std::move(values)}}};
}

const std::vector<SelectorRow> kRows = {
    // empty and null
    {"EmptySelectsLabelledPod", LabelSelector{}, kPod, true},
    {"EmptySelectsUnlabelledPod", LabelSelector{}, {}, true},
    {"NullSelectsNothing", std::nullopt, kPod, false},
    {"NullSelectsNotEvenUnlabelledPod", std::nullopt, {}, false},
    // matchLabels
    {"MatchLabelsEqualValueSelects", LabelSelector{{{"app", "trainer"}}, {}}, kPod, true},
    {"MatchLabelsOtherValueDoesNot", LabelSelector{{{"app", "web"}}, {}}, kPod, false},
    {"MatchLabelsMissingKeyDoesNot", LabelSelector{{{"team", "ml"}}, {}}, kPod, false},
    {"MatchLabelsEmptyValueNeedsEmptyLabel", LabelSelector{{{"app", ""}}, {}}, kPod, false},
    {"MatchLabelsEveryPairMustHold", LabelSelector{{{"app", "trainer"}, {"job", "gpt"}}, {}}, kPod, false},
    {"MatchLabelsAllPairsHoldSelects", LabelSelector{{{"app", "trainer"}, {"job", "llama"}}, {}}, kPod, true},
    // matchLabels AND matchExpressions
    {"LabelsAndExpressionsBothHoldSelects", LabelSelector{{{"app", "trainer"}}, {{"tier", "In", {"gpu", "tpu"}}}}, kPod,
     true},
    {"LabelsHoldButExpressionFailsDoesNot", LabelSelector{{{"app", "trainer"}}, {{"tier", "In", {"cpu"}}}}, kPod,
     false},
    {"ExpressionHoldsButLabelsFailDoesNot", LabelSelector{{{"app", "web"}}, {{"tier", "In", {"gpu"}}}}, kPod, false},
    {"EveryExpressionMustHold", LabelSelector{{}, {{"tier", "Exists", {}}, {"app", "DoesNotExist", {}}}}, kPod, false},
    // In / NotIn / Exists / DoesNotExist
    {"InMultiValueSelects", expr("job", "In", {"gpt", "llama", "opt"}), kPod, true},
    {"InValueNotListedDoesNot", expr("job", "In", {"gpt", "opt"}), kPod, false},
    {"InMissingKeyDoesNot", expr("team", "In", {"ml"}), kPod, false},
    {"NotInListedValueDoesNot", expr("job", "NotIn", {"llama"}), kPod, false},
    {"NotInOtherValueSelects", expr("job", "NotIn", {"gpt"}), kPod, true},
    {"NotInMissingKeySelects", expr("team", "NotIn", {"ml"}), kPod, true},
    {"ExistsPresentSelects", expr("tier", "Exists"), kPod, true},
    {"ExistsMissingDoesNot", expr("team", "Exists"), kPod, false},
    {"DoesNotExistMissingSelects", expr("team", "DoesNotExist"), kPod, true},
    {"DoesNotExistPresentDoesNot", expr("tier", "DoesNotExist"), kPod, false},
    // unknown operators select nothing, even where the intent would match
    {"UnknownOperatorSelectsNothing", expr("app", "Equals", {"trainer"}), kPod, false},
    {"LowercaseOperatorIsUnknown", expr("app", "in", {"trainer"}), kPod, false},
    {"EmptyOperatorIsUnknown", expr("app", "", {"trainer"}), kPod, false},
    // Gt and Lt are node selector operators: LabelSelectorAsSelector refuses them
    {"GtInLabelSelectorSelectsNothing", expr("rank", "Gt", {"7"}), kPod, false},
    {"LtInLabelSelectorSelectsNothing", expr("rank", "Lt", {"100"}), kPod, false},
    // Found by the differential oracle (tests/oracle, seed 29): a selector that
    // labels.NewRequirement refuses selects nothing, even where its intent would match.
    {"NotInWithoutValuesSelectsNothing", expr("team", "NotIn"), kPod, false},
    {"InWithoutValuesSelectsNothing", expr("team", "In"), kPod, false},
    {"DoesNotExistWithValuesSelectsNothing", expr("team", "DoesNotExist", {"10"}), kPod, false},
    {"ExistsWithValuesSelectsNothing", expr("tier", "Exists", {"gpu"}), kPod, false},
    {"EmptyKeySelectsNothing", expr("", "DoesNotExist"), kPod, false},
    {"EmptyPrefixSelectsNothing", expr("/team", "DoesNotExist"), kPod, false},
    {"EmptyNameAfterPrefixSelectsNothing", expr("example.com/", "DoesNotExist"), kPod, false},
    {"UppercasePrefixSelectsNothing", expr("Example.com/team", "DoesNotExist"), kPod, false},
    {"TwoSlashesSelectsNothing", expr("a/b/c", "DoesNotExist"), kPod, false},
    {"NameOf64SelectsNothing", expr(std::string(64, 'k'), "DoesNotExist"), kPod, false},
    {"NameOf63Selects", expr(std::string(63, 'k'), "DoesNotExist"), kPod, true},
    {"PrefixedKeySelects", expr("example.com/team", "DoesNotExist"), kPod, true},
    {"ValueWithSpaceSelectsNothing", expr("team", "NotIn", {" 1"}), kPod, false},
    {"ValueStartingWithDashSelectsNothing", expr("team", "NotIn", {"-a"}), kPod, false},
    {"ValueOf64SelectsNothing", expr("team", "NotIn", {std::string(64, 'v')}), kPod, false},
    {"EmptyValueIsValid", expr("team", "NotIn", {""}), kPod, true},
    {"MatchLabelsInvalidKeySelectsNothing", LabelSelector{{{"bad key", "a"}}, {}}, {{"bad key", "a"}}, false},
    {"MatchLabelsInvalidValueSelectsNothing", LabelSelector{{{"app", "-x"}}, {}}, {{"app", "-x"}}, false},
    {"OneRefusedRequirementSpoilsTheSelector",
     LabelSelector{{{"app", "trainer"}}, {{"tier", "Exists", {}}, {"team", "NotIn", {}}}}, kPod, false},
};

// Gt and Lt, as node selector requirements read them (requirement_matches): integers as
// strconv.ParseInt reads them; anything else never matches.
struct RequirementRow {
  std::string name;
  Requirement requirement;
  StringMap labels;
  bool matches;
};

void PrintTo(const RequirementRow& row, std::ostream* os) { *os << row.name; }

Requirement req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return Requirement{std::move(key), std::move(op), std::move(values)};
}

const std::vector<RequirementRow> kNumericRows = {
    // Gt / Lt compare integers; anything else never matches
    {"GtLargerMatches", req("rank", "Gt", {"7"}), kPod, true},
    {"GtEqualDoesNot", req("rank", "Gt", {"12"}), kPod, false},
    {"LtLargerBoundMatches", req("rank", "Lt", {"100"}), kPod, true},
    {"LtComparesNumbersNotStrings", req("rank", "Lt", {"9"}), kPod, false},
    {"GtNegativeBoundMatches", req("rank", "Gt", {"-3"}), kPod, true},
    {"GtNonIntegerLabelDoesNot", req("tier", "Gt", {"1"}), kPod, false},
    {"LtNonIntegerLabelDoesNot", req("tier", "Lt", {"1"}), kPod, false},
    {"GtNonIntegerBoundDoesNot", req("rank", "Gt", {"seven"}), kPod, false},
    {"GtDecimalBoundDoesNot", req("rank", "Gt", {"1.5"}), kPod, false},
    {"GtTrailingJunkLabelDoesNot", req("v", "Gt", {"1"}), {{"v", "12abc"}}, false},
    {"GtEmptyLabelDoesNot", req("v", "Gt", {"-1"}), {{"v", ""}}, false},
    {"GtTwoBoundsDoesNot", req("rank", "Gt", {"1", "2"}), kPod, false},
    {"GtNoBoundDoesNot", req("rank", "Gt"), kPod, false},
    {"LtMissingKeyDoesNot", req("team", "Lt", {"100"}), kPod, false},
    {"GtOverflowingLabelDoesNot", req("v", "Gt", {"1"}), {{"v", "99999999999999999999999"}}, false},
    // found by the oracle: ParseInt takes a '+' sign, once
    {"GtPlusSignedLabelIsANumber", req("v", "Gt", {"4"}), {{"v", "+5"}}, true},
    {"LtPlusSignedBoundIsANumber", req("v", "Lt", {"+5"}), {{"v", "4"}}, true},
    {"GtPlusMinusLabelDoesNot", req("v", "Gt", {"-9"}), {{"v", "+-5"}}, false},
    {"GtBarePlusLabelDoesNot", req("v", "Gt", {"-9"}), {{"v", "+"}}, false},
};

class NumericRequirementTable : public ::testing::TestWithParam<RequirementRow> {};

TEST_P(NumericRequirementTable, Rule) {
  const RequirementRow& row = GetParam();
  EXPECT_EQ(requirement_matches(row.requirement, row.labels), row.matches);
}

INSTANTIATE_TEST_SUITE_P(Requirement, NumericRequirementTable, ::testing::ValuesIn(kNumericRows),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(LabelSelector, RequirementValidityFollowsNewRequirement) {
  EXPECT_TRUE(requirement_valid(req("rank", "Gt", {"7"}), Operators::kNodeSelector));
  EXPECT_FALSE(requirement_valid(req("rank", "Gt", {"7"}), Operators::kLabelSelector));
  EXPECT_FALSE(requirement_valid(req("rank", "Gt", {"1", "2"}), Operators::kNodeSelector));
  EXPECT_FALSE(requirement_valid(req("rank", "Lt", {"1.5"}), Operators::kNodeSelector));
  EXPECT_TRUE(requirement_valid(req("rank", "Lt", {"5"}), Operators::kNodeSelector));
  EXPECT_FALSE(requirement_valid(req("rank", "Lt", {"-5"}), Operators::kNodeSelector));  // no label value
  EXPECT_FALSE(requirement_valid(req("rank", "Lt", {"+5"}), Operators::kNodeSelector));  // no label value
  EXPECT_FALSE(requirement_valid(req("rank", "In"), Operators::kNodeSelector));
  EXPECT_FALSE(requirement_valid(req("rank", "in", {"a"}), Operators::kNodeSelector));
  EXPECT_TRUE(requirement_valid(req("example.com/rank", "In", {"a", ""}), Operators::kLabelSelector));
}

class LabelSelectorTable : public ::testing::TestWithParam<SelectorRow> {};

TEST_P(LabelSelectorTable, Rule) {
  const SelectorRow& row = GetParam();
  EXPECT_EQ(selects(row.selector, row.labels), row.selected);
}

INSTANTIATE_TEST_SUITE_P(LabelSelector, LabelSelectorTable, ::testing::ValuesIn(kRows),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(LabelSelector, SingleExpressionSelectorAgreesWithRequirementMatches) {
  // selects() with one valid expression and no matchLabels must be exactly
  // requirement_matches().
  for (const auto& row : kRows) {
    if (!row.selector || !row.selector->match_labels.empty() || row.selector->match_expressions.size() != 1 ||
        !requirement_valid(row.selector->match_expressions.front(), Operators::kLabelSelector)) {
      continue;
    }
    EXPECT_EQ(requirement_matches(row.selector->match_expressions.front(), row.labels), row.selected) << row.name;
  }
}

}  // namespace
}  // namespace kubegap

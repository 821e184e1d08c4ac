// Label selector semantics (metav1.LabelSelector as used by policy/v1 PDBs, plus the
// Gt/Lt operators of node selector requirements).
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
    // Gt / Lt compare integers; anything else never matches
    {"GtLargerSelects", expr("rank", "Gt", {"7"}), kPod, true},
    {"GtEqualDoesNot", expr("rank", "Gt", {"12"}), kPod, false},
    {"LtLargerBoundSelects", expr("rank", "Lt", {"100"}), kPod, true},
    {"LtComparesNumbersNotStrings", expr("rank", "Lt", {"9"}), kPod, false},
    {"GtNegativeBoundSelects", expr("rank", "Gt", {"-3"}), kPod, true},
    {"GtNonIntegerLabelDoesNot", expr("tier", "Gt", {"1"}), kPod, false},
    {"LtNonIntegerLabelDoesNot", expr("tier", "Lt", {"1"}), kPod, false},
    {"GtNonIntegerBoundDoesNot", expr("rank", "Gt", {"seven"}), kPod, false},
    {"GtDecimalBoundDoesNot", expr("rank", "Gt", {"1.5"}), kPod, false},
    {"GtTrailingJunkLabelDoesNot", expr("v", "Gt", {"1"}), {{"v", "12abc"}}, false},
    {"GtEmptyLabelDoesNot", expr("v", "Gt", {"-1"}), {{"v", ""}}, false},
    {"GtTwoBoundsDoesNot", expr("rank", "Gt", {"1", "2"}), kPod, false},
    {"GtNoBoundDoesNot", expr("rank", "Gt"), kPod, false},
    {"LtMissingKeyDoesNot", expr("team", "Lt", {"100"}), kPod, false},
    {"GtOverflowingLabelDoesNot", expr("v", "Gt", {"1"}), {{"v", "99999999999999999999999"}}, false},
};

class LabelSelectorTable : public ::testing::TestWithParam<SelectorRow> {};

TEST_P(LabelSelectorTable, Rule) {
  const SelectorRow& row = GetParam();
  EXPECT_EQ(selects(row.selector, row.labels), row.selected);
}

INSTANTIATE_TEST_SUITE_P(LabelSelector, LabelSelectorTable, ::testing::ValuesIn(kRows),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(LabelSelector, SingleExpressionSelectorAgreesWithRequirementMatches) {
  // selects() with one expression and no matchLabels must be exactly requirement_matches().
  for (const auto& row : kRows) {
    if (!row.selector || !row.selector->match_labels.empty() || row.selector->match_expressions.size() != 1) {
      continue;
    }
    EXPECT_EQ(requirement_matches(row.selector->match_expressions.front(), row.labels), row.selected) << row.name;
  }
}

}  // namespace
}  // namespace kubegap

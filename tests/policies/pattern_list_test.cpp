#include "policies/pattern_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policies/policy.h"

namespace kgtest {
namespace {

using kubegap::byte_mask;
using kubegap::PatternList;
using kubegap::wildcard_match_icase;

// Every string over `alphabet` up to `longest` bytes, the empty one first.
std::vector<std::string> all(std::string_view alphabet, std::size_t longest) {
  std::vector<std::string> out = {""};
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].size() == longest) continue;
    for (const char c : alphabet) out.push_back(out[i] + c);
  }
  return out;
}

// The byte mask passes over only entries that cannot match: for every pattern up to four
// bytes over letters in both cases, a digit, '-', '!' and `*`, against every text over
// letters, a digit, '_', '-' and '=' ('!' and '=' share a bit of the mask), the list says
// what wildcard_match_icase says. It fails if a byte is left out of a pattern's mask or
// the text's, or if case is folded in one and not in the other.
TEST(PatternList, MatchesAsWildcardMatchIcaseDoes) {
  const auto patterns = all("aB7-!*", 4);
  const auto texts = all("Ab7_-=", 4);
  for (const auto& p : patterns) {
    const PatternList list{p};
    for (const auto& t : texts) {
      ASSERT_EQ(list.matches(t), wildcard_match_icase(p, t)) << "'" << p << "' on '" << t << "'";
    }
  }
}

TEST(PatternList, ALongListMatchesWhenAnyEntryDoes) {
  const PatternList hints{"nvidia-smi", "*benchmark*", "osu_*", "*_perf", "pi"};
  EXPECT_TRUE(hints.matches("run_BENCHMARK.py"));
  EXPECT_TRUE(hints.matches("all_reduce_perf"));
  EXPECT_TRUE(hints.matches("osu_latency"));
  EXPECT_TRUE(hints.matches("PI"));
  EXPECT_FALSE(hints.matches("pip"));
  EXPECT_FALSE(hints.matches("train.py"));
  EXPECT_FALSE(hints.matches(""));
  EXPECT_FALSE(PatternList{}.matches("anything"));
}

TEST(PatternList, TheMaskHasABitForEachByteAndFoldsCase) {
  EXPECT_EQ(byte_mask(""), 0u);
  EXPECT_EQ(byte_mask("a"), byte_mask("A"));
  EXPECT_EQ(byte_mask("abc"), byte_mask("a") | byte_mask("b") | byte_mask("c"));
  EXPECT_NE(byte_mask("a"), byte_mask("b"));
  EXPECT_NE(byte_mask("-"), byte_mask("_"));
  EXPECT_NE(byte_mask("0"), byte_mask("9"));
  EXPECT_EQ(byte_mask("!"), byte_mask("="));  // 33 and 61: other bytes share 28 bits
}

// flag_last: what every flag an entry can name ends with, folded as flags are; nothing for
// a name that is a pattern or only dashes.
TEST(PatternList, FlagEntriesKnowTheLastByteOfTheirName) {
  const PatternList flags{"no_save", "save-Steps=0", "--X=1", "*data*=synthetic*", "--", "=on", "trainer.Benchmark"};
  EXPECT_EQ(flags.compiled(0).flag_last, 'e');
  EXPECT_EQ(flags.compiled(1).flag_last, 's');
  EXPECT_EQ(flags.compiled(2).flag_last, 'x');
  EXPECT_EQ(flags.compiled(3).flag_last, '\0');
  EXPECT_EQ(flags.compiled(4).flag_last, '\0');
  EXPECT_EQ(flags.compiled(5).flag_last, '\0');
  EXPECT_EQ(flags.compiled(6).flag_last, 'k');
  EXPECT_EQ(PatternList{"dry-run-"}.compiled(0).flag_last, '_');
  // The bytes every spelling of the name holds: not its dashes, underscores or `*`, nor
  // anything of its value.
  EXPECT_EQ(PatternList{"--Save_Dir=x*"}.compiled(0).name_bytes, byte_mask("savedir"));
  EXPECT_EQ(PatternList{"*data*=synthetic"}.compiled(0).name_bytes, byte_mask("data"));
}

// Every way of setting the list recomputes what it knows of its entries: a stale mask
// would pass over an entry that matches.
TEST(PatternList, SettingTheListRecompilesIt) {
  PatternList list{"sleep"};
  list = std::vector<std::string>{"*benchmark*"};
  EXPECT_TRUE(list.matches("benchmark.py"));
  EXPECT_FALSE(list.matches("sleep"));
  list.push_back("sl*p");
  EXPECT_TRUE(list.matches("SLEEP"));
  EXPECT_EQ(list.compiled(1).flag_last, '\0');
  list.clear();
  EXPECT_TRUE(list.empty());
  EXPECT_FALSE(list.matches("benchmark.py"));
  list = {"x"};
  EXPECT_TRUE(list.matches("X"));
  const std::vector<std::string>& entries = list;
  EXPECT_EQ(entries, std::vector<std::string>{"x"});
  EXPECT_EQ(list, PatternList{"x"});
}

}  // namespace
}  // namespace kgtest

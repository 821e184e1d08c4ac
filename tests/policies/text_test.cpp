// Rendering findings for the API server: warnings must be plain UTF-8 without control
// characters (the API server drops them otherwise) and at most 256 runes.
#include "policies/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>

namespace kubegap {
namespace {

using namespace std::string_literals;

// valid_utf8_without_controls: an independent decoder (not text.cpp's) that accepts only
// well-formed UTF-8 and rejects C0, DEL and C1 code points.
bool valid_utf8_without_controls(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (b(0) < 0x80) {
      cp = b(0), len = 1;
    } else if (b(0) >= 0xC2 && b(0) <= 0xDF) {
      len = 2;
    } else if (b(0) >= 0xE0 && b(0) <= 0xEF) {
      len = 3;
    } else if (b(0) >= 0xF0 && b(0) <= 0xF4) {
      len = 4;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    if (len > 1) {
      cp = b(0) & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k) {
        if ((b(k) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b(k) & 0x3F);
      }
      const std::uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return false;
    i += len;
  }
  return true;
}

std::size_t count_code_points(std::string_view s) {  // for valid UTF-8
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// ---------------------------------------------------------------- sanitize_text

struct SanitizeRow {
  std::string name;
  std::string input;
  std::string expected;
};

void PrintTo(const SanitizeRow& row, std::ostream* os) { *os << row.name; }

const std::vector<SanitizeRow> kSanitizeRows = {
    {"PlainAsciiUnchanged", "pinned to zone \"a\" (case x)", "pinned to zone \"a\" (case x)"},
    {"EmptyStaysEmpty", "", ""},
    {"NewlineBecomesQuestionMark", "a\nb", "a?b"},
    {"CarriageReturnBecomesQuestionMark", "a\r\nb", "a??b"},
    {"TabBecomesQuestionMark", "a\tb", "a?b"},
    {"NulBecomesQuestionMark", "a\0b"s, "a?b"},
    {"EscapeBecomesQuestionMark", "\x1b[31mred", "?[31mred"},
    {"DelBecomesQuestionMark",
     "a\x7f"
     "b",
     "a?b"},
    {"C1NextLineU0085BecomesOneQuestionMark",
     "a\xC2\x85"
     "b",
     "a?b"},
    {"C1U009FBecomesOneQuestionMark", "\xC2\x9F", "?"},
    {"NoBreakSpaceU00A0Kept",
     "a\xC2\xA0"
     "b",
     "a\xC2\xA0"
     "b"},
    {"TwoByteLetterKept", "Z\xC3\xBCrich", "Z\xC3\xBCrich"},
    {"ThreeByteKept",
     "\xE2\x82\xAC"
     "5",
     "\xE2\x82\xAC"
     "5"},
    {"FourByteEmojiKept", "ok \xF0\x9F\x9A\x80", "ok \xF0\x9F\x9A\x80"},
    {"LoneContinuationByteBecomesQuestionMark",
     "a\x80"
     "b",
     "a?b"},
    {"ByteFFBecomesQuestionMark",
     "a\xFF"
     "b",
     "a?b"},
    {"TruncatedSequenceAtEndBecomesQuestionMarks", "ab\xE2\x82", "ab??"},
    {"LeadByteFollowedByAsciiKeepsAscii", "\xE2(x", "?(x"},
};

class Sanitize : public ::testing::TestWithParam<SanitizeRow> {};

TEST_P(Sanitize, Rule) {
  const auto& row = GetParam();
  const std::string out = sanitize_text(row.input);
  EXPECT_EQ(out, row.expected);
  EXPECT_TRUE(valid_utf8_without_controls(out));
}

INSTANTIATE_TEST_SUITE_P(Text, Sanitize, ::testing::ValuesIn(kSanitizeRows),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(Text, InvalidUtf8FormsBecomeOnlyQuestionMarks) {
  // Overlong '/', a UTF-16 surrogate, a code point above U+10FFFF, an overlong NUL, and
  // 5- and 6-byte lead bytes: each must vanish into '?' and nothing else.
  for (const std::string& bad : {"\xC0\xAF"s, "\xED\xA0\x80"s, "\xF4\x90\x80\x80"s, "\xC0\x80"s, "\xE0\x80\xAF"s,
                                 "\xF8\x88\x80\x80\x80"s, "\xFC\x84\x80\x80\x80\x80"s}) {
    const std::string out = sanitize_text(bad);
    EXPECT_FALSE(out.empty());
    EXPECT_EQ(out.find_first_not_of('?'), std::string::npos) << out;
  }
}

TEST(Text, SanitizeOutputIsAlwaysCleanForEveryByte) {
  for (int b = 0; b < 256; ++b) {
    const std::string in = "x" + std::string(1, static_cast<char>(b)) + "y";
    const std::string out = sanitize_text(in);
    EXPECT_TRUE(valid_utf8_without_controls(out)) << "byte " << b;
    if (b >= 0x20 && b < 0x7F) {
      EXPECT_EQ(out, in);
    } else {
      EXPECT_EQ(out, "x?y") << "byte " << b;
    }
  }
}

// ---------------------------------------------------------------- truncate_runes

// The word-at-a-time scans against the byte-at-a-time rule they stand for: every byte
// value at every offset of a run of several words, and a start inside the run.
TEST(Text, WordScansFindTheFirstByteTheByteRuleFinds) {
  const auto printable = [](unsigned char b) { return b >= 0x20 && b < 0x7F; };
  const auto json_plain = [](unsigned char b) { return b >= 0x20 && b != '"' && b != '\\'; };
  for (int b = 0; b < 256; ++b) {
    for (std::size_t at = 0; at < 43; ++at) {
      std::string text(43, 'a');
      text[at] = static_cast<char>(b);
      const auto byte = static_cast<unsigned char>(b);
      EXPECT_EQ(printable_ascii_end(text), printable(byte) ? text.size() : at) << b << " at " << at;
      EXPECT_EQ(json_plain_end(text), json_plain(byte) ? text.size() : at) << b << " at " << at;
      const std::size_t from = at / 2;
      EXPECT_EQ(printable_ascii_end(text, from), printable(byte) ? text.size() : at) << b << " from " << from;
      EXPECT_EQ(json_plain_end(text, from), json_plain(byte) ? text.size() : at) << b << " from " << from;
    }
  }
  // A special byte after another in the same word: the first one counts.
  EXPECT_EQ(json_plain_end("ab\"c\\defghij"), 2u);
  EXPECT_EQ(printable_ascii_end("ab\x7f"
                                "\x01"
                                "cdefghij"),
            2u);
  EXPECT_EQ(printable_ascii_end(""), 0u);
  EXPECT_EQ(json_plain_end("abc", 3), 3u);
}

TEST(Text, RuneCountAgreesWithTheByteRuleAtEveryLength) {
  // ASCII, two-, three- and four-byte runes, at every length across the word boundary.
  const std::string runes = "a\xC3\xBC\xE6\x97\xA5\xF0\x9F\x9A\x80z\x80";
  std::string text;
  for (std::size_t n = 0; n < 40; ++n) {
    text += runes[(n * 7) % runes.size()];
    std::size_t expected = 0;
    for (const char c : text) expected += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    EXPECT_EQ(rune_count(text), expected) << n;
  }
  EXPECT_EQ(rune_count("\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5"), 3u);
}

TEST(Text, RuneCountCountsCodePointsNotBytes) {
  EXPECT_EQ(rune_count(""), 0u);
  EXPECT_EQ(rune_count("abc"), 3u);
  EXPECT_EQ(rune_count("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), 4u);  // a é € 😀
}

TEST(Text, TruncateKeepsTextThatFits) {
  EXPECT_EQ(truncate_runes("abcdef", 6), "abcdef");
  EXPECT_EQ(truncate_runes("\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xC3\xA9") << "2 runes, 4 bytes";
  EXPECT_EQ(truncate_runes("", 0), "");
}

TEST(Text, TruncateCutsWithEllipsis) {
  EXPECT_EQ(truncate_runes("abcdefghij", 6), "abc...");
  EXPECT_EQ(truncate_runes("h\xC3\xA9llo w\xC3\xB6rld", 5), "h\xC3\xA9...");
}

TEST(Text, TruncateNeverSplitsMultiByteSequencesAndRespectsTheLimit) {
  // 1-, 2-, 3- and 4-byte runes in turn, so every cut lands next to each width.
  std::string text;
  for (int i = 0; i < 10; ++i) text += "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  const std::size_t total = count_code_points(text);
  ASSERT_EQ(total, 40u);
  for (std::size_t limit = 0; limit <= total + 2; ++limit) {
    const std::string out = truncate_runes(text, limit);
    EXPECT_TRUE(valid_utf8_without_controls(out)) << "limit " << limit;
    EXPECT_LE(count_code_points(out), limit) << "limit " << limit;
    if (limit >= total) {
      EXPECT_EQ(out, text);
    } else if (limit > 3) {
      ASSERT_TRUE(ends_with(out, "...")) << out;
      const std::string kept = out.substr(0, out.size() - 3);
      EXPECT_TRUE(starts_with(text, kept)) << "a prefix of the original";
      EXPECT_EQ(count_code_points(kept), limit - 3) << "fills the room it has";
    }
  }
}

TEST(Text, TruncateToTinyLimitsStaysWithinThem) {
  EXPECT_EQ(truncate_runes("abcdef", 0), "");
  EXPECT_LE(rune_count(truncate_runes("abcdef", 1)), 1u);
  EXPECT_LE(rune_count(truncate_runes("abcdef", 2)), 2u);
  EXPECT_LE(rune_count(truncate_runes("abcdef", 3)), 3u);
  EXPECT_EQ(truncate_runes("abcdef", 4), "a...");
}

// ---------------------------------------------------------------- concat, Decimal

TEST(Text, ConcatJoinsPiecesAndDecimalSpellsEveryInt64) {
  EXPECT_EQ(concat({}), "");
  EXPECT_EQ(concat({"stays ", Decimal(300), " s"}), "stays 300 s");
  EXPECT_EQ(Decimal(0).view(), "0");
  EXPECT_EQ(Decimal(-7).view(), "-7");
  EXPECT_EQ(Decimal(std::numeric_limits<std::int64_t>::max()).view(), "9223372036854775807");
  EXPECT_EQ(Decimal(std::numeric_limits<std::int64_t>::min()).view(), "-9223372036854775808");
}

// ---------------------------------------------------------------- format_warning

// A finding's cases are a view of a list that outlives it (the registry's, in the product).
const std::vector<std::string> kZoneCases = {"osm-amsterdam-power-2022", "aws-sydney-power-2016"};

Finding finding(std::string message, std::vector<std::string> parts = {}) {
  return Finding{"zone-spread",
                 Outcome::kFinding,
                 std::move(message),
                 "pinned to zone a by nodeSelector",
                 kZoneCases,
                 std::move(parts),
                 false,
                 ""};
}

constexpr std::string_view kPrefix = "kubegap/zone-spread: ";
constexpr std::string_view kSuffix = " (case osm-amsterdam-power-2022)";

TEST(Text, WarningCarriesTheFixBeforeTheCaseWhenItFits) {
  Finding f = finding("pinned to zone \"a\"");
  f.remedy = "list more than one zone";
  EXPECT_EQ(format_warning(f),
            std::string(kPrefix) + "pinned to zone \"a\"; fix: list more than one zone" + std::string(kSuffix));
}

TEST(Text, AFixThatDoesNotFitWholeIsLeftOutAndTheMessageKept) {
  const std::string message(180, 'm');
  Finding f = finding(message);
  f.remedy = std::string(60, 'r');  // prefix + message + fix + case > 256
  const std::string w = format_warning(f);
  EXPECT_EQ(w, std::string(kPrefix) + message + std::string(kSuffix)) << "never half a fix, never a cut message";
  EXPECT_EQ(w.find("fix:"), std::string::npos);
  f.remedy = "short";
  EXPECT_NE(format_warning(f).find("; fix: short (case"), std::string::npos) << "a fix that fits is kept";
}

TEST(Text, AFixThatDoesNotFitIsAWarningOfItsOwn) {
  // Issue 29: `kubectl apply` prints every fix; the API server keeps 256 runes a warning.
  Finding f = finding(std::string(180, 'm'));
  f.remedy = "allow several zones\n(node affinity In)";
  EXPECT_EQ(format_fix_warning(f), "kubegap/zone-spread: fix: allow several zones?(node affinity In)");
  f.remedy = std::string(400, 'r');
  const auto long_fix = format_fix_warning(f);
  ASSERT_TRUE(long_fix.has_value());
  EXPECT_EQ(rune_count(*long_fix), kTargetWarningRunes) << "one line, cut with ...";
  EXPECT_TRUE(long_fix->ends_with("...")) << *long_fix;
  f.remedy = "short";
  EXPECT_EQ(format_fix_warning(f), std::nullopt) << "a fix that fits stays in the warning";
  f.remedy.clear();
  EXPECT_EQ(format_fix_warning(f), std::nullopt) << "no fix, no fix warning";
}

TEST(Text, AFixIsSanitizedLikeTheMessage) {
  Finding f = finding("m");
  f.remedy = "remove the toleration for evil\nkey";
  EXPECT_EQ(format_warning(f),
            std::string(kPrefix) + "m; fix: remove the toleration for evil?key" + std::string(kSuffix));
}

TEST(Text, AnnotationCarriesTheFixBeforeTheCases) {
  Finding f = finding("m");
  f.remedy = "list more than one zone";
  EXPECT_EQ(format_annotation(f),
            "pinned to zone a by nodeSelector; fix: list more than one zone; cases: osm-amsterdam-power-2022, "
            "aws-sydney-power-2016");
}

TEST(Text, TruncateBytesNeverSplitsARune) {
  const std::string text = "ab\xE2\x82\xAC\xE2\x82\xAC";  // a b EURO EURO: 8 bytes
  EXPECT_EQ(truncate_bytes(text, 8), text);
  EXPECT_EQ(truncate_bytes(text, 7), "ab...") << "the euro sign at 2..4 does not fit before the ellipsis";
  EXPECT_EQ(truncate_bytes(text, 6), "ab...");
  EXPECT_EQ(truncate_bytes(text, 2), "..");
  for (std::size_t limit = 0; limit < 10; ++limit) {
    const std::string out = truncate_bytes(text, limit);
    EXPECT_LE(out.size(), limit);
    EXPECT_TRUE(valid_utf8_without_controls(out)) << limit;
  }
}

TEST(Text, WarningHasPrefixBodyAndFirstCase) {
  const std::string w = format_warning(finding("pinned to zone \"a\""));
  EXPECT_EQ(w, "kubegap/zone-spread: pinned to zone \"a\" (case osm-amsterdam-power-2022)");
  EXPECT_FALSE(starts_with(w, "Warning")) << "kubectl adds that itself";
}

TEST(Text, WarningNamesTheParts) {
  const std::string w = format_warning(finding("no PDB", {"replica Master", "replica Worker"}));
  EXPECT_EQ(w, std::string(kPrefix) + "replica Master, replica Worker: no PDB" + std::string(kSuffix));
}

TEST(Text, WarningWithoutCasesHasNoSuffix) {
  Finding f = finding("x");
  f.cases = {};
  EXPECT_EQ(format_warning(f), "kubegap/zone-spread: x");
}

TEST(Text, LongAsciiWarningIsCutToLimitKeepingCaseWhole) {
  const std::string w = format_warning(finding(std::string(2000, 'x')));
  EXPECT_TRUE(starts_with(w, kPrefix)) << w;
  EXPECT_TRUE(ends_with(w, kSuffix)) << w;
  EXPECT_LE(rune_count(w), kMaxWarningRunes);
  EXPECT_EQ(rune_count(w), kMaxWarningRunes) << "uses the room it has";
  EXPECT_TRUE(ends_with(w, "..." + std::string(kSuffix))) << "a cut is marked";
}

TEST(Text, LongMultiByteWarningWithControlsIsCleanAndWithinLimit) {
  // 2,000 characters mixing 1- to 4-byte runes with newlines, tabs, DEL and U+0085.
  std::string message;
  while (count_code_points(message) < 2000) {
    message += "Z\xC3\xBCrich \xE2\x82\xAC \xF0\x9F\x9A\x80\n\t\x7F\xC2\x85 ";
  }
  const std::string w = format_warning(finding(message, {"replica Worker"}));
  EXPECT_TRUE(starts_with(w, std::string(kPrefix) + "replica Worker: Z\xC3\xBCrich")) << w;
  EXPECT_TRUE(ends_with(w, kSuffix)) << w;
  EXPECT_LE(count_code_points(w), kMaxWarningRunes);
  EXPECT_TRUE(valid_utf8_without_controls(w)) << w;
}

TEST(Text, EveryCutOfAMultiByteMessageKeepsTheWarningValid) {
  // Slide the cut point across a multi-byte run by growing an ASCII lead-in.
  for (std::size_t lead = 200; lead < 240; ++lead) {
    const std::string message =
        std::string(lead, 'a') + std::string(
                                     "\xE2\x82\xAC\xF0\x9F\x98\x80\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xC3\xA9"
                                     "\xE2\x82\xAC\xF0\x9F\x98\x80\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xC3\xA9");
    const std::string w = format_warning(finding(message));
    EXPECT_LE(count_code_points(w), kMaxWarningRunes) << lead;
    EXPECT_TRUE(valid_utf8_without_controls(w)) << lead;
    EXPECT_TRUE(ends_with(w, kSuffix)) << lead;
  }
}

TEST(Text, InvalidUtf8InMessageIsReplacedInWarning) {
  const std::string w = format_warning(finding("bad \xFF\xFE bytes\n"));
  EXPECT_EQ(w, std::string(kPrefix) + "bad ?? bytes?" + std::string(kSuffix));
}

// The fix is user text too (a mount path, a taint key): sanitized whether it fits in the
// warning or gets a warning of its own.
TEST(Text, ControlBytesInTheFixAreReplacedInBothForms) {
  Finding f = finding("pinned");
  f.remedy = "mount /ckpt\x01\n here";
  EXPECT_EQ(format_warning(f), std::string(kPrefix) + "pinned; fix: mount /ckpt?? here" + std::string(kSuffix));
  f.message = std::string(240, 'm');
  const auto fix = format_fix_warning(f);
  ASSERT_TRUE(fix.has_value());
  EXPECT_EQ(*fix, "kubegap/zone-spread: fix: mount /ckpt?? here");
}

// ---------------------------------------------------------------- format_annotation

TEST(Text, AnnotationForFindingListsReasonPartsAndCases) {
  EXPECT_EQ(format_annotation(finding("m")),
            "pinned to zone a by nodeSelector; cases: osm-amsterdam-power-2022, "
            "aws-sydney-power-2016");
  EXPECT_EQ(format_annotation(finding("m", {"replica Worker"})),
            "pinned to zone a by nodeSelector (in replica Worker); cases: "
            "osm-amsterdam-power-2022, aws-sydney-power-2016");
}

TEST(Text, AnnotationForExemptSaysExempt) {
  Finding f = finding("m");
  f.outcome = Outcome::kExempt;
  f.reason = "saves to GCS through the SDK";
  EXPECT_EQ(format_annotation(f), "exempt: saves to GCS through the SDK");
}

TEST(Text, AnnotationForNotEvaluatedSaysNotEvaluated) {
  Finding f = finding("");
  f.check = "disruption-budget";
  f.outcome = Outcome::kNotEvaluated;
  f.reason = "no cluster view";
  EXPECT_EQ(format_annotation(f), "not evaluated: no cluster view");
}

TEST(Text, AnnotationIsSanitizedAndBounded) {
  Finding f = finding("m");
  f.outcome = Outcome::kExempt;
  f.reason = "line one\nline two\t" + std::string(3000, 'r');
  const std::string a = format_annotation(f);
  EXPECT_TRUE(starts_with(a, "exempt: line one?line two?")) << a;
  EXPECT_TRUE(valid_utf8_without_controls(a));
  EXPECT_LE(a.size(), kMaxAnnotationValueBytes);
  EXPECT_TRUE(ends_with(a, "..."));
}

// ---------------------------------------------------------------- invalid_utf8_at
// The whole-body check decode_review runs before parsing: the offset of the first bad
// byte, wherever the eight-byte ASCII steps land.
TEST(InvalidUtf8At, FindsTheFirstBadByte) {
  const std::string ascii(21, 'a');
  EXPECT_EQ(invalid_utf8_at(""), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at(ascii), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at(ascii + "\xC3\xBC \xE6\x97\xA5 \xF0\x9F\x9A\x80" + ascii), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at(ascii + "\xFF" + ascii), 21u);
  EXPECT_EQ(invalid_utf8_at("\xFF"), 0u);
  EXPECT_EQ(invalid_utf8_at(ascii.substr(0, 16) + "\xC0\xAF"), 16u);        // overlong '/'
  EXPECT_EQ(invalid_utf8_at(ascii.substr(0, 7) + "\xED\xA0\x80"), 7u);      // a surrogate
  EXPECT_EQ(invalid_utf8_at(ascii.substr(0, 9) + "\xF4\x90\x80\x80"), 9u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_at(ascii.substr(0, 3) + "\xE6\x97"), 3u);          // cut short at the end
  EXPECT_EQ(invalid_utf8_at(ascii.substr(0, 8) + "\xE6\x97" + ascii), 8u);  // cut short mid-text
}

}  // namespace
}  // namespace kubegap

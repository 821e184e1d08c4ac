#include "policies/text.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>

namespace kubegap {
namespace {

// next_rune: decodes one UTF-8 sequence at text[i]; returns its length, or 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t next_rune(std::string_view text, std::size_t i, std::uint32_t& rune) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char b0 = byte(0);
  std::size_t len = 0;
  std::uint32_t min = 0;
  if (b0 < 0x80) {
    rune = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, rune = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, rune = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, rune = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    rune = (rune << 6) | (byte(k) & 0x3Fu);
  }
  if (rune < min || rune > 0x10FFFF || (rune >= 0xD800 && rune <= 0xDFFF)) return 0;
  return len;
}

// Eight bytes as one word, and the classic bit tricks on it (each byte's high bit set
// where the byte qualifies; a borrow can only add false hits above a true one, so a
// zero answer is exact and a non-zero one is settled a byte at a time).
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
std::uint64_t load8(const char* p) {
  std::uint64_t word = 0;
  std::memcpy(&word, p, 8);
  return word;
}
std::uint64_t bytes_below(std::uint64_t x, unsigned char n) { return (x - kOnes * n) & ~x & kHighs; }
std::uint64_t bytes_equal(std::uint64_t x, unsigned char c) { return bytes_below(x ^ (kOnes * c), 1); }

bool is_control(std::uint32_t rune) { return rune < 0x20 || rune == 0x7F || (rune >= 0x80 && rune <= 0x9F); }

// append_joined: the items with `separator` between them (not before the first that adds
// text), appended to `out`.
void append_joined(std::string& out, std::span<const std::string> items, std::string_view separator) {
  const std::size_t start = out.size();
  for (const auto& item : items) {
    if (out.size() > start) out += separator;
    out += item;
  }
}

}  // namespace

std::string join(std::span<const std::string> items, std::string_view separator) {
  std::string out;
  append_joined(out, items, separator);
  return out;
}

std::string truncate_runes(std::string_view text, std::size_t max_runes);

namespace {

// describe_parts: "a, b, c" or, past three, "a, b, c and 5 more parts", so a workload
// with many parts cannot push the message out of the warning.
std::string describe_parts(const std::vector<std::string>& parts) {
  constexpr std::size_t kListed = 3;
  constexpr std::size_t kPartRunes = 40;  // long group names must not crowd out the message
  std::vector<std::string> listed;
  for (std::size_t i = 0; i < parts.size() && i < kListed; ++i) listed.push_back(truncate_runes(parts[i], kPartRunes));
  if (parts.size() <= kListed) return join(listed, ", ");
  const std::size_t more = parts.size() - kListed;
  return join(listed, ", ") + " and " + std::to_string(more) + (more == 1 ? " more part" : " more parts");
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  std::uint32_t rune = 0;
  return next_rune(text, i, rune);
}

std::size_t invalid_utf8_at(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 8 <= text.size()) {
      if ((load8(text.data() + i) & kHighs) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::uint32_t rune = 0;
    const std::size_t len = next_rune(text, i, rune);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::size_t printable_ascii_end(std::string_view text, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    const std::uint64_t x = load8(text.data() + i);
    if ((bytes_below(x, 0x20) | bytes_equal(x, 0x7F) | (x & kHighs)) != 0) break;
  }
  while (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x20 && static_cast<unsigned char>(text[i]) < 0x7F) {
    ++i;
  }
  return i;
}

std::size_t json_plain_end(std::string_view text, std::size_t from) {
  std::size_t i = from;
  for (; i + 8 <= text.size(); i += 8) {
    const std::uint64_t x = load8(text.data() + i);
    if ((bytes_below(x, 0x20) | bytes_equal(x, '"') | bytes_equal(x, '\\')) != 0) break;
  }
  while (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x20 && text[i] != '"' && text[i] != '\\') ++i;
  return i;
}

std::string sanitize_text(std::string_view text) {
  std::size_t i = printable_ascii_end(text);
  if (i == text.size()) return std::string(text);  // nearly always: nothing to replace
  std::string out;
  out.reserve(text.size());
  std::size_t kept = 0;  // text[kept, i) is copied as it is, in one append
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {  // printable ASCII: the rest of the run at once
      i = printable_ascii_end(text, i);
      continue;
    }
    std::uint32_t rune = b;
    const std::size_t len = b < 0x80 ? 1 : next_rune(text, i, rune);
    if (len == 0 || is_control(rune)) {
      out.append(text, kept, i - kept);
      out += '?';
      i += len == 0 ? 1 : len;
      kept = i;
    } else {
      i += len;
    }
  }
  out.append(text, kept, text.size() - kept);
  return out;
}

std::size_t rune_count(std::string_view text) {
  // Every byte but a continuation byte (10xxxxxx) starts a rune; eight bytes at a time.
  std::size_t continuations = 0;
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    const std::uint64_t x = load8(text.data() + i);
    // One bit per byte at bit 0, summed by the multiply into the top byte (no popcnt
    // instruction in the baseline x86-64 this is built for).
    continuations += static_cast<std::size_t>((((x & ~(x << 1) & kHighs) >> 7) * kOnes) >> 56);
  }
  for (; i < text.size(); ++i) continuations += (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80 ? 1 : 0;
  return text.size() - continuations;
}

std::string truncate_runes(std::string_view text, std::size_t max_runes) {
  if (rune_count(text) <= max_runes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  const std::size_t keep = max_runes > kEllipsis.size() ? max_runes - kEllipsis.size() : 0;
  std::size_t runes = 0;
  std::size_t end = 0;
  for (; end < text.size(); ++end) {
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80) {
      if (runes == keep) break;
      ++runes;
    }
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis.substr(0, max_runes - keep));
}

std::string truncate_bytes(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  if (max_bytes <= kEllipsis.size()) return std::string(kEllipsis.substr(0, max_bytes));
  std::size_t end = max_bytes - kEllipsis.size();
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a rune's start
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string concat(std::initializer_list<std::string_view> pieces) {
  std::size_t size = 0;
  for (const auto piece : pieces) size += piece.size();
  std::string out;
  out.reserve(size);
  for (const auto piece : pieces) out += piece;
  return out;
}

Decimal::Decimal(std::int64_t value) {
  size_ = static_cast<std::size_t>(std::to_chars(digits_.data(), digits_.data() + digits_.size(), value).ptr -
                                   digits_.data());
}

namespace {

// clean: `text` as it is when it is printable ASCII (nearly always), else sanitized into
// `own`: no copy of a clean text.
std::string_view clean(std::string_view text, std::string& own) {
  if (printable_ascii_end(text) == text.size()) return text;
  own = sanitize_text(text);
  return own;
}

// WarningParts: a finding's warning before it is cut to 256 runes, as views of the
// finding's own text (a copy only when parts are named or the text needs sanitizing), so a
// warning that fits is built in one allocation.
struct WarningParts {
  std::string_view check, case_id, body, remedy;  // body and remedy clean
  std::string own_body, own_remedy;               // what they view when not the finding's

  static constexpr std::string_view kPrefix = "kubegap/", kAfterCheck = ": ", kFix = "; fix: ";
  static constexpr std::string_view kBeforeCase = " (case ", kAfterCase = ")";

  std::size_t prefix_runes() const { return kPrefix.size() + check.size() + kAfterCheck.size(); }
  std::size_t suffix_runes() const {
    return case_id.empty() ? 0 : kBeforeCase.size() + rune_count(case_id) + kAfterCase.size();
  }
  std::string_view before_case() const { return case_id.empty() ? "" : kBeforeCase; }
  std::string_view after_case() const { return case_id.empty() ? "" : kAfterCase; }
  bool fits() const {
    return !remedy.empty() &&
           prefix_runes() + rune_count(body) + kFix.size() + rune_count(remedy) + suffix_runes() <= kMaxWarningRunes;
  }
};

// The prefix and suffix are check and case ids from our own tables; the body and the
// remedy can carry what a user wrote (paths, names, taint keys), so they are sanitized.
void warning_parts(const Finding& finding, WarningParts& w) {
  w.check = finding.check;
  if (!finding.cases.empty()) w.case_id = finding.cases.front();
  if (finding.parts.empty()) {
    w.body = clean(finding.message, w.own_body);
  } else {
    w.own_body = sanitize_text(concat({describe_parts(finding.parts), ": ", finding.message}));
    w.body = w.own_body;
  }
  w.remedy = clean(finding.remedy, w.own_remedy);
}

}  // namespace

void append_warnings(const Finding& finding, std::vector<std::string>& out) {
  WarningParts w;
  warning_parts(finding, w);
  using W = WarningParts;
  if (w.fits()) {
    out.push_back(concat(
        {W::kPrefix, w.check, W::kAfterCheck, w.body, W::kFix, w.remedy, w.before_case(), w.case_id, w.after_case()}));
    return;
  }
  const std::size_t fixed = w.prefix_runes() + w.suffix_runes();
  const std::size_t room = kMaxWarningRunes > fixed ? kMaxWarningRunes - fixed : 0;
  out.push_back(concat(
      {W::kPrefix, w.check, W::kAfterCheck, truncate_runes(w.body, room), w.before_case(), w.case_id, w.after_case()}));
  if (w.remedy.empty()) return;
  // A fix reads on one line (kTargetWarningRunes): so the warnings of every check, two
  // statements and their fixes each, stay inside the API server's 4096-rune budget.
  const std::string prefix = concat({W::kPrefix, w.check, ": fix: "});
  out.push_back(prefix + truncate_runes(w.remedy, kTargetWarningRunes - rune_count(prefix)));
}

std::string format_warning(const Finding& finding) {
  std::vector<std::string> out;
  append_warnings(finding, out);
  return out.front();
}

std::optional<std::string> format_fix_warning(const Finding& finding) {
  std::vector<std::string> out;
  append_warnings(finding, out);
  return out.size() > 1 ? std::optional(out[1]) : std::nullopt;
}

std::string format_annotation(const Finding& finding) {
  // Built by appending (one buffer, no temporaries): this runs for every finding.
  std::string value;
  const auto append_parts = [&] {
    if (finding.parts.empty()) return;
    value += " (in ";
    value += describe_parts(finding.parts);
    value += ')';
  };
  switch (finding.outcome) {
    case Outcome::kFinding: {
      // Its size known before it is built (parts aside): one allocation.
      std::size_t size = finding.reason.size() + std::string_view("; fix: ; cases: ").size() + finding.remedy.size();
      for (const auto& c : finding.cases) size += c.size() + 2;
      value.reserve(size);
      value += finding.reason;
      append_parts();
      if (!finding.remedy.empty()) {
        value += "; fix: ";
        value += finding.remedy;
      }
      value += "; cases: ";
      append_joined(value, finding.cases, ", ");
      break;
    }
    case Outcome::kExempt:
      value = concat({"exempt: ", finding.reason});
      append_parts();
      break;
    case Outcome::kNotEvaluated:
      value = concat({"not evaluated: ", finding.reason});
      break;
    case Outcome::kNote:
      value = concat({"note: ", finding.reason});
      append_parts();
      break;
  }
  // Sanitized in place: nearly always there is nothing to replace, and then nothing is copied.
  if (printable_ascii_end(value) != value.size()) value = sanitize_text(value);
  if (value.size() > kMaxAnnotationValueBytes) value = truncate_bytes(value, kMaxAnnotationValueBytes);
  return value;
}

std::string format_annotation(std::span<const Finding> same_check) {
  if (same_check.size() == 1) return format_annotation(same_check.front());  // the usual case
  std::string value;
  for (const auto& finding : same_check) {
    value += (value.empty() ? "" : " | ") + format_annotation(finding);
  }
  return truncate_bytes(value, kMaxAnnotationValueBytes);
}

}  // namespace kubegap

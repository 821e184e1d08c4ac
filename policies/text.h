#pragma once
// Rendering findings as the text the API server passes on: warnings (printed by kubectl)
// and audit annotation values. Pure string work, no JSON.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policies/finding.h"

namespace kubegap {

// icontains: whether `needle` is in `text`, ASCII case-insensitively, without lowered
// copies (it runs for every word of every command line against the policy's hints).
inline bool icontains(std::string_view text, std::string_view needle) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

// concat: the pieces in one string, allocated once (a chain of `+` allocates and copies
// again as it grows).
std::string concat(std::initializer_list<std::string_view> pieces);

// join: the items with `separator` between them (not before the first that adds text).
std::string join(std::span<const std::string> items, std::string_view separator);

// Decimal: an integer's digits without a string of their own (std::to_string allocates
// when a message is built from pieces with concat).
class Decimal {
 public:
  explicit Decimal(std::int64_t value);
  std::string_view view() const { return {digits_.data(), size_}; }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor): a piece of concat

 private:
  std::array<char, 20> digits_{};  // INT64_MIN is 20 bytes
  std::size_t size_ = 0;
};

// The API server truncates longer warnings (k8s.io/apiserver/pkg/warning); aim lower.
inline constexpr std::size_t kMaxWarningRunes = 256;
inline constexpr std::size_t kMaxAnnotationValueBytes = 1024;

// utf8_sequence_length: the length of the valid UTF-8 sequence at text[i], or 0 when it
// is not one (the rule invalid_utf8_at applies).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

// invalid_utf8_at: the offset of the first byte that does not start a valid UTF-8
// sequence (overlong forms, surrogates and code points above U+10FFFF are invalid);
// npos when the text is valid. ASCII runs are checked eight bytes at a time.
std::size_t invalid_utf8_at(std::string_view text);

// printable_ascii_end: the offset of the first byte at or after `from` that is not
// printable ASCII (0x20-0x7e), or text.size(). Eight bytes at a time: findings' text is
// nearly all printable ASCII, and every warning and annotation goes through this.
std::size_t printable_ascii_end(std::string_view text, std::size_t from = 0);

// json_plain_end: the offset of the first byte at or after `from` that a JSON string
// must escape (a quote, a backslash, a C0 control byte), or text.size(). Eight at a time.
std::size_t json_plain_end(std::string_view text, std::size_t from = 0);

// sanitize_text: replaces control characters (C0, DEL, C1) and invalid UTF-8 with '?'.
// The API server silently drops a warning that contains any of them.
std::string sanitize_text(std::string_view text);

// truncate_runes: at most `max_runes` code points, ending with "..." when cut; never
// splits a UTF-8 sequence.
std::string truncate_runes(std::string_view text, std::size_t max_runes);
std::size_t rune_count(std::string_view text);

// kTargetWarningRunes: what a warning's statement (without the fix) aims at, so it reads
// on one terminal line; the hard limit is kMaxWarningRunes.
inline constexpr std::size_t kTargetWarningRunes = 160;

// truncate_bytes: at most `max_bytes` bytes, ending with "..." when cut; never splits a
// UTF-8 sequence.
std::string truncate_bytes(std::string_view text, std::size_t max_bytes);

// format_warning: "kubegap/<check>: <message>; fix: <remedy> (case <id>)", sanitized,
// <= 256 runes. The case citation is kept whole; the fix is left out when it does not
// fit whole (format_fix_warning then carries it), and only then is the message shortened.
std::string format_warning(const Finding& finding);

// append_warnings: a finding's warnings, as the webhook sends them: format_warning's, then
// format_fix_warning's when there is one (each built once).
void append_warnings(const Finding& finding, std::vector<std::string>& out);

// format_fix_warning: "kubegap/<check>: fix: <remedy>" (<= 160 runes), the second warning
// of a finding whose fix did not fit in format_warning's; nullopt when it did (or there is
// none). The API server keeps 256 runes of each warning, so a workload that names its
// parts still prints its fix on `kubectl apply`.
std::optional<std::string> format_fix_warning(const Finding& finding);

// format_annotation: the audit annotation value: "<reason>; fix: <remedy>; cases: a, b"
// for a finding, "exempt: <reason>" or "not evaluated: <reason>" otherwise; at most
// kMaxAnnotationValueBytes bytes.
std::string format_annotation(const Finding& finding);

// format_annotation (several): the findings of one check (parts that fail it in
// different ways), one audit annotation value joined by " | ".
std::string format_annotation(std::span<const Finding> same_check);

}  // namespace kubegap

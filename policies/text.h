#pragma once
// Rendering findings as the text the API server passes on: warnings (printed by kubectl)
// and audit annotation values. Pure string work, no JSON.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "policies/finding.h"

namespace kubegap {

// The API server truncates longer warnings (k8s.io/apiserver/pkg/warning); aim lower.
inline constexpr std::size_t kMaxWarningRunes = 256;
inline constexpr std::size_t kMaxAnnotationValueBytes = 1024;

// sanitize_text: replaces control characters (C0, DEL, C1) and invalid UTF-8 with '?'.
// The API server silently drops a warning that contains any of them.
std::string sanitize_text(std::string_view text);

// truncate_runes: at most `max_runes` code points, ending with "..." when cut; never
// splits a UTF-8 sequence.
std::string truncate_runes(std::string_view text, std::size_t max_runes);
std::size_t rune_count(std::string_view text);

// format_warning: "kubegap/<check>: <message> (case <id>)", sanitized, <= 256 runes; the
// case citation is kept whole, the message is shortened if needed.
std::string format_warning(const Finding& finding);

// format_annotation: the audit annotation value: "<reason>; cases: a, b" for a finding,
// "exempt: <reason>" or "not evaluated: <reason>" otherwise.
std::string format_annotation(const Finding& finding);

// format_annotation (several): the findings of one check (parts that fail it in
// different ways), one audit annotation value joined by " | ".
std::string format_annotation(std::span<const Finding> same_check);

}  // namespace kubegap

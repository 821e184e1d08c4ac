#include "policies/pattern_list.h"

#include <array>
#include <utility>

#include "policies/policy.h"

namespace kubegap {
namespace {

// kBit: the bit of byte_mask for each byte value: 'a'-'z' (either case) 0-25, '0'-'9'
// 26-35, any other byte 36 + its value modulo 28.
constexpr auto kBit = [] {
  std::array<std::uint8_t, 256> bit{};
  for (int c = 0; c < 256; ++c) {
    const char folded = ascii_lower(static_cast<char>(c));
    if (folded >= 'a' && folded <= 'z') {
      bit[c] = static_cast<std::uint8_t>(folded - 'a');
    } else if (c >= '0' && c <= '9') {
      bit[c] = static_cast<std::uint8_t>(26 + (c - '0'));
    } else {
      bit[c] = static_cast<std::uint8_t>(36 + c % 28);
    }
  }
  return bit;
}();

// mask_without: byte_mask of `text` without the bytes in `skipped`.
std::uint64_t mask_without(std::string_view text, std::string_view skipped) {
  std::uint64_t mask = 0;
  for (const char c : text) {
    if (skipped.find(c) == std::string_view::npos) mask |= std::uint64_t{1} << kBit[static_cast<unsigned char>(c)];
  }
  return mask;
}

}  // namespace

std::uint64_t byte_mask(std::string_view text) {
  std::uint64_t mask = 0;
  for (const char c : text) mask |= std::uint64_t{1} << kBit[static_cast<unsigned char>(c)];
  return mask;
}

PatternList::PatternList(std::vector<std::string> entries) : entries_(std::move(entries)) {
  compiled_.reserve(entries_.size());
  for (const auto& entry : entries_) compiled_.push_back(compile(entry));
}

void PatternList::push_back(std::string entry) {
  compiled_.push_back(compile(entry));
  entries_.push_back(std::move(entry));
}

PatternList::Entry PatternList::compile(std::string_view entry) {
  Entry out;
  out.bytes = mask_without(entry, "*");
  // As a flag entry: its name is what comes before its `=`, read without leading dashes
  // (flag_name); a name with `*` is a pattern, which ends in no one byte.
  const std::string_view name = entry.substr(0, entry.find('='));
  const bool only_dashes = name.find_first_not_of('-') == std::string_view::npos;
  const bool wildcard = name.find('*') != std::string_view::npos;
  out.flag_last = only_dashes || wildcard ? '\0' : fold_flag_char(name.back());
  out.name_bytes = mask_without(name, "*_-");
  return out;
}

bool PatternList::matches(std::string_view text) const {
  const std::uint64_t have = byte_mask(text);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if ((compiled_[i].bytes & ~have) == 0 && wildcard_match_icase(entries_[i], text)) return true;
  }
  return false;
}

}  // namespace kubegap

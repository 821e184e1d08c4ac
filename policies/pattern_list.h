#pragma once
// PatternList: a policy list of words and `*` patterns (diagnosticHints, benchmarkFlags,
// ...), with what matching needs to know of each entry worked out once, when the list is
// set. The evidence rules read these lists for every word of every command line of every
// review; before, each entry was re-read each time (where its `=` is, its last byte).
//
//   PatternList hints{"nvidia-smi", "*benchmark*"};
//   hints.matches("run_benchmark.py");  // true, as wildcard_match_icase says
//
// It reads like the std::vector<std::string> it replaces (iteration, size, indexing, a
// const reference to the vector), and every way of changing it recomputes what it keeps.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

// ascii_lower: 'A'-'Z' to 'a'-'z', every other byte unchanged (no locale).
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// fold_flag_char: a flag name's byte as normalized_flag makes it (`-` as `_`, lower case).
constexpr char fold_flag_char(char c) { return c == '-' ? '_' : ascii_lower(c); }

// byte_mask: a bit for each byte value in `text`, ASCII letters without case: each letter
// and digit has a bit of its own, other bytes share the rest. Every byte of a pattern but
// `*` must be in a text it matches, so a pattern whose mask has a bit that the text's
// lacks does not match it (for most pairs, one AND decides).
std::uint64_t byte_mask(std::string_view text);

class PatternList {
 public:
  // Entry: what is known of one entry before any text is read.
  struct Entry {
    std::uint64_t bytes = 0;  // byte_mask of its bytes other than `*`
    // As a flag entry ("name" or "name=pattern"): the folded last byte of every flag its
    // name can name; '\0' when that is not one byte (a `*` in the name, or no name).
    char flag_last = '\0';
    // byte_mask of the bytes before its `=` (a flag entry's name, the program of a
    // savesByDefault entry) that every text it names holds, whatever its spelling: all but
    // `*`, `_` and `-` (a flag's dashes, underscores and camelCase humps all fold to `_`).
    std::uint64_t name_bytes = 0;
  };
  // The standard container's names, so generic code (and GoogleTest's printer) reads it.
  using value_type = std::string;                                   // NOLINT(readability-identifier-naming)
  using const_iterator = std::vector<std::string>::const_iterator;  // NOLINT(readability-identifier-naming)
  using iterator = const_iterator;                                  // NOLINT(readability-identifier-naming)

  PatternList() = default;
  PatternList(std::initializer_list<std::string> entries) : PatternList(std::vector<std::string>(entries)) {}
  // Implicit, as the vector it replaces was set: `policy.diagnostic_hints = read_list(...)`.
  PatternList(std::vector<std::string> entries);  // NOLINT(google-explicit-constructor)

  // NOLINTNEXTLINE(google-explicit-constructor): read wherever the vector was read.
  operator const std::vector<std::string>&() const { return entries_; }
  const std::vector<std::string>& entries() const { return entries_; }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::string& operator[](std::size_t i) const { return entries_[i]; }
  const std::string& front() const { return entries_.front(); }
  const std::string& back() const { return entries_.back(); }
  const Entry& compiled(std::size_t i) const { return compiled_[i]; }

  void push_back(std::string entry);
  void clear() {
    entries_.clear();
    compiled_.clear();
  }

  // matches: some entry matches `text` as wildcard_match_icase(entry, text) says.
  bool matches(std::string_view text) const;

  bool operator==(const PatternList& other) const { return entries_ == other.entries_; }

 private:
  static Entry compile(std::string_view entry);

  std::vector<std::string> entries_;
  std::vector<Entry> compiled_;  // one for each entry, in the same order
};

}  // namespace kubegap

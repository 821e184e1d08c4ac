#pragma once
// The words of a command line as flags and values, shared by the evidence rules
// (policies/evidence.cpp): case- and dash-insensitive flag names, `--name value` pairs,
// policy name lists, object-storage URLs and env references in values. Pure string work.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/command_facts.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

// Case-insensitive (ASCII) comparisons without lowered copies: they run for every word
// of every command line against every hint of the policy.
inline bool iequal(char a, char b) { return ascii_lower(a) == ascii_lower(b); }

// FoldedFlag: a flag name's bytes as normalized_flag makes them, one at a time, without a
// copy: `-` as `_`, lower case, and a camelCase name split at each hump (`numEpochs`,
// a config file's or a Java-style flag's spelling, reads as `num_epochs`). The name ends
// at an `=` (`lr=0.1` folds as `lr`), so a word's name is read without finding it first.
class FoldedFlag {
 public:
  explicit FoldedFlag(std::string_view name) : name_(name) {}
  bool done() const { return at_ >= name_.size() || name_[at_] == '='; }
  char next() {
    const char c = name_[at_];
    if (!hump_ && at_ > 0 && is_hump(name_[at_ - 1], c)) {
      hump_ = true;
      return '_';
    }
    hump_ = false;
    ++at_;
    return fold_flag_char(c);
  }

 private:
  static bool is_hump(char before, char c) {
    return c >= 'A' && c <= 'Z' && ((before >= 'a' && before <= 'z') || (before >= '0' && before <= '9'));
  }
  std::string_view name_;
  std::size_t at_ = 0;
  bool hump_ = false;  // the `_` before this byte was given
};

// istarts_with: `text` starts with `prefix`, ASCII case-insensitively.
bool istarts_with(std::string_view text, std::string_view prefix);

// matches: one of the wildcard `patterns` matches `text` (case-insensitively).
inline bool matches(const PatternList& patterns, std::string_view text) { return patterns.matches(text); }

// flag_name: a word as a flag name: without leading dashes and any `=value`.
std::string_view flag_name(std::string_view word);

// flag_initial: the first byte of a word's flag name as FoldedFlag gives it ('\0' for an
// empty name).
inline char flag_initial(std::string_view word) {
  std::size_t i = 0;
  while (i < word.size() && word[i] == '-') ++i;
  return i < word.size() && word[i] != '=' ? fold_flag_char(word[i]) : '\0';
}

// same_flag_folded: same_flag past its first-byte test.
bool same_flag_folded(std::string_view a, std::string_view b);

// same_flag: equal as normalized_flag would make them, without making them. It runs for
// every (policy name, command word) pair of a review: the first byte, tested inline, ends
// most of them.
inline bool same_flag(std::string_view a, std::string_view b) {
  return flag_initial(a) == flag_initial(b) && same_flag_folded(a, b);
}

// FlagValue: a flag name and its value, from `--name=value`, `name=value` or
// `--name value`: views into the command's words (NameSet compares names without case
// or dashes, so nothing is copied to normalize them).
struct FlagValue {
  std::string_view name;  // as written, without leading dashes
  std::string_view value;
};

std::vector<FlagValue> flag_values(const std::vector<std::string>& words);

// NameSet: a policy list of flag names; a word is in it when it names one of them.
class NameSet {
 public:
  explicit NameSet(const PatternList& names) : names_(names) {}
  // A dotted override (`--config.num_train_steps=10`, Hydra's `trainer.max_epochs=3`)
  // names its last component too.
  bool contains(std::string_view word) const {
    std::string_view last = flag_name(word);
    const auto dot = last.rfind('.');
    last = dot == std::string_view::npos ? std::string_view() : last.substr(dot + 1);
    // same_flag's first-byte test, with the word's side read once, not once per name; and
    // before it the bytes a name needs (its last component's are the word's too).
    const std::uint64_t have = byte_mask(word);
    const char word_initial = flag_initial(word);
    const char last_initial = last.empty() ? '\0' : flag_initial(last);
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if ((names_.compiled(i).name_bytes & ~have) != 0) continue;
      const std::string& n = names_[i];
      const char initial = flag_initial(n);
      if ((initial == word_initial && same_flag_folded(n, word)) ||
          (!last.empty() && initial == last_initial && same_flag_folded(n, last))) {
        return true;
      }
    }
    return false;
  }

 private:
  const PatternList& names_;
};

// has_scheme: the value is an object-storage URL (policy objectStorageSchemes).
bool has_scheme(const std::string& value, const Policy& policy);

// expand_env_reference: a value that starts with a reference to one of the container's
// env vars, `$(NAME)` (the kubelet expands it in command and args) or `$NAME`/`${NAME}`
// (a shell does), with that var's literal value put in: `--output_dir=$(OUT)/run1` with
// OUT=gs://b is gs://b/run1. Anything else is returned as written.
std::string expand_env_reference(std::string_view value, const std::vector<EnvVar>& env);

// set_outside: for a value that refers to a var this object does not give a value
// (valueFrom a ConfigMap or Secret, an envFrom source the input does not hold, or, for
// a shell or template reference, no var at all), the reference and where it comes from:
// the place it names is not in the object, so nothing can be said about it.
std::optional<std::string> set_outside(std::string_view value, const CommandFacts& facts,
                                       const std::vector<EnvVar>& env);

}  // namespace kubegap

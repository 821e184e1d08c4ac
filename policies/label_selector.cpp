#include "policies/label_selector.h"

#include <algorithm>
#include <charconv>

namespace kubegap {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// parse_int: Gt/Lt compare labels as integers (k8s.io/apimachinery/pkg/labels/selector.go);
// a non-integer label or value never matches.
bool parse_int(const std::string& text, long long& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

bool requirement_matches(const Requirement& requirement, const StringMap& labels) {
  const auto it = labels.find(requirement.key);
  const bool present = it != labels.end();
  const std::string& op = requirement.op;
  if (op == "In") return present && contains(requirement.values, it->second);
  if (op == "NotIn") return !present || !contains(requirement.values, it->second);
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op == "Gt" || op == "Lt") {
    long long label = 0;
    long long bound = 0;
    if (!present || requirement.values.size() != 1 || !parse_int(it->second, label) ||
        !parse_int(requirement.values.front(), bound)) {
      return false;
    }
    return op == "Gt" ? label > bound : label < bound;
  }
  return false;
}

bool selects(const std::optional<LabelSelector>& selector, const StringMap& labels) {
  if (!selector) return false;
  for (const auto& [key, value] : selector->match_labels) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return std::all_of(selector->match_expressions.begin(), selector->match_expressions.end(),
                     [&](const Requirement& r) { return requirement_matches(r, labels); });
}

}  // namespace kubegap

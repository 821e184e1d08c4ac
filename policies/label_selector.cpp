#include "policies/label_selector.h"

#include <algorithm>
#include <charconv>

namespace kubegap {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

bool alphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// label_name: content's labelKeyFmt, ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most
// 63 characters.
bool label_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || !alphanumeric(name.front()) || !alphanumeric(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return alphanumeric(c) || c == '-' || c == '_' || c == '.'; });
}

// dns1123_label: [a-z0-9]([-a-z0-9]*[a-z0-9])? (the length is checked on the whole name).
bool dns1123_label(std::string_view label) {
  const auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (label.empty() || !lower(label.front()) || !lower(label.back())) return false;
  return std::all_of(label.begin(), label.end(), [&](char c) { return lower(c) || c == '-'; });
}

bool dns1123_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (std::size_t start = 0;;) {
    const auto dot = name.find('.', start);
    if (!dns1123_label(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool known_operator(const std::string& op, Operators operators) {
  if (op == "In" || op == "NotIn" || op == "Exists" || op == "DoesNotExist") return true;
  return operators == Operators::kNodeSelector && (op == "Gt" || op == "Lt");
}

}  // namespace

bool valid_label_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return label_name(key);
  const auto name = key.substr(slash + 1);
  return name.find('/') == std::string_view::npos && dns1123_subdomain(key.substr(0, slash)) && label_name(name);
}

bool valid_label_value(std::string_view value) { return value.empty() || label_name(value); }

bool parse_label_int(std::string_view text, long long& out) {
  // from_chars takes '-' but not '+'; ParseInt takes both, once, before a digit.
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text.front() == '-') return false;
  }
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool requirement_valid(const Requirement& requirement, Operators operators) {
  const std::string& op = requirement.op;
  const auto& values = requirement.values;
  if (!known_operator(op, operators) || !valid_label_key(requirement.key)) return false;
  if ((op == "In" || op == "NotIn") && values.empty()) return false;
  if ((op == "Exists" || op == "DoesNotExist") && !values.empty()) return false;
  long long number = 0;
  if ((op == "Gt" || op == "Lt") && (values.size() != 1 || !parse_label_int(values.front(), number))) return false;
  return std::all_of(values.begin(), values.end(), [](const std::string& v) { return valid_label_value(v); });
}

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
    if (!present || requirement.values.size() != 1 || !parse_label_int(it->second, label) ||
        !parse_label_int(requirement.values.front(), bound)) {
      return false;
    }
    return op == "Gt" ? label > bound : label < bound;
  }
  return false;
}

bool selects(const std::optional<LabelSelector>& selector, const StringMap& labels) {
  if (!selector) return false;
  // LabelSelectorAsSelector refuses a selector with one requirement labels.NewRequirement
  // refuses (a matchLabels pair is an equality requirement), and such a selector selects
  // nothing. A refused or an unmatched requirement both answer false, so one pass judges
  // each requirement's validity and match together.
  for (const auto& [key, value] : selector->match_labels) {
    if (!valid_label_key(key) || !valid_label_value(value)) return false;
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return std::all_of(selector->match_expressions.begin(), selector->match_expressions.end(), [&](const Requirement& r) {
    return requirement_valid(r, Operators::kLabelSelector) && requirement_matches(r, labels);
  });
}

}  // namespace kubegap

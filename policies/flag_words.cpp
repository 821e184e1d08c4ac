#include "policies/flag_words.h"

#include <cctype>

#include "policies/text.h"

namespace kubegap {
namespace {

// EnvReference: a value that starts with `$(NAME)`, `${NAME}` or `$NAME`.
struct EnvReference {
  std::string_view name;
  std::size_t end = 0;   // where the reference ends in the value
  bool kubelet = false;  // $(NAME): only the kubelet expands it, from the container's env
};

std::optional<EnvReference> env_reference(std::string_view value) {
  if (value.size() < 2 || value[0] != '$') return std::nullopt;
  const char open = value[1] == '(' ? '(' : value[1] == '{' ? '{' : '\0';
  const std::size_t start = open == '\0' ? 1 : 2;
  std::size_t end = start;
  while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) || value[end] == '_')) ++end;
  if (end == start) return std::nullopt;
  if (open != '\0' && (end >= value.size() || value[end] != (open == '(' ? ')' : '}'))) return std::nullopt;
  return EnvReference{value.substr(start, end - start), end + (open == '\0' ? 0 : 1), open == '('};
}

}  // namespace

bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(), iequal);
}

std::string_view flag_name(std::string_view word) {
  const auto eq = word.find('=');
  if (eq != std::string_view::npos) word = word.substr(0, eq);
  while (!word.empty() && word.front() == '-') word.remove_prefix(1);
  return word;
}

bool same_flag_folded(std::string_view a, std::string_view b) {
  // flag_name's leading dashes dropped here and its `=value` by FoldedFlag, in the one
  // pass that compares (no search for the `=` first).
  const auto undashed = [](std::string_view w) {
    std::size_t i = 0;
    while (i < w.size() && w[i] == '-') ++i;
    return w.substr(i);
  };
  FoldedFlag x(undashed(a));
  FoldedFlag y(undashed(b));
  while (!x.done() && !y.done()) {
    if (x.next() != y.next()) return false;
  }
  return x.done() && y.done();
}

std::vector<FlagValue> flag_values(const std::vector<std::string>& words) {
  std::vector<FlagValue> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    const auto eq = w.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      out.push_back({flag_name(w.substr(0, eq)), w.substr(eq + 1)});
    } else if (w.size() > 1 && w.front() == '-' && i + 1 < words.size() && !words[i + 1].empty() &&
               words[i + 1].front() != '-') {
      out.push_back({flag_name(w), words[i + 1]});
    }
  }
  return out;
}

bool has_scheme(const std::string& value, const Policy& policy) {
  return std::any_of(policy.object_storage_schemes.begin(), policy.object_storage_schemes.end(),
                     [&](const std::string& scheme) { return istarts_with(value, scheme); });
}

std::string expand_env_reference(std::string_view value, const std::vector<EnvVar>& env) {
  const auto ref = env_reference(value);
  if (!ref) return std::string(value);
  const auto var = std::find_if(env.begin(), env.end(), [&](const EnvVar& e) { return e.name == ref->name; });
  if (var == env.end() || var->value.empty()) return std::string(value);
  return var->value + std::string(value.substr(ref->end));
}

std::optional<std::string> set_outside(std::string_view value, const CommandFacts& facts,
                                       const std::vector<EnvVar>& env) {
  const auto ref = env_reference(value);
  if (!ref) return std::nullopt;
  const auto var = std::find_if(env.begin(), env.end(), [&](const EnvVar& e) { return e.name == ref->name; });
  if (var != env.end()) {
    if (var->from.empty()) return std::nullopt;
    return std::string(value) + " (set from " + var->from + ")";
  }
  const auto source = std::find_if(env.begin(), env.end(), [](const EnvVar& e) { return e.name.empty(); });
  if (source != env.end()) return std::string(value) + " (perhaps set from " + source->from + ")";
  // The kubelet leaves an unknown $(NAME) as it is; a shell script may set the var itself.
  if (ref->kubelet) return std::nullopt;
  const bool assigned = std::any_of(facts.words.begin(), facts.words.end(), [&](const std::string& w) {
    return w.size() > ref->name.size() && w.starts_with(ref->name) && w[ref->name.size()] == '=';
  });
  if (assigned) return std::nullopt;
  return std::string(value) + " (not set in this object)";
}

}  // namespace kubegap

#include "policies/config_settings.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <utility>

namespace kubegap {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == ',')) {
    s.remove_suffix(1);
  }
  return s;
}

// setting_value: the value as written after the separator: a quoted string without its
// quotes, or a plain value without a trailing ` # comment`; empty when the line has no
// value of its own (`model:` opening a mapping, `[`, `{`, `|`, `>`).
std::string_view setting_value(std::string_view rest) {
  rest = trim(rest);
  if (rest.empty()) return {};
  if (rest.front() == '"' || rest.front() == '\'') {
    const auto close = rest.find(rest.front(), 1);
    return close == std::string_view::npos ? std::string_view{} : rest.substr(1, close - 1);
  }
  if (const auto comment = rest.find(" #"); comment != std::string_view::npos) rest = trim(rest.substr(0, comment));
  if (rest.empty() || rest.front() == '[' || rest.front() == '{' || rest.front() == '|' || rest.front() == '>' ||
      rest.front() == '&' || rest.front() == '*') {
    return {};
  }
  // A null (YAML's null and ~, JSON's null, Python's None in OmegaConf-style files) leaves
  // the setting unset: `max_epochs: null` says nothing about training.
  for (std::string_view unset : {"null", "Null", "NULL", "~", "None"}) {
    if (rest == unset) return {};
  }
  return rest;
}

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool space(char c) { return c == ' ' || c == '\t'; }

// string_end: the index just past the string literal whose opening quote is at `open` in
// `line` (a backslash escapes the next byte), or npos when it does not close on the line.
std::size_t string_end(std::string_view line, std::size_t open) {
  const char quote = line[open];
  for (std::size_t j = open + 1; j < line.size(); ++j) {
    if (line[j] == '\\') {
      ++j;
    } else if (line[j] == quote) {
      return j + 1;
    }
  }
  return std::string_view::npos;
}

// assigned_name: the name assigned by the `=` at `eq` in `line`: the identifier before it,
// or, for an annotated one (`OUTPUT_DIR: str = "..."`), the identifier before the colon.
std::string_view assigned_name(std::string_view line, std::size_t eq) {
  const auto identifier_before = [&](std::size_t end) {
    while (end > 0 && space(line[end - 1])) --end;
    std::size_t start = end;
    while (start > 0 && identifier_char(line[start - 1])) --start;
    return std::pair{start, end};
  };
  auto [start, end] = identifier_before(eq);
  std::size_t before = start;
  while (before > 0 && space(line[before - 1])) --before;
  if (start != end && before > 0 && line[before - 1] == ':') std::tie(start, end) = identifier_before(before - 1);
  return line.substr(start, end - start);
}

// triple_quotes: how many `"""` and `'''` runs `line` holds (a docstring opens or closes
// at each).
std::size_t triple_quotes(std::string_view line) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = line.find("\"\"\"", at)) != std::string_view::npos; at += 3) ++n;
  for (std::size_t at = 0; (at = line.find("'''", at)) != std::string_view::npos; at += 3) ++n;
  return n;
}

}  // namespace

void append_script_settings(std::string_view text, std::size_t max_settings, std::vector<EnvVar>& out) {
  const std::size_t first = out.size();
  bool in_docstring = false;
  while (!text.empty() && out.size() < max_settings) {
    const auto end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    // A docstring's lines are prose (an example `output_dir="/tmp/demo"` in it is not
    // set), and a function's defaults are not what a run saves to.
    const std::size_t triples = triple_quotes(line);
    const bool docstring_line = in_docstring || triples > 0;
    if (triples % 2 == 1) in_docstring = !in_docstring;
    if (docstring_line || line.empty() || line.front() == '#' || line.starts_with("def ") ||
        line.starts_with("async def ")) {
      continue;
    }
    for (std::size_t i = 0; i < line.size() && out.size() < max_settings; ++i) {
      if (line[i] == '#') break;                // a comment, to the end of the line
      if (line[i] == '"' || line[i] == '\'') {  // a string's text is never code
        const auto past = string_end(line, i);
        if (past == std::string_view::npos) break;
        i = past - 1;
        continue;
      }
      // `=` alone: not `==`, `!=`, `<=`, `>=`, `:=` or an augmented assignment (`+=`).
      if (line[i] != '=' || i == 0 || (i + 1 < line.size() && line[i + 1] == '=') ||
          std::string_view("=!<>+-*/%&|^:@").find(line[i - 1]) != std::string_view::npos) {
        continue;
      }
      std::size_t v = i + 1;
      while (v < line.size() && space(line[v])) ++v;
      if (v < line.size() && (line[v] == 'r' || line[v] == 'R')) ++v;  // a raw string reads the same
      if (v >= line.size() || (line[v] != '"' && line[v] != '\'')) continue;
      const auto past = string_end(line, v);
      if (past == std::string_view::npos) break;
      const std::string_view name = assigned_name(line, i);
      const std::string_view value = line.substr(v + 1, past - v - 2);
      i = past - 1;
      // A name that starts with a digit is no identifier; one in CapWords (`Bucket=`,
      // `Key=`, `Filename=`) is an SDK call's parameter (boto3's download_file), not a
      // setting; a value with an escape says nothing a path would.
      if (name.empty() || (name.front() >= '0' && name.front() <= '9')) continue;
      const bool cap_words = name.front() >= 'A' && name.front() <= 'Z' &&
                             std::any_of(name.begin(), name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      if (cap_words || value.empty() || value.find('\\') != std::string_view::npos) continue;
      out.push_back({std::string(name), std::string(value), {}, true});
    }
  }
  // Python keeps a name's last assignment: it comes first, so the rules read it first.
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

void append_env_json_settings(const std::vector<EnvVar>& env, std::size_t max_settings, std::vector<EnvVar>& out) {
  for (const auto& e : env) {
    std::string_view value = e.value;  // a YAML block scalar brings its newlines
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) value.remove_prefix(1);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
    if (!value.starts_with('{') || !value.ends_with('}') || out.size() >= max_settings) continue;
    // One member per line, as the line reader wants them (a comma inside a string value
    // splits that value; only names and plain values are read).
    std::string lines(value);
    std::replace_if(
        lines.begin(), lines.end(), [](char c) { return c == ',' || c == '{' || c == '}'; }, '\n');
    const std::size_t first = out.size();
    append_config_settings(lines, max_settings, out);
    // Named under their var (`TRL_TRAINING_ARGS.output_dir`): a dotted name also names its
    // last component, so the rules read it as `output_dir`, and a finding says where it is.
    for (std::size_t i = first; i < out.size(); ++i) out[i].name.insert(0, e.name + ".");
  }
}

void append_config_settings(std::string_view text, std::size_t max_settings, std::vector<EnvVar>& out) {
  while (!text.empty() && out.size() < max_settings) {
    const auto end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.starts_with("- ")) line = trim(line.substr(2));  // a YAML list item's first key
    std::string_view name;
    const bool quoted = !line.empty() && line.front() == '"';
    if (quoted) {  // JSON
      const auto close = line.find('"', 1);
      if (close == std::string_view::npos) continue;
      name = line.substr(1, close - 1);
      line.remove_prefix(close + 1);
    } else {
      std::size_t n = 0;
      while (n < line.size() && name_char(line[n])) ++n;
      name = line.substr(0, n);
      line.remove_prefix(n);
    }
    line = trim(line);
    if (name.empty() || line.empty()) continue;
    // YAML wants a space after the colon (`a:b` is a plain scalar), JSON does not; TOML
    // and INI use `=`.
    if (line.front() == ':') {
      if (!quoted && line.size() > 1 && line[1] != ' ' && line[1] != '\t') continue;
    } else if (line.front() != '=') {
      continue;
    }
    const std::string_view value = setting_value(line.substr(1));
    if (!value.empty()) out.push_back({std::string(name), std::string(value)});
  }
}

}  // namespace kubegap

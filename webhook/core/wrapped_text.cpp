#include "webhook/core/wrapped_text.h"

#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

bool blank(std::string_view text) { return text.find_first_not_of(" \t\r") == std::string_view::npos; }

// neutralize_line: one line with its actions replaced; `only_actions` says whether
// nothing but actions and blanks was on it.
std::string neutralize_line(std::string_view line, bool& only_actions) {
  std::string out;
  only_actions = true;
  bool any = false;
  for (std::size_t i = 0; i < line.size();) {
    const std::size_t open = line.find("{{", i);
    const std::string_view text = line.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i);
    only_actions = only_actions && blank(text);
    out += text;
    if (open == std::string_view::npos) break;
    const std::size_t close = line.find("}}", open + 2);
    out += kTemplateValue;
    any = true;
    i = close == std::string_view::npos ? line.size() : close + 2;
  }
  only_actions = only_actions && any;
  return out;
}

}  // namespace

std::string neutralize_go_template(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    bool only_actions = false;
    std::string line = neutralize_line(text.substr(start, end - start), only_actions);
    // A dropped line stays as an empty one: the lines of what follows keep their numbers.
    if (!only_actions) out += line;
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

WrappedText parse_wrapped_text(std::string_view text, TextSyntax syntax) {
  WrappedText out;
  if (text.size() > kMaxWrappedTextBytes) {
    out.error =
        "it is " + std::to_string(text.size()) + " bytes, over the " + std::to_string(kMaxWrappedTextBytes) + " read";
    return out;
  }
  const std::string neutral = syntax == TextSyntax::kGoTemplate ? neutralize_go_template(text) : std::string();
  ParsedYaml parsed = parse_yaml_text(syntax == TextSyntax::kGoTemplate ? std::string_view(neutral) : text, "text");
  if (!parsed.problems.empty()) {
    const InputProblem& problem = parsed.problems.front();
    out.error = problem.line > 0 ? "line " + std::to_string(problem.line) + ": " + problem.message : problem.message;
    return out;
  }
  if (parsed.documents.size() != 1 || !parsed.documents.front().json.IsObject()) {
    out.error = "expected one object, found " + std::to_string(parsed.documents.size()) + " document(s)";
    return out;
  }
  out.document.Swap(parsed.documents.front().json);
  return out;
}

}  // namespace kubegap

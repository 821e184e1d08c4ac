#include "webhook/core/wrapped_text.h"

#include <array>
#include <cctype>

#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

// kControlWords: the actions that steer the template (text/template's if, range, with,
// define, template, block, break, continue, else, end) rather than print a value.
constexpr std::array<std::string_view, 10> kControlWords = {"if",     "else",     "end",   "range", "with",
                                                            "define", "template", "block", "break", "continue"};

// control: whether the action whose body (between the braces, trim markers included) is
// `body` only steers: a control word, a comment, or a variable being set.
bool control(std::string_view body) {
  std::size_t i = 0;
  while (i < body.size() && (body[i] == '-' || std::isspace(static_cast<unsigned char>(body[i])))) ++i;
  body.remove_prefix(i);
  if (body.starts_with("/*")) return true;
  if (body.starts_with('$') && body.find(":=") != std::string_view::npos) return true;  // $x := ...
  std::size_t word = 0;
  while (word < body.size() && std::isalpha(static_cast<unsigned char>(body[word]))) ++word;
  const std::string_view first = body.substr(0, word);
  for (const auto w : kControlWords) {
    if (first == w) return true;
  }
  return false;
}

// blank_or_comment: what is left of a line once its actions are out says nothing YAML reads.
bool blank_or_comment(std::string_view rest) {
  const std::size_t start = rest.find_first_not_of(" \t\r");
  return start == std::string_view::npos || rest[start] == '#';
}

}  // namespace

std::string neutralize_go_template(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::string line;      // the current line, actions out
  bool actions = false;  // the current line held an action
  const auto end_line = [&](bool newline) {
    if (!(actions && blank_or_comment(line))) out += line;  // a line of actions only: dropped
    if (newline) out += '\n';
    line.clear();
    actions = false;
  };
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "{{") == 0) {
      // An action may run over lines (a comment): its lines stay, empty, so what follows
      // keeps its line numbers. One left open runs to the end of the text.
      const std::size_t close = text.find("}}", i + 2);
      const std::size_t end = close == std::string_view::npos ? text.size() : close + 2;
      const std::string_view body = text.substr(i + 2, (close == std::string_view::npos ? end : close) - i - 2);
      if (!control(body)) line += kTemplateValue;
      actions = true;
      for (const char c : body) {
        if (c != '\n') continue;
        end_line(true);
        actions = true;  // the action goes on on this line
      }
      i = end;
      continue;
    }
    if (text[i] == '\n') {
      end_line(true);
    } else {
      line += text[i];
    }
    ++i;
  }
  end_line(false);
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
  // Text with no aliases costs less than a node per byte (a node for every two bytes at
  // most, and a node per 16 bytes of its strings): aliases may repeat a little, never
  // multiply what the text holds (the budget is the original text's).
  ParsedYaml parsed = parse_yaml_text(syntax == TextSyntax::kGoTemplate ? std::string_view(neutral) : text, "text",
                                      text.size() + 64, false);
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

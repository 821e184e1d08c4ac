#include "webhook/cmd/flags.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <stdexcept>

namespace kubegap {
namespace {

// Help is wrapped to this width, and the flag column is at most this wide (a longer flag
// puts its text on the next line).
constexpr std::size_t kHelpWidth = 88;
constexpr std::size_t kMaxFlagColumn = 29;

const FlagSpec* find_flag(const CommandSpec& spec, std::string_view name) {
  for (const auto& f : spec.flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FlagSpec* find_short_flag(const CommandSpec& spec, std::string_view short_name) {
  for (const auto& f : spec.flags) {
    if (!f.short_name.empty() && f.short_name == short_name) return &f;
  }
  return nullptr;
}

// default_note: "(required)", "(default X)" or "", as help and docs say it.
std::string default_shown(const FlagSpec& f) {
  if (f.required) return "required";
  if (!f.default_text.empty()) return f.default_text;
  return f.default_value;
}

// wrap: `text` in lines of at most `width` characters (a longer word gets a line of its
// own); the first line after `first_indent` characters, the others after `indent`.
std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream words{std::string(text)};
  std::string word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string flag_column(const FlagSpec& f) {
  std::string left = "  ";
  if (!f.short_name.empty()) left += f.short_name + ", ";
  left += f.name;
  if (!f.is_switch()) left += " " + f.metavar;
  return left;
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string with_program_name(std::string text, std::string_view program) {
  const std::string from = "kubegap-webhook ";
  if (program == "kubegap-webhook") return text;
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + program.size() + 1)) {
    text.replace(at, from.size(), std::string(program) + " ");
  }
  return text;
}

std::string choice_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

ParsedFlags::ParsedFlags(const CommandSpec& spec, std::map<std::string, std::string> values,
                         std::vector<std::string> arguments, bool help)
    : spec_(spec), values_(std::move(values)), arguments_(std::move(arguments)), help_(help) {}

const FlagSpec& ParsedFlags::spec_of(std::string_view name) const {
  const FlagSpec* f = find_flag(spec_, name);
  // A name the code asks for must be in the table: a programming error, not a user's.
  if (f == nullptr) throw std::logic_error("command " + spec_.name + " has no flag " + std::string(name));
  return *f;
}

std::optional<std::string> ParsedFlags::given(std::string_view name) const {
  spec_of(name);
  const auto it = values_.find(std::string(name));
  return it == values_.end() ? std::nullopt : std::optional(it->second);
}

std::string ParsedFlags::value(std::string_view name) const {
  return given(name).value_or(spec_of(name).default_value);
}

std::string ParsedFlags::required(std::string_view name) const {
  const auto v = given(name);
  if (!v || v->empty()) throw UsageError{"flag " + std::string(name) + " is required"};
  return *v;
}

long long ParsedFlags::integer(std::string_view name, long long min, long long max) const {
  const std::string text = value(name);
  if (text.empty() && !given(name)) throw std::logic_error("flag " + std::string(name) + " has no default");
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max) {
    throw UsageError{"flag " + std::string(name) + ": \"" + text + "\" is not an integer in [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]"};
  }
  return v;
}

ParsedFlags parse_flags(const CommandSpec& spec, const std::vector<std::string>& args) {
  std::map<std::string, std::string> values;
  std::vector<std::string> arguments;
  bool help = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      continue;
    }
    if (arg == "-" || !arg.starts_with("-")) {  // "-" is stdin, a path
      if (!spec.takes_arguments) throw UsageError{"unexpected argument \"" + arg + "\""};
      arguments.push_back(arg);
      continue;
    }
    const FlagSpec* flag = nullptr;
    std::optional<std::string> value;
    if (arg.starts_with("--")) {
      const auto eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      if (eq != std::string::npos) value = arg.substr(eq + 1);
      flag = find_flag(spec, name);
      if (flag == nullptr) throw UsageError{"unknown flag " + name};
    } else {  // a short flag, kubectl's way: -o json, -ojson, -o=json
      flag = find_short_flag(spec, std::string_view(arg).substr(0, 2));
      if (flag == nullptr) throw UsageError{"unknown flag " + arg};
      std::string rest = arg.substr(2);
      if (rest.starts_with('=')) rest.erase(0, 1);
      if (!rest.empty() || arg.size() > 2) value = rest;
    }
    if (flag->is_switch()) {
      if (value) throw UsageError{"flag " + flag->name + " takes no value"};
      values[flag->name] = "true";
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) throw UsageError{"flag " + flag->name + " needs a value"};
      value = args[++i];
    }
    if (!flag->words.empty() && std::find(flag->words.begin(), flag->words.end(), *value) == flag->words.end()) {
      throw UsageError{"flag " + flag->name + ": expected " + choice_list(flag->words) + ", got \"" + *value + "\""};
    }
    values[flag->name] = *value;
  }
  return ParsedFlags(spec, std::move(values), std::move(arguments), help);
}

std::string render_help(const CommandSpec& spec, std::string_view program) {
  std::string out = "Usage: kubegap-webhook " + spec.usage + "\n";
  if (!spec.intro.empty()) out += "\n" + spec.intro;
  if (!spec.flags.empty()) {
    std::size_t column = 0;
    for (const auto& f : spec.flags) column = std::max(column, flag_column(f).size() + 2);
    column = std::min(column, kMaxFlagColumn);
    out += "\nFlags:\n";
    for (const auto& f : spec.flags) {
      std::string text = f.help;
      const std::string shown = default_shown(f);
      if (f.required) {
        text += " (required)";
      } else if (!shown.empty()) {
        text += " (default " + shown + ")";
      }
      std::string left = flag_column(f);
      const auto lines = wrap(text, kHelpWidth - column);
      if (left.size() + 2 > column) {
        out += left + "\n";
        left.clear();
      }
      for (const auto& line : lines) {
        left.resize(column, ' ');
        out += left + line + "\n";
        left.clear();
      }
    }
  }
  if (!spec.outro.empty()) out += "\n" + spec.outro;
  return with_program_name(out, program);
}

std::string render_flag_reference(const std::vector<CommandSpec>& commands) {
  std::string out;
  for (const auto& spec : commands) {
    if (spec.flags.empty()) continue;
    out += "\n### " + spec.name + "\n\n`kubegap-webhook " + spec.usage + "`\n\n";
    out += "| flag | value | default | what |\n|---|---|---|---|\n";
    for (const auto& f : spec.flags) {
      std::string names = f.short_name.empty() ? "" : "`" + f.short_name + "`, ";
      names += "`" + f.name + "`";
      std::string value;
      if (!f.words.empty()) {
        for (const auto& w : f.words) value += (value.empty() ? "`" : " \\| `") + w + "`";
      } else {
        value = f.is_switch() ? "(switch)" : f.metavar;
      }
      std::string shown = default_shown(f);
      if (f.required) {
        shown = "(required)";
      } else if (f.default_text.empty() && !shown.empty()) {
        shown = "`" + shown + "`";
      }
      out += "| " + names + " | " + value + " | " + markdown_cell(shown) + " | " + markdown_cell(f.help) + " |\n";
    }
  }
  return out;
}

CompletionCommand to_completion(const CommandSpec& spec) {
  CompletionCommand out{spec.name, spec.summary, {}, spec.arguments, spec.file_arguments};
  for (const auto& f : spec.flags) {
    const auto kind = f.is_switch()     ? CompletionFlag::Value::kNone
                      : f.words.empty() ? f.completes
                                        : CompletionFlag::Value::kWords;
    out.flags.push_back({f.name, f.short_name, f.summary.empty() ? f.help : f.summary, kind, f.words});
  }
  return out;
}

}  // namespace kubegap

#include "webhook/cmd/completion.h"

#include <sstream>

namespace kubegap {
namespace {

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// function_name: a shell function name for the program ("kubegap-webhook" ->
// "_kubegap_webhook").
std::string function_name(std::string_view program) {
  std::string out = "_";
  for (const char c : program) out += (c == '-' || c == '.') ? '_' : c;
  return out;
}

std::vector<std::string> flag_names(const CompletionCommand& command) {
  std::vector<std::string> out;
  for (const auto& f : command.flags) {
    out.push_back(f.name);
    if (!f.short_name.empty()) out.push_back(f.short_name);
  }
  out.push_back("--help");
  return out;
}

std::string bash_script(std::string_view program, const std::vector<CompletionCommand>& commands) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const auto& c : commands) names.push_back(c.name);
  const std::string fn = function_name(program);
  std::ostringstream out;
  out << "# bash completion for " << program << ". Load it in this shell with\n"
      << "#   source <(" << program << " completion bash)\n"
      << "# or install it as /usr/share/bash-completion/completions/" << program << ".\n"
      << "# One candidate per line (mapfile): a file name with spaces stays one candidate.\n"
      << fn << "() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} command=${COMP_WORDS[1]}\n"
      << "  COMPREPLY=()\n"
      << "  if ((COMP_CWORD == 1)); then\n"
      << "    mapfile -t COMPREPLY < <(compgen -W \"" << join(names) << " --help --version\" -- \"$cur\")\n"
      << "    return\n"
      << "  fi\n"
      << "  # The value of the flag before the cursor.\n"
      << "  case \"$command $prev\" in\n";
  for (const auto& c : commands) {
    for (const auto& f : c.flags) {
      if (f.value == CompletionFlag::Value::kNone) continue;
      out << "    \"" << c.name << " " << f.name << "\"";
      if (!f.short_name.empty()) out << "|\"" << c.name << " " << f.short_name << "\"";
      out << ")";
      switch (f.value) {
        case CompletionFlag::Value::kFile:
          out << " compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); return ;;\n";
          break;
        case CompletionFlag::Value::kWords:
          out << " mapfile -t COMPREPLY < <(compgen -W \"" << join(f.words) << "\" -- \"$cur\"); return ;;\n";
          break;
        default:
          out << " return ;;\n";  // a free value (an address, a number): nothing to offer
      }
    }
  }
  out << "  esac\n"
      << "  case $command in\n";
  for (const auto& c : commands) {
    out << "    " << c.name << ")\n"
        << "      if [[ $cur == -* ]]; then\n"
        << "        mapfile -t COMPREPLY < <(compgen -W \"" << join(flag_names(c)) << "\" -- \"$cur\")\n";
    if (c.file_arguments) {
      out << "      else\n"
          << "        compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n";
    } else if (!c.arguments.empty()) {
      out << "      elif ((COMP_CWORD == 2)); then\n"
          << "        mapfile -t COMPREPLY < <(compgen -W \"" << join(c.arguments) << "\" -- \"$cur\")\n";
    }
    out << "      fi ;;\n";
  }
  out << "  esac\n"
      << "}\n"
      << "complete -F " << fn << " " << program << "\n";
  return out.str();
}

// zsh_quote: text inside a single-quoted _arguments spec, where [ ] : need a backslash.
std::string zsh_quote(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      if (c == '[' || c == ']' || c == ':') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string zsh_value(const CompletionFlag& f) {
  switch (f.value) {
    case CompletionFlag::Value::kFile:
      return ":file:_files";
    case CompletionFlag::Value::kWords:
      return ":value:(" + join(f.words) + ")";
    case CompletionFlag::Value::kAny:
      return ":value: ";
    default:
      return "";
  }
}

std::string zsh_script(std::string_view program, const std::vector<CompletionCommand>& commands) {
  const std::string fn = function_name(program);
  std::ostringstream out;
  out << "#compdef " << program << "\n"
      << "# zsh completion for " << program << ". Install it on $fpath as _" << program << ":\n"
      << "#   " << program << " completion zsh > \"${fpath[1]}/_" << program << "\"\n"
      << "# or load it in this shell with: source <(" << program << " completion zsh)\n"
      << fn << "() {\n"
      << "  local -a commands\n"
      << "  commands=(\n";
  for (const auto& c : commands) out << "    '" << c.name << ":" << zsh_quote(c.help) << "'\n";
  out << "  )\n"
      << "  if ((CURRENT == 2)); then\n"
      << "    _describe -t commands command commands\n"
      << "    return\n"
      << "  fi\n"
      << "  local command=$words[2]\n"
      << "  shift words\n"
      << "  ((CURRENT--))\n"
      << "  case $command in\n";
  for (const auto& c : commands) {
    out << "    " << c.name << ")\n"
        << "      _arguments \\\n";
    for (const auto& f : c.flags) {
      // Appended piece by piece: GCC 12 misreports "[" + std::string under -Wrestrict.
      std::string spec = "[";
      spec += zsh_quote(f.help);
      spec += ']';
      spec += zsh_value(f);
      if (f.short_name.empty()) {
        out << "        '" << f.name << spec << "' \\\n";
      } else {
        out << "        '(" << f.short_name << " " << f.name << ")'{" << f.short_name << "," << f.name << "}'" << spec
            << "' \\\n";
      }
    }
    out << "        '(-h --help)'{-h,--help}'[show help]'";
    if (c.file_arguments) {
      out << " \\\n        '*:path:_files'";
    } else if (!c.arguments.empty()) {
      out << " \\\n        '1:argument:(" << join(c.arguments) << ")'";
    }
    out << " ;;\n";
  }
  out << "  esac\n"
      << "}\n"
      << "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
      << "  " << fn << " \"$@\"\n"
      << "else\n"
      << "  compdef " << fn << " " << program << "\n"
      << "fi\n";
  return out.str();
}

}  // namespace

std::string completion_script(std::string_view shell, std::string_view program,
                              const std::vector<CompletionCommand>& commands) {
  if (shell == "bash") return bash_script(program, commands);
  if (shell == "zsh") return zsh_script(program, commands);
  return {};
}

}  // namespace kubegap

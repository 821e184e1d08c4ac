#pragma once
// Shell completion scripts for kubegap-webhook (`kubegap-webhook completion bash|zsh`),
// generated from the same command and flag tables the parser uses, so a new flag is
// completed without a second list to keep in step.

#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

// A flag as completion sees it: its names, whether it takes a value, and what the value
// is (a fixed set of words, a file, or anything).
struct CompletionFlag {
  std::string name;        // "--output"
  std::string short_name;  // "-o", or empty
  std::string help;        // one line, for zsh's descriptions
  enum class Value { kNone, kFile, kWords, kAny } value = Value::kNone;
  std::vector<std::string> words;  // kWords: the choices
};

struct CompletionCommand {
  std::string name;  // "check"
  std::string help;
  std::vector<CompletionFlag> flags;
  std::vector<std::string> arguments;  // positional words (ids, shells); empty: none
  bool file_arguments = false;         // positional arguments are paths
};

// completion_script: the script for `shell` ("bash" or "zsh"); empty for any other.
std::string completion_script(std::string_view shell, std::string_view program,
                              const std::vector<CompletionCommand>& commands);

}  // namespace kubegap

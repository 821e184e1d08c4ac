#pragma once
// One declarative table per command: its usage, its text and its flags. The parser, the
// help text, the shell completion and the docs' flag reference (docs/cli.md) are all
// generated from it, so a flag is added, described and defaulted in one place.
//
//   const CommandSpec& spec = find_command("scan");
//   ParsedFlags flags = parse_flags(spec, args);     // throws UsageError
//   if (flags.help()) std::cout << render_help(spec, "kubegap-webhook");
//   std::string output = flags.value("output");      // the table's default when absent

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/cmd/completion.h"

namespace kubegap {

// UsageError: the command line is wrong; the CLI prints it with a pointer to --help and
// exits 2.
struct UsageError {
  std::string message;
};

// FlagSpec: one flag. A flag with an empty `metavar` is a switch (no value).
struct FlagSpec {
  std::string name;           // "--output"
  std::string short_name;     // "-o", or empty
  std::string metavar;        // "FORMAT", "FILE", "HOST:PORT"; empty: a switch
  std::string default_value;  // what value() returns when the flag is absent; empty: none
  std::string default_text;   // how help and docs show a default that is not a literal value
  std::string help;           // what it does, one or more sentences (wrapped when printed)
  std::string summary;        // a few words, for zsh's completion descriptions
  CompletionFlag::Value completes = CompletionFlag::Value::kAny;
  std::vector<std::string> words;  // the only values accepted, when not empty
  bool required = false;

  bool is_switch() const { return metavar.empty(); }
};

// CommandSpec: one command, as help prints it: "Usage: PROGRAM <usage>", the intro, the
// flags, the outro.
struct CommandSpec {
  std::string name;     // "check"
  std::string summary;  // one line for the main help and completion
  std::string usage;    // after the program name: "check [flags] PATH..."
  std::string intro;    // paragraphs before "Flags:"
  std::vector<FlagSpec> flags;
  std::string outro;  // paragraphs after the flags
  // Positional arguments: their completion words (ids, shells), and whether they are paths.
  std::vector<std::string> arguments;
  bool file_arguments = false;
  bool takes_arguments = false;  // false: a positional argument is a usage error
};

// ParsedFlags: a command line parsed against its CommandSpec.
class ParsedFlags {
 public:
  ParsedFlags(const CommandSpec& spec, std::map<std::string, std::string> values, std::vector<std::string> arguments,
              bool help);

  bool help() const { return help_; }
  const std::vector<std::string>& arguments() const { return arguments_; }
  // given: the value typed, if the flag was given.
  std::optional<std::string> given(std::string_view name) const;
  // value: the value typed, else the table's default ("" when it has none).
  std::string value(std::string_view name) const;
  // has: whether a switch was given.
  bool has(std::string_view name) const { return given(name).has_value(); }
  // required: the value, or UsageError when the flag is absent or empty.
  std::string required(std::string_view name) const;
  // integer: value() as an integer in [min, max], or UsageError naming the flag.
  long long integer(std::string_view name, long long min, long long max) const;

 private:
  const FlagSpec& spec_of(std::string_view name) const;

  const CommandSpec& spec_;
  std::map<std::string, std::string> values_;  // by long name, with dashes
  std::vector<std::string> arguments_;
  bool help_ = false;
};

// parse_flags: "--name value", "--name=value", a flag's short form ("-o json", "-ojson",
// "-o=json"), switches, "--help"/"-h", and positional arguments where the command takes
// them ("-" alone is one: stdin). Values restricted to `words` are checked here.
ParsedFlags parse_flags(const CommandSpec& spec, const std::vector<std::string>& args);

// render_help: the command's help text, `program` in place of the program's name.
std::string render_help(const CommandSpec& spec, std::string_view program);

// render_flag_reference: the flags of `commands` as Markdown tables, one per command
// with flags (docs/cli.md holds this text between its flags:begin/end markers).
std::string render_flag_reference(const std::vector<CommandSpec>& commands);

// to_completion: the command as the completion generator sees it.
CompletionCommand to_completion(const CommandSpec& spec);

// with_program_name: `text` with "kubegap-webhook " written as `program` calls it
// ("kubectl kubegap " when run as the kubectl plugin).
std::string with_program_name(std::string text, std::string_view program);

// choice_list: "a, b or c".
std::string choice_list(const std::vector<std::string>& words);

}  // namespace kubegap

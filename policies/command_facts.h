#pragma once
// A container's command line read as a person skimming a manifest would, not as a shell
// would: `sh -c SCRIPT` is split into simple commands on ; & | and newlines, the first
// word of each (after shell keywords and VAR=value) is its program, and wrappers
// (mpirun, srun, env, timeout, uv run, python -m MODULE, ...) are looked through to the
// program they run. The evidence rules (policies/evidence.h) read the result.
//
//   const CommandFacts facts = command_facts({"sh", "-c"}, {"mpirun -np 8 bash -c 'ls; df'"});
//   // facts.programs == {"ls", "df"}

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

// kMaxCommandWords: how many words of a command line are read (CommandFacts::words holds
// at most this many; a longer one was cut).
inline constexpr std::size_t kMaxCommandWords = 4096;

// CommandFacts: a container's command line, digested.
struct CommandFacts {
  bool has_command = false;              // command or args given (else: the image's entrypoint)
  std::vector<std::string> programs;     // basename of the first word of each simple command
  std::vector<std::string> subcommands;  // the word after each program ("start" of `ray start`), or ""
  std::vector<std::string> words;        // every word, in order
  // How python runs code written in the manifest instead of a program file: "-c"
  // (`python -c CODE`) or "heredoc" (`python - <<EOF`, `python <<EOF`); empty otherwise.
  std::string_view inline_code = {};
  // What inline code visibly does (read from the whole command text, which holds it):
  // the training call it makes (".fit(", ".train(", ".backward("), or empty; and whether
  // it can keep anything: it names saving or writing, or uses a trainer that saves by
  // default (a `Trainer(`, Lightning, `.train(` of Hugging Face or Ultralytics).
  std::string_view code_trains = {};
  bool code_saves = false;
};

CommandFacts command_facts(const std::vector<std::string>& command, const std::vector<std::string>& args);

// append_facts: `more` read after what `into` already holds (a script the command runs
// from a file the manifest carries).
void append_facts(CommandFacts& into, const CommandFacts& more);

// normalized_flag: "--num-train-epochs" -> "num_train_epochs"; "steps=10" -> "steps".
std::string normalized_flag(std::string_view word);

// basename_view: the last path component of a word ("/app/train.py" -> "train.py").
inline std::string_view basename_view(std::string_view word) {
  const auto slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

}  // namespace kubegap

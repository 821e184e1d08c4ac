#include "policies/command_facts.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "policies/flag_words.h"
#include "policies/policy.h"
#include "policies/text.h"

namespace kubegap {
namespace {

std::string basename(std::string_view word) { return std::string(basename_view(word)); }

constexpr std::array<std::string_view, 5> kShells = {"sh", "bash", "ash", "dash", "zsh"};
// Words that start a shell compound command or prefix one: the program comes after.
constexpr std::array<std::string_view, 16> kKeywords = {"while", "until", "if", "then", "do",   "else", "elif",  "done",
                                                        "fi",    "!",     "{",  "}",    "time", "exec", "nohup", "for"};

bool is_keyword(std::string_view w) { return std::find(kKeywords.begin(), kKeywords.end(), w) != kKeywords.end(); }

// Declaration builtins before a command's assignments (`export A=1`): not a program, and
// not a word the rules read (`export` is no exporter of models).
constexpr std::array<std::string_view, 5> kDeclarations = {"export", "readonly", "declare", "local", "typeset"};

bool is_assignment(std::string_view w) {
  const auto eq = w.find('=');
  return eq != std::string_view::npos && eq > 0 && w.front() != '-' &&
         std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Programs that run another program given after their own options: the evidence and
// diagnostic rules judge the program that really runs (`mpirun -np 8 bash -c "ls"` runs
// ls). Shell syntax rather than policy, like kShells.
constexpr std::array<std::string_view, 17> kWrappers = {
    "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "srun", "env",    "timeout", "nice",
    "ionice", "numactl", "taskset",       "stdbuf",  "chrt",    "uv",   "poetry", "conda"};
// Wrappers whose program follows a `run` subcommand (uv run, poetry run, conda run -n x).
constexpr std::array<std::string_view, 3> kRunSubcommand = {"uv", "poetry", "conda"};
// Options of the wrappers above that take no value, so the word after one is the program
// (`mpirun --allow-run-as-root ls`). Any other option is taken to have a value when the
// next word cannot be a program (a number, a host list, a path to a host file).
constexpr std::array<std::string_view, 14> kNoValueOptions = {"--allow-run-as-root",
                                                              "-allow-run-as-root",
                                                              "--oversubscribe",
                                                              "-oversubscribe",
                                                              "--tag-output",
                                                              "-tag-output",
                                                              "--report-bindings",
                                                              "-report-bindings",
                                                              "--display-map",
                                                              "-display-map",
                                                              "-l",
                                                              "--label",
                                                              "-u",
                                                              "--unbuffered"};

template <std::size_t N>
bool one_of(const std::array<std::string_view, N>& list, std::string_view w) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

// could_be_program: a word that may start the wrapped command, as opposed to an option's
// value: a shell, an interpreter, another wrapper, a script file.
bool could_be_program(std::string_view w) {
  const std::string_view base = basename_view(w);
  return one_of(kShells, base) || one_of(kWrappers, base) || base.starts_with("python") || base.ends_with(".py") ||
         base.ends_with(".sh");
}

// is_shell_c_option: `-c`, `-ec`, `-xc`, ...: a cluster of a shell's short options that
// includes c (the next word is the script). `--workdir=...` is not one.
bool is_shell_c_option(std::string_view w) {
  return w.size() > 1 && w[0] == '-' && w[1] != '-' && w.find('c') != std::string_view::npos &&
         std::all_of(w.begin() + 1, w.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); });
}

bool is_number_like(std::string_view w) {  // "8", "30s", "1.5h": a count or duration
  if (w.empty() || !std::isdigit(static_cast<unsigned char>(w.front()))) return false;
  return std::all_of(w.begin(), w.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 's' || c == 'm' || c == 'h' || c == 'd';
  });
}

// unwrapped_start: the index of the command a wrapper at `at` runs, or words.size().
std::size_t unwrapped_start(const std::vector<std::string>& words, std::size_t at) {
  const std::string_view wrapper = basename_view(words[at]);
  std::size_t i = at + 1;
  if (one_of(kRunSubcommand, wrapper) && i < words.size() && words[i] == "run") ++i;
  while (i < words.size()) {
    const std::string_view w = words[i];
    if (w == "--") return i + 1;
    if (w.size() > 1 && w.front() == '-') {
      const bool takes_value = w.find('=') == std::string_view::npos && !one_of(kNoValueOptions, w) &&
                               i + 1 < words.size() && words[i + 1].front() != '-' && !could_be_program(words[i + 1]);
      i += takes_value ? 2 : 1;
    } else if (is_assignment(w) || is_number_like(w)) {
      ++i;  // env X=Y, timeout 30s
    } else {
      return i;
    }
  }
  return i;
}

// heredoc_delimiter: the word that ends the here-document a line opens (`<<EOF`,
// `<<-'EOF'`, `<< "EOF"`), or empty when it opens none: `<<<` is a here-string, `<<`
// inside quotes or `$((1 << 10))` is text or a shift, and a delimiter starts with a letter
// or an underscore.
std::string_view heredoc_delimiter(std::string_view line) {
  for (auto at = line.find("<<"); at != std::string_view::npos; at = line.find("<<", at + 2)) {
    std::string_view rest = line.substr(at + 2);
    if (rest.starts_with('<')) {
      at += 1;
      continue;
    }
    const std::string_view before = line.substr(0, at);
    const bool quoted = std::count(before.begin(), before.end(), '"') % 2 == 1 ||
                        std::count(before.begin(), before.end(), '\'') % 2 == 1;
    if (quoted || before.find("$((") != std::string_view::npos) continue;
    if (rest.starts_with('-')) rest.remove_prefix(1);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (!rest.empty() && (rest.front() == '\'' || rest.front() == '"')) rest.remove_prefix(1);
    if (rest.empty() || !(std::isalpha(static_cast<unsigned char>(rest.front())) || rest.front() == '_')) continue;
    std::size_t end = 0;
    while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
    return rest.substr(0, end);
  }
  return {};
}

// without_heredocs: the script without the bodies of its here-documents: they are data
// for a program (python code, a config file), not commands.
std::string without_heredocs(std::string_view script) {
  std::string out;
  std::string_view delimiter;
  while (!script.empty()) {
    const auto newline = script.find('\n');
    const std::string_view line = script.substr(0, newline);
    script = newline == std::string_view::npos ? std::string_view() : script.substr(newline + 1);
    if (!delimiter.empty()) {
      std::string_view trimmed = line;
      while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) trimmed.remove_prefix(1);
      while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) trimmed.remove_suffix(1);
      if (trimmed == delimiter) delimiter = {};
      continue;
    }
    out.append(line).append(1, '\n');
    delimiter = heredoc_delimiter(line);
  }
  return out;
}

// split_script: simple commands of a shell script, each a list of words (quotes and
// $(...) are not interpreted: a word keeps them, which is enough to read names).
// Here-document bodies are left out.
std::vector<std::vector<std::string>> split_script(std::string_view text) {
  std::string stripped;  // built only for a script with a here-document
  std::string_view script = text;
  if (text.find("<<") != std::string_view::npos) script = stripped = without_heredocs(text);
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) commands.back().push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
    // `$(NAME)` is a Kubernetes env reference, expanded by the kubelet before any shell
    // runs: part of the word (`s3://$(OUTPUT_BUCKET)`), not a command substitution.
    if (c == '(' && !word.empty() && word.back() == '$') {
      // Looked for within a name's length: a script of many unclosed `$(` stays linear.
      constexpr std::size_t kMaxNameLength = 256;
      const std::size_t close = script.substr(0, i + 2 + kMaxNameLength).find(')', i);
      const std::string_view name =
          close == std::string_view::npos ? std::string_view() : script.substr(i + 1, close - i - 1);
      if (!name.empty() && std::all_of(name.begin(), name.end(), [](char n) {
            return std::isalnum(static_cast<unsigned char>(n)) || n == '_' || n == '-' || n == '.';
          })) {
        word.append(script.substr(i, close - i + 1));
        i = close;
        continue;
      }
    }
    if (c == ';' || c == '&' || c == '|' || c == '\n' || c == '(' || c == ')' || c == '`') {
      end_word();
      if (!commands.back().empty()) commands.emplace_back();
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'') {
      end_word();
    } else {
      word += c;
    }
  }
  end_word();
  if (commands.back().empty()) commands.pop_back();
  return commands;
}

// kMaxWords: how much of a command line is read. Real command lines are far shorter; a
// hostile pod with hundreds of thousands of args must not make a review slow.
constexpr std::size_t kMaxWords = kMaxCommandWords;

void add_script(CommandFacts& facts, std::string_view script, int depth);

// program_of: the program a simple command runs, looking through wrappers, a nested
// `sh -c SCRIPT` (whose commands are added themselves) and `python -m MODULE`. Returns
// false when the nested script stood in for the program.
bool add_program(CommandFacts& facts, const std::vector<std::string>& words, std::size_t at, int depth) {
  while (at < words.size()) {
    const std::string base = basename(words[at]);
    // uv, poetry and conda wrap a program only with `run`: `conda activate ENV` and
    // `poetry install` are programs of their own (setting up, not running the job).
    const bool runs = !one_of(kRunSubcommand, base) || (at + 1 < words.size() && words[at + 1] == "run");
    if (one_of(kWrappers, base) && runs) {
      const std::size_t inner = unwrapped_start(words, at);
      if (inner >= words.size()) break;  // a wrapper alone (`env`) is its own program
      at = inner;
      continue;
    }
    if (one_of(kShells, base) && depth < 4) {
      for (std::size_t i = at + 1; i + 1 < words.size(); ++i) {
        if (is_shell_c_option(words[i])) {
          std::size_t script = i + 1;
          if (words[script] == "--" && script + 1 < words.size()) ++script;
          add_script(facts, words[script], depth + 1);
          return false;
        }
      }
    }
    if (base.starts_with("python") && at + 2 < words.size() && words[at + 1] == "-m") {
      facts.programs.push_back(words[at + 2]);
      facts.subcommands.push_back(at + 3 < words.size() ? words[at + 3] : std::string());
      return true;
    }
    break;
  }
  at = std::min(at, words.size() - 1);
  facts.programs.push_back(basename(words[at]));
  facts.subcommands.push_back(at + 1 < words.size() ? words[at + 1] : std::string());
  return true;
}

bool has_script_chars(std::string_view w) { return w.find_first_of(" \t\n;&|") != std::string_view::npos; }

// add_command: one simple command. Its words are kept for the evidence rules (an argument
// holding a script is kept as the script's words), and its program is found.
void add_command(CommandFacts& facts, const std::vector<std::string>& words, int depth = 0) {
  std::size_t first = words.size();
  bool declaration = false;  // `export A=1 B`, `local -r x`: no program at all
  // Room for its words at once (a script argument may add more), within the bound; still
  // geometric, since a script adds its simple commands one after another.
  const std::size_t needed = std::min(kMaxWords, facts.words.size() + words.size());
  if (needed > facts.words.capacity()) facts.words.reserve(std::max(needed, 2 * facts.words.capacity()));
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (facts.words.size() >= kMaxWords) break;
    if (first == words.size() && !declaration &&
        std::find(kDeclarations.begin(), kDeclarations.end(), words[i]) != kDeclarations.end()) {
      declaration = true;
      continue;
    }
    if (declaration && words[i].starts_with('-')) continue;  // its options (`declare -r`)
    if (has_script_chars(words[i])) {
      for (const auto& part : split_script(words[i])) {
        for (const auto& w : part) {
          if (facts.words.size() < kMaxWords) facts.words.push_back(w);
        }
      }
    } else {
      facts.words.push_back(words[i]);
    }
    if (first == words.size() && !is_keyword(words[i]) && !is_assignment(words[i])) first = i;
  }
  if (first < words.size() && !declaration) add_program(facts, words, first, depth);
}

void add_script(CommandFacts& facts, std::string_view script, int depth) {
  for (const auto& words : split_script(script)) add_command(facts, words, depth);
}

// read_inline_code: what the inline code in `argv` visibly does (CommandFacts::code_trains
// and code_saves). The words are Python's and its libraries', not policy: `.fit(` (Keras,
// scikit-learn, Lightning), `.train(` (Hugging Face Trainer, Ultralytics YOLO, PyTorch's
// train mode), `.backward(` (a hand-written loop); saving by name, writing files
// (`open(..., "w").write`, pickle, joblib), exporting, uploading or logging a model, and
// trainers whose default is to save checkpoints (Hugging Face Trainer saves every 500
// steps, Lightning's Trainer has a checkpoint callback, YOLO.train writes weights/), Keras'
// BackupAndRestore callback, MLflow's autolog (a local ./mlruns by default).
void read_inline_code(const std::vector<std::string>& argv, CommandFacts& facts) {
  static constexpr std::array<std::string_view, 3> kTrains = {".fit(", ".train(", ".backward("};
  static constexpr std::array<std::string_view, 17> kKeeps = {
      "backup",      "autolog", "save",      "checkpoint",   "ckpt",   "dump",   "export",   "write",    "upload",
      "push_to_hub", "output",  "log_model", "log_artifact", "pickle", "joblib", "Trainer(", "lightning"};
  for (const auto& a : argv) {
    for (const std::string_view call : kTrains) {
      if (facts.code_trains.empty() && a.find(call) != std::string::npos) facts.code_trains = call;
    }
    if (facts.code_trains == ".train(") facts.code_saves = true;
    facts.code_saves = facts.code_saves ||
                       std::any_of(kKeeps.begin(), kKeeps.end(), [&](std::string_view w) { return icontains(a, w); });
  }
}

}  // namespace

std::string normalized_flag(std::string_view word) {
  const auto eq = word.find('=');
  if (eq != std::string_view::npos) word = word.substr(0, eq);
  while (!word.empty() && word.front() == '-') word.remove_prefix(1);
  std::string out;
  out.reserve(word.size());  // within the small-string buffer for most names
  for (FoldedFlag folded(word); !folded.done();) out += folded.next();
  return out;
}

void append_facts(CommandFacts& into, const CommandFacts& more) {
  into.programs.insert(into.programs.end(), more.programs.begin(), more.programs.end());
  into.subcommands.insert(into.subcommands.end(), more.subcommands.begin(), more.subcommands.end());
  // The same bound on words as one command line has.
  const std::size_t room = into.words.size() < kMaxWords ? kMaxWords - into.words.size() : 0;
  into.words.insert(into.words.end(), more.words.begin(),
                    more.words.begin() + static_cast<std::ptrdiff_t>(std::min(room, more.words.size())));
  if (into.inline_code.empty()) {
    into.inline_code = more.inline_code;
    into.code_trains = more.code_trains;
    into.code_saves = more.code_saves;
  }
}

CommandFacts command_facts(const std::vector<std::string>& command, const std::vector<std::string>& args) {
  CommandFacts facts;
  // command then args, copied only when both are given (this runs for every container
  // of every review, and most give one or the other).
  std::vector<std::string> joined;
  if (!command.empty() && !args.empty()) {
    joined.reserve(command.size() + args.size());
    joined.insert(joined.end(), command.begin(), command.end());
    joined.insert(joined.end(), args.begin(), args.end());
  }
  const std::vector<std::string>& argv = !joined.empty() ? joined : command.empty() ? args : command;
  facts.has_command = !argv.empty();
  if (argv.empty()) return facts;
  // `sh -c SCRIPT` (-xc, -ec, ...): the script is the command; a single argv string with
  // spaces is a script too (some manifests put the whole command line in one string).
  const std::string first = basename(argv.front());
  std::size_t script_at = argv.size();
  if (std::find(kShells.begin(), kShells.end(), first) != kShells.end()) {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      if (is_shell_c_option(argv[i])) {
        script_at = i + 1;
        break;
      }
    }
  }
  // `sh -c -- SCRIPT`: the `--` ends the shell's options; it is not a command.
  if (script_at + 1 < argv.size() && argv[script_at] == "--") ++script_at;
  if (script_at < argv.size()) {
    for (std::size_t i = script_at; i < argv.size(); ++i) add_script(facts, argv[i], 1);
  } else if (has_script_chars(argv.front())) {
    // The whole command line in the first string ("python train.py --x", "mpirun ...").
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    add_script(facts, line, 1);
  } else {
    add_command(facts, argv);  // a wrapper's `sh -c SCRIPT` keeps its script whole
  }
  // `python -c CODE`, or python reading a here-document (`python - <<EOF`, `python <<EOF`):
  // an inline snippet, not a program file. A here-document can hold a whole training
  // program: one that says save or checkpoint anywhere is not taken for a snippet.
  const auto names_saving = [&] {  // read only for a here-document: rare
    return std::any_of(argv.begin(), argv.end(),
                       [](const std::string& a) { return icontains(a, "save") || icontains(a, "checkpoint"); });
  };
  bool inline_code = false;  // any, a snippet or not: read for what it does below
  for (std::size_t i = 0; i + 1 < facts.words.size() && facts.inline_code.empty(); ++i) {
    if (!basename(facts.words[i]).starts_with("python")) continue;
    // Interpreter switches first (`python3 -u - <<EOF`): one letter each, not -c or -m.
    const auto is_switch = [](std::string_view w) {
      return w.size() == 2 && w[0] == '-' && std::isalpha(static_cast<unsigned char>(w[1])) && w != "-c" && w != "-m";
    };
    while (i + 2 < facts.words.size() && is_switch(facts.words[i + 1])) ++i;
    const std::string_view next = facts.words[i + 1];
    const bool heredoc = next.starts_with("<<") || (next == "-" && i + 2 < facts.words.size() &&
                                                    std::string_view(facts.words[i + 2]).starts_with("<<"));
    if (next == "-c") facts.inline_code = "-c";
    if (heredoc && !names_saving()) facts.inline_code = "heredoc";
    inline_code = inline_code || next == "-c" || heredoc;
  }
  if (inline_code) read_inline_code(argv, facts);
  return facts;
}

}  // namespace kubegap

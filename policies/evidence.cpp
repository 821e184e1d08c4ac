#include "policies/evidence.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

namespace kubegap {
namespace {

constexpr std::array<std::string_view, 5> kShells = {"sh", "bash", "ash", "dash", "zsh"};
// Words that start a shell compound command or prefix one: the program comes after.
constexpr std::array<std::string_view, 16> kKeywords = {"while", "until", "if", "then", "do",   "else", "elif",  "done",
                                                        "fi",    "!",     "{",  "}",    "time", "exec", "nohup", "for"};

// Case-insensitive (ASCII) comparisons without lowered copies: they run for every word
// of every command line against every hint of the policy.
bool iequal(char a, char b) { return ascii_lower(a) == ascii_lower(b); }

bool icontains(std::string_view text, std::string_view needle) {
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(), iequal) != text.end();
}

bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(), iequal);
}

std::string_view basename_view(std::string_view word) {
  const auto slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

std::string basename(std::string_view word) { return std::string(basename_view(word)); }

bool is_keyword(std::string_view w) { return std::find(kKeywords.begin(), kKeywords.end(), w) != kKeywords.end(); }

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

// split_script: simple commands of a shell script, each a list of words (quotes and
// $(...) are not interpreted: a word keeps them, which is enough to read names).
std::vector<std::vector<std::string>> split_script(std::string_view script) {
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) commands.back().push_back(std::move(word));
    word.clear();
  };
  for (const char c : script) {
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
constexpr std::size_t kMaxWords = 4096;

void add_script(CommandFacts& facts, std::string_view script, int depth);

// program_of: the program a simple command runs, looking through wrappers, a nested
// `sh -c SCRIPT` (whose commands are added themselves) and `python -m MODULE`. Returns
// false when the nested script stood in for the program.
bool add_program(CommandFacts& facts, const std::vector<std::string>& words, std::size_t at, int depth) {
  while (at < words.size()) {
    const std::string base = basename(words[at]);
    if (one_of(kWrappers, base)) {
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
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (facts.words.size() >= kMaxWords) break;
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
  if (first < words.size()) add_program(facts, words, first, depth);
}

void add_script(CommandFacts& facts, std::string_view script, int depth) {
  for (const auto& words : split_script(script)) add_command(facts, words, depth);
}

bool matches(const std::vector<std::string>& patterns, std::string_view text) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return wildcard_match_icase(p, text); });
}

// flag_name: a word as a flag name: without leading dashes and any `=value`.
std::string_view flag_name(std::string_view word) {
  const auto eq = word.find('=');
  if (eq != std::string_view::npos) word = word.substr(0, eq);
  while (!word.empty() && word.front() == '-') word.remove_prefix(1);
  return word;
}

// same_flag: equal as normalized_flag would make them, without making them.
bool same_flag(std::string_view a, std::string_view b) {
  a = flag_name(a);
  b = flag_name(b);
  const auto fold = [](char c) { return c == '-' ? '_' : ascii_lower(c); };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return fold(x) == fold(y); });
}

// FlagValue: a flag name and its value, from `--name=value`, `name=value` or
// `--name value`.
struct FlagValue {
  std::string name;  // normalized
  std::string value;
};

std::vector<FlagValue> flag_values(const std::vector<std::string>& words) {
  std::vector<FlagValue> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const auto eq = w.find('=');
    if (eq != std::string::npos && eq > 0) {
      out.push_back({normalized_flag(w.substr(0, eq)), w.substr(eq + 1)});
    } else if (w.size() > 1 && w.front() == '-' && i + 1 < words.size() && words[i + 1].front() != '-') {
      out.push_back({normalized_flag(w), words[i + 1]});
    }
  }
  return out;
}

// NameSet: a policy list of flag names; a word is in it when it names one of them.
class NameSet {
 public:
  explicit NameSet(const std::vector<std::string>& names) : names_(names) {}
  // A dotted override (`--config.num_train_steps=10`, Hydra's `trainer.max_epochs=3`)
  // names its last component too.
  bool contains(std::string_view word) const {
    std::string_view last = flag_name(word);
    const auto dot = last.rfind('.');
    last = dot == std::string_view::npos ? std::string_view() : last.substr(dot + 1);
    return std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
      return same_flag(n, word) || (!last.empty() && same_flag(n, last));
    });
  }

 private:
  const std::vector<std::string>& names_;
};

bool looks_like_checkpoints(std::string_view text, const Policy& policy) {
  return std::any_of(policy.checkpoint_path_hints.begin(), policy.checkpoint_path_hints.end(),
                     [&](const std::string& hint) { return !hint.empty() && icontains(text, hint); });
}

// word_hint: the first word (or its basename) that matches one of `patterns`.
// word_hint: the first word (or its basename) that one of `patterns` matches. `flags`
// false: flag words (`--trainer.benchmark=true`) are not read, only programs and operands.
std::optional<std::string> word_hint(const CommandFacts& facts, const std::vector<std::string>& patterns,
                                     bool flags = true) {
  for (const auto& w : facts.words) {
    if (!flags && w.starts_with('-')) continue;
    if (matches(patterns, w) || matches(patterns, basename_view(w))) return basename(w);
  }
  return std::nullopt;
}

bool has_scheme(const std::string& value, const Policy& policy) {
  return std::any_of(policy.object_storage_schemes.begin(), policy.object_storage_schemes.end(),
                     [&](const std::string& scheme) { return istarts_with(value, scheme); });
}

}  // namespace

bool strong_training_evidence(std::string_view why) {
  for (std::string_view strong : {"launcher ", "flag ", "env ", "script "}) {
    if (why.starts_with(strong)) return true;
  }
  return false;
}

bool reads_checkpoints(const CommandFacts& facts, const Policy& policy) {
  return word_hint(facts, policy.training_hints.non_training).has_value();
}

bool looks_like_checkpoint_path(std::string_view path, const Policy& policy) {
  return looks_like_checkpoints(path, policy);
}

std::string normalized_flag(std::string_view word) {
  const auto eq = word.find('=');
  if (eq != std::string_view::npos) word = word.substr(0, eq);
  while (!word.empty() && word.front() == '-') word.remove_prefix(1);
  std::string out(word);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return c == '-' ? '_' : ascii_lower(c); });
  return out;
}

CommandFacts command_facts(const std::vector<std::string>& command, const std::vector<std::string>& args) {
  CommandFacts facts;
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), args.begin(), args.end());
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
  // `python -c CODE` or `python3 -c CODE`: an inline snippet.
  for (std::size_t i = 0; i + 1 < facts.words.size(); ++i) {
    if (basename(facts.words[i]).starts_with("python") && facts.words[i + 1] == "-c") facts.inline_code = true;
  }
  return facts;
}

std::optional<std::string> training_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy) {
  // A launcher that runs an inline `python -c` snippet (a rendezvous or NCCL smoke test)
  // launches no training program: the launcher alone is no evidence then.
  if (!facts.inline_code) {
    if (auto hint = word_hint(facts, policy.training_hints.launchers)) return "launcher " + *hint;
  }
  const NameSet flags(policy.training_hints.flags);
  for (const auto& [name, value] : flag_values(facts.words)) {
    if (flags.contains(name)) return "flag " + name;
  }
  for (const auto& w : facts.words) {  // boolean flags (--do_train) carry no value
    if (w.size() > 1 && w.front() == '-' && flags.contains(w)) {
      return "flag " + normalized_flag(w);
    }
  }
  for (const auto& e : env) {
    if (flags.contains(e.name)) return "env " + e.name;
  }
  if (auto hint = word_hint(facts, policy.training_hints.scripts)) return "script " + *hint;
  // Weak: a checkpoint-looking path argument or checkpoint flag, unless the program is
  // named like something that reads checkpoints.
  if (word_hint(facts, policy.training_hints.non_training)) return std::nullopt;
  for (const auto& w : facts.words) {
    if (looks_like_checkpoints(w, policy)) return "checkpoint argument " + w;
  }
  return std::nullopt;
}

namespace {

// runs: the i-th simple command's program is one of `entries` ("program" or "program
// word": the program and its first word, `ray start`); the entry that matched, or null.
const std::string* runs(const CommandFacts& facts, std::size_t i, const std::vector<std::string>& entries) {
  const std::string& program = facts.programs[i];
  const auto it = std::find_if(entries.begin(), entries.end(), [&](const std::string& entry) {
    const auto space = entry.find(' ');
    if (space == std::string::npos) return entry == program;
    return entry.compare(0, space, program) == 0 &&
           entry.compare(space + 1, std::string::npos, facts.subcommands[i]) == 0;
  });
  return it == entries.end() ? nullptr : &*it;
}

}  // namespace

bool runs_only_daemons(const CommandFacts& facts, const Policy& policy) {
  bool daemon = false;
  for (std::size_t i = 0; i < facts.programs.size(); ++i) {
    const bool is_daemon = runs(facts, i, policy.cluster_daemons) != nullptr;
    if (!is_daemon && !matches(policy.placeholder_commands, facts.programs[i])) return false;
    daemon = daemon || is_daemon;
  }
  return daemon;
}

std::optional<std::string> serving_evidence(const CommandFacts& facts, std::string_view entrypoint_image,
                                            const Policy& policy) {
  if (!entrypoint_image.empty()) {
    if (matches(policy.serving_images, entrypoint_image))
      return "inference server image " + std::string(entrypoint_image);
    return std::nullopt;
  }
  for (std::size_t i = 0; i < facts.programs.size(); ++i) {
    if (const std::string* server = runs(facts, i, policy.serving_programs)) return "inference server " + *server;
  }
  return std::nullopt;
}

std::optional<std::string> diagnostic_evidence(const CommandFacts& facts, const std::string& image,
                                               const std::vector<EnvVar>& env, const Policy& policy,
                                               std::optional<bool> trains) {
  if (!facts.has_command) {
    // The pause image holds a reservation and runs nothing.
    const std::string repo = basename(image.substr(0, image.find(':')));
    if (matches(policy.placeholder_commands, repo)) return "placeholder image " + repo;
    return std::nullopt;
  }
  if (trains ? *trains : training_evidence(facts, env, policy).has_value()) return std::nullopt;
  if (auto hint = word_hint(facts, policy.diagnostic_hints, false)) return "diagnostic " + *hint;
  if (facts.inline_code) return "inline python -c snippet";
  if (!facts.programs.empty() && std::all_of(facts.programs.begin(), facts.programs.end(), [&](const std::string& p) {
        return matches(policy.placeholder_commands, p);
      })) {
    return "placeholder " + facts.programs.front();
  }
  return std::nullopt;
}

namespace {

// FlagSwitch: a policy entry "name" (the flag given alone, or set true) or
// "name=pattern" (its value matches), against flags and env. A dotted entry
// ("checkpoint.enable") names that path, or its end (`--job.checkpoint.enable`).
// `bare_dotted` false: a bare switch names only an undotted flag: `--benchmark` is a
// program's benchmark mode, while in a config tree `trainer.benchmark=true` is Lightning's
// cuDNN autotuning of a real run (Lightning docs, Trainer `benchmark`).
struct FlagSwitch {
  std::string_view name;
  std::string_view pattern;  // empty: a bare switch
  bool bare_dotted = true;
  FlagSwitch(std::string_view entry, bool bare_dotted_flags) : name(entry), bare_dotted(bare_dotted_flags) {
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos) {
      name = entry.substr(0, eq);
      pattern = entry.substr(eq + 1);
    }
  }
  // names: the flag itself, or the last component of a dotted override
  // (`trainer.enable_checkpointing`, `+checkpoint.enable_checkpoint`).
  bool names(std::string_view flag) const {
    flag = flag_name(flag);
    while (!flag.empty() && flag.front() == '+') flag.remove_prefix(1);
    if (same_flag(name, flag)) return true;
    if (name.find('.') != std::string_view::npos) {  // a dotted entry: the flag's last components
      return flag.size() > name.size() && flag[flag.size() - name.size() - 1] == '.' &&
             same_flag(name, flag.substr(flag.size() - name.size()));
    }
    if (!bare_dotted && pattern.empty()) return false;
    const auto dot = flag.rfind('.');
    return dot != std::string_view::npos && same_flag(name, flag.substr(dot + 1));
  }
  bool accepts(std::string_view value) const {
    if (!pattern.empty()) return wildcard_match_icase(pattern, value);
    // A bare switch given a value: on unless the value says off.
    for (std::string_view off : {"false", "0", "no", "off", "none"}) {
      if (value.size() == off.size() && std::equal(off.begin(), off.end(), value.begin(), iequal)) return false;
    }
    return true;
  }
};

// switched: the first flag, bare flag or env var that one of `entries` matches, as written.
std::optional<std::string> switched(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                    const std::vector<std::string>& entries, bool bare_dotted) {
  for (const auto& entry : entries) {
    const FlagSwitch sw(entry, bare_dotted);
    for (std::size_t i = 0; i < facts.words.size(); ++i) {
      const std::string& w = facts.words[i];
      const auto eq = w.find('=');
      if (eq != std::string::npos && eq > 0) {
        if (sw.names(w.substr(0, eq)) && sw.accepts(std::string_view(w).substr(eq + 1))) return w;
        continue;
      }
      if (w.size() < 2 || w.front() != '-' || !sw.names(w)) continue;
      const bool has_value = i + 1 < facts.words.size() && facts.words[i + 1].front() != '-';
      if (has_value && sw.accepts(facts.words[i + 1])) return w + " " + facts.words[i + 1];
      if (!has_value && sw.pattern.empty()) return w;
    }
    for (const auto& e : env) {
      if (sw.names(e.name) && !e.value.empty() && sw.accepts(e.value)) return e.name + "=" + e.value;
    }
  }
  return std::nullopt;
}

// expand_env_reference: a value that starts with a reference to one of the container's
// env vars, `$(NAME)` (the kubelet expands it in command and args) or `$NAME`/`${NAME}`
// (a shell does), with that var's literal value put in: `--output_dir=$(OUT)/run1` with
// OUT=gs://b is gs://b/run1. Anything else is returned as written.
std::string expand_env_reference(const std::string& value, const std::vector<EnvVar>& env) {
  if (value.size() < 2 || value[0] != '$') return value;
  const char open = value[1] == '(' ? '(' : value[1] == '{' ? '{' : '\0';
  const std::size_t start = open == '\0' ? 1 : 2;
  std::size_t end = start;
  while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) || value[end] == '_')) ++end;
  if (end == start) return value;
  if (open != '\0' && (end >= value.size() || value[end] != (open == '(' ? ')' : '}'))) return value;
  const std::string_view name(value.data() + start, end - start);
  const auto var = std::find_if(env.begin(), env.end(), [&](const EnvVar& e) { return e.name == name; });
  if (var == env.end() || var->value.empty()) return value;
  return var->value + value.substr(end + (open == '\0' ? 0 : 1));
}

}  // namespace

std::optional<std::string> checkpointing_off(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy) {
  return switched(facts, env, policy.checkpointing_off, true);
}

std::optional<std::string> benchmark_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                              const Policy& policy) {
  if (auto flag = switched(facts, env, policy.benchmark_flags, false)) return "benchmark flag " + *flag;
  if (auto program = word_hint(facts, policy.benchmark_programs)) return "benchmark program " + *program;
  return std::nullopt;
}

std::optional<SavePath> save_path(const CommandFacts& facts, const std::vector<EnvVar>& env, const Policy& policy) {
  const NameSet storage_flags(policy.checkpoint_storage_flags);
  const auto local = [&](std::string_view name, const std::string& written) -> std::optional<std::string> {
    if (written.empty() || !storage_flags.contains(name) || icontains(flag_name(name), "bucket")) return std::nullopt;
    std::string value = expand_env_reference(written, env);
    if (value.size() < 2 || value.front() != '/') return std::nullopt;
    return value;
  };
  for (std::size_t i = 0; i < facts.words.size(); ++i) {
    const std::string& w = facts.words[i];
    const auto eq = w.find('=');
    if (eq != std::string::npos && eq > 0) {
      if (auto path = local(w.substr(0, eq), w.substr(eq + 1))) return SavePath{w.substr(0, eq), *path};
    } else if (w.size() > 1 && w.front() == '-' && i + 1 < facts.words.size()) {
      if (auto path = local(w, facts.words[i + 1])) return SavePath{w, *path};
    }
  }
  for (const auto& e : env) {
    if (auto path = local(e.name, e.value)) return SavePath{e.name, *path};
  }
  return std::nullopt;
}

std::optional<std::string> checkpoint_destination(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                                  const Policy& policy) {
  const NameSet storage_flags(policy.checkpoint_storage_flags);
  const auto destination = [&](std::string_view name, const std::string& written) -> std::optional<std::string> {
    if (written.empty() || !storage_flags.contains(name)) return std::nullopt;
    const std::string value = expand_env_reference(written, env);
    if (has_scheme(value, policy)) return value;
    if (icontains(flag_name(name), "bucket")) return "bucket " + value;
    return std::nullopt;
  };
  for (const auto& [name, value] : flag_values(facts.words)) {
    if (auto d = destination(name, value)) return d;
  }
  for (const auto& e : env) {
    if (auto d = destination(e.name, e.value)) return d;
  }
  return std::nullopt;
}

}  // namespace kubegap

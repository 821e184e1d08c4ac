#include "policies/evidence.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <set>

#include "policies/flag_words.h"
#include "policies/text.h"

namespace kubegap {
namespace {

bool looks_like_checkpoints(std::string_view text, const Policy& policy) {
  return std::any_of(policy.checkpoint_path_hints.begin(), policy.checkpoint_path_hints.end(),
                     [&](const std::string& hint) { return !hint.empty() && icontains(text, hint); });
}

// shell_setup_file: the i-th word is a file the shell reads to set itself up (`source
// ~/.bash_profile`, `. env.sh`, any dotfile): it runs no program of its own, and
// `*profil*` names profilers, not a login profile.
bool shell_setup_file(const CommandFacts& facts, std::size_t i) {
  const std::string_view w = facts.words[i];
  return basename_view(w).starts_with('.') || (i > 0 && (facts.words[i - 1] == "source" || facts.words[i - 1] == "."));
}

// word_hint: the first word (or its basename) that one of `patterns` matches. `flags`
// false: flag words (`--trainer.benchmark=true`) are not read, only programs and operands.
// `ignored`: a word read out of each name before it is matched ("pretrained" for training
// scripts: weights a program loads, not training; eval.clf.pretrained.folds.bash
// evaluates, train.regr.pretrained.folds.bash trains).
std::optional<std::string> word_hint(const CommandFacts& facts, const PatternList& patterns, bool flags = true,
                                     std::string_view ignored = {}) {
  std::string buffer;  // a name without `ignored`, reused; empty unless a name holds it
  const auto hit = [&](std::string_view text) {
    if (ignored.empty() || text.find(ignored) == std::string_view::npos) return matches(patterns, text);
    buffer.assign(text);
    for (auto at = buffer.find(ignored); at != std::string::npos; at = buffer.find(ignored, at)) {
      buffer.erase(at, ignored.size());
    }
    return matches(patterns, buffer);
  };
  for (std::size_t i = 0; i < facts.words.size(); ++i) {
    const std::string& w = facts.words[i];
    if (!flags && w.starts_with('-')) continue;
    const std::string_view base = basename_view(w);
    if (shell_setup_file(facts, i)) continue;
    // A word without a '/' is its own basename: matched once, not twice.
    if (hit(w) || (base.size() != w.size() && hit(base))) return std::string(base);
    // `python -m pkg.main_train` runs pkg/main_train.py: its module is matched as that file.
    if (i > 0 && facts.words[i - 1] == "-m" && base.size() == w.size() && !w.starts_with('-')) {
      const auto dot = w.rfind('.');
      std::string file(dot == std::string::npos ? std::string_view(w) : std::string_view(w).substr(dot + 1));
      file += ".py";
      if (hit(file)) return file;
    }
  }
  return std::nullopt;
}

}  // namespace

bool strong_training_evidence(std::string_view why) {
  for (std::string_view strong : {"launcher ", "flag ", "env ", "script ", "subcommand "}) {
    if (why.starts_with(strong)) return true;
  }
  return false;
}

namespace {

// image_name: an image reference's repository name, without registry, path, tag or
// digest: "inference-checkpoint" of "us-docker.pkg.dev/x/inference/inference-checkpoint:v0.2".
std::string_view image_name(std::string_view image) {
  image = image.substr(0, image.find('@'));
  const auto slash = image.rfind('/');
  if (slash != std::string_view::npos) image.remove_prefix(slash + 1);
  return image.substr(0, image.find(':'));
}

}  // namespace

namespace {

// Shell builtins and file utilities: the word after one is a name or a path (`trap
// on_exit EXIT`, `function on_script_completion {`, `mkdir /results/eval`), not a verb
// of the program. Shell syntax, not policy.
constexpr std::array<std::string_view, 30> kNoVerbs = {
    "pushd",  "popd",  "activate", "head",  "tail", "export", "function", "trap",  "echo", "printf",
    "cd",     "mkdir", "touch",    "cat",   "ls",   "rm",     "cp",       "mv",    "ln",   "test",
    "source", "set",   "unset",    "alias", "wait", "sleep",  "tee",      "chmod", "tar",  "find"};

// Subcommands of tools that act on a named thing (`git checkout train`, `kubectl logs
// train`, `gsutil cp x train`, `conda activate train`): the word after one is that name,
// not a verb after a task.
constexpr std::array<std::string_view, 19> kNoTaskWords = {
    "checkout", "branch", "switch", "clone", "pull", "push", "fetch",    "add",     "commit", "logs",
    "get",      "delete", "cp",     "mv",    "sync", "tag",  "activate", "install", "create"};

// verb_of: the i-th command's subcommand when it is a verb of its program (a plain word
// after a program that takes verbs), or empty.
std::string_view verb_of(const CommandFacts& facts, std::size_t i) {
  const std::string& program = facts.programs[i];
  const std::string& sub = facts.subcommands[i];
  const bool plain = !sub.empty() && sub.front() != '-' && std::all_of(sub.begin(), sub.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!plain || std::find(kNoVerbs.begin(), kNoVerbs.end(), program) != kNoVerbs.end()) return {};
  return sub;
}

// names_what_runs: one of `patterns` matches a word that names what the command runs: a
// program (`lm_eval` of `python -m lm_eval`), its subcommand (`vllm serve`,
// `llamafactory-cli export`) or a script file (`eval.py`, `/opt/convert.sh`); not another
// operand (a shell function named on_script_completion, a data path, a flag).
bool names_what_runs(const CommandFacts& facts, const PatternList& patterns) {
  for (std::size_t i = 0; i < facts.programs.size(); ++i) {
    if (matches(patterns, facts.programs[i])) return true;
    if (const std::string_view verb = verb_of(facts, i); !verb.empty() && matches(patterns, verb)) return true;
  }
  return std::any_of(facts.words.begin(), facts.words.end(), [&](const std::string& w) {
    return !w.starts_with('-') && (w.ends_with(".py") || w.ends_with(".sh")) && matches(patterns, basename_view(w));
  });
}

// training_verb: "PROGRAM VERB" when a program or a python script is given a verb that
// trains (`amplfi-flow-cli fit`, `python main.py fit`, `yolo train`), unless that program
// or script is named for reading checkpoints.
std::optional<std::string> training_verb(const CommandFacts& facts, const Policy& policy) {
  const std::vector<std::string>& verbs = policy.training_hints.verbs;
  const auto is_verb = [&](std::string_view w) { return std::find(verbs.begin(), verbs.end(), w) != verbs.end(); };
  const auto reader = [&](std::string_view name) { return matches(policy.training_hints.non_training, name); };
  for (std::size_t i = 0; i < facts.programs.size(); ++i) {
    const std::string& program = facts.programs[i];
    if (program.starts_with("python") || reader(program)) continue;  // python's subcommand is the script
    const std::string_view verb = verb_of(facts, i);
    if (!verb.empty() && is_verb(verb)) return program + " " + std::string(verb);
  }
  // A task word first: `yolo detect train` (Ultralytics docs, CLI), `darknet detector
  // train` (the darknet README). Looked for only where a verb stands, so a long script
  // costs a pass over its words.
  for (std::size_t k = 2; k < facts.words.size(); ++k) {
    if (!is_verb(facts.words[k])) continue;
    const std::string_view task = facts.words[k - 1];
    const std::string_view program = basename_view(facts.words[k - 2]);
    if (std::find(kNoTaskWords.begin(), kNoTaskWords.end(), task) != kNoTaskWords.end()) continue;
    for (std::size_t i = 0; i < facts.programs.size(); ++i) {
      if (facts.programs[i] == program && facts.subcommands[i] == task && !program.starts_with("python") &&
          !reader(program) && !verb_of(facts, i).empty()) {
        return std::string(program) + " " + std::string(task) + " " + facts.words[k];
      }
    }
  }
  // After a python script only LightningCLI's `fit` (`python main.py fit --config c.yaml`):
  // another word there is as often a data split (`python preprocess.py train`).
  for (std::size_t k = 0; k + 1 < facts.words.size(); ++k) {
    const std::string_view script = basename_view(facts.words[k]);
    if (script.ends_with(".py") && facts.words[k + 1] == "fit" && is_verb("fit") && !reader(script)) {
      return std::string(script) + " fit";
    }
  }
  return std::nullopt;
}

}  // namespace

bool reads_checkpoints(const CommandFacts& facts, const Policy& policy, std::string_view entrypoint_image) {
  if (names_what_runs(facts, policy.training_hints.non_training)) return true;
  return !entrypoint_image.empty() && matches(policy.training_hints.non_training, image_name(entrypoint_image));
}

namespace {

// launches_only_readers: the command's python scripts are all named for reading
// checkpoints (`torchrun example_chat_completion.py`, `deepspeed inference.py`); other
// words (`export`, `--eval_steps`, `--compile`) do not count.
bool launches_only_readers(const CommandFacts& facts, const Policy& policy) {
  bool any = false;
  for (const auto& w : facts.words) {
    if (w.starts_with('-') || !w.ends_with(".py")) continue;
    if (!matches(policy.training_hints.non_training, basename_view(w))) return false;
    any = true;
  }
  return any;
}

}  // namespace

bool looks_like_checkpoint_path(std::string_view path, const Policy& policy) {
  return looks_like_checkpoints(path, policy);
}

std::optional<std::string> training_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy, std::string_view entrypoint_image) {
  // A launcher that runs an inline `python -c` snippet (a rendezvous or NCCL smoke test) or
  // a program named for reading checkpoints (`torchrun example_chat_completion.py`) launches
  // no training program: the launcher alone is no evidence then.
  if (facts.inline_code.empty() && !launches_only_readers(facts, policy)) {
    if (auto hint = word_hint(facts, policy.training_hints.launchers)) return "launcher " + *hint;
  }
  const NameSet flags(policy.training_hints.flags);
  for (const auto& [name, value] : flag_values(facts.words)) {
    if (flags.contains(name)) return "flag " + normalized_flag(name);
  }
  for (const auto& w : facts.words) {  // boolean flags (--do_train) carry no value
    if (w.size() > 1 && w.front() == '-' && flags.contains(w)) {
      return "flag " + normalized_flag(w);
    }
  }
  for (const auto& e : env) {
    if (flags.contains(e.name)) return "env " + e.name;
  }
  if (auto script = word_hint(facts, policy.training_hints.scripts, true, "pretrained")) return "script " + *script;
  // A program listed for where it saves unasked is a training program (Horovod's
  // keras_mnist.py: no training word in its name).
  if (!policy.saves_by_default.empty()) {
    for (const auto& w : facts.words) {
      if (saves_by_default_entry(w, {}, policy) != nullptr) return "script " + std::string(basename_view(w));
    }
  }
  if (auto verb = training_verb(facts, policy)) return "subcommand " + *verb;
  if (!facts.code_trains.empty()) return "inline python that calls " + std::string(facts.code_trains) + ")";
  // Weak: a checkpoint-looking path argument or checkpoint flag, unless the program is
  // named like something that reads checkpoints.
  if (reads_checkpoints(facts, policy, entrypoint_image)) return std::nullopt;
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
    const std::string_view repo = image_name(image);
    if (matches(policy.placeholder_commands, repo)) return "placeholder image " + std::string(repo);
    return std::nullopt;
  }
  if (trains ? *trains : training_evidence(facts, env, policy).has_value()) return std::nullopt;
  if (auto hint = word_hint(facts, policy.diagnostic_hints, false)) return "diagnostic " + *hint;
  if (!facts.inline_code.empty() && facts.code_trains.empty()) {
    return "inline python " + std::string(facts.inline_code) + " snippet";
  }
  if (!facts.programs.empty() && std::all_of(facts.programs.begin(), facts.programs.end(), [&](const std::string& p) {
        return matches(policy.placeholder_commands, p);
      })) {
    return "placeholder " + facts.programs.front();
  }
  return std::nullopt;
}

namespace {

// count_within: `value` is `pattern` with a whole number from 1 to `max` where `#` is
// (the rest compared case-insensitively): "#ba" takes "12ba", "#" takes "50". Zero and
// negative counts mean "no limit" in most trainers (max_steps=-1), so they never match.
bool count_within(std::string_view pattern, std::string_view value, std::int64_t max) {
  const auto hash = pattern.find('#');
  if (hash == std::string_view::npos) return false;
  const std::string_view before = pattern.substr(0, hash), after = pattern.substr(hash + 1);
  if (value.size() <= before.size() + after.size()) return false;
  const auto literal = [](std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), iequal);
  };
  if (!literal(before, value.substr(0, before.size())) || !literal(after, value.substr(value.size() - after.size()))) {
    return false;
  }
  const std::string_view digits = value.substr(before.size(), value.size() - before.size() - after.size());
  std::int64_t count = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    count = count * 10 + (c - '0');
    if (count > max) return false;
  }
  return count >= 1;
}

// FlagSwitch: a policy entry "name" (the flag given alone, or set true) or
// "name=pattern" (its value matches), against flags and env. A dotted entry
// ("checkpoint.enable") names that path, or its end (`--job.checkpoint.enable`).
// `bare_dotted` false: a bare switch names only an undotted flag: `--benchmark` is a
// program's benchmark mode, while in a config tree `trainer.benchmark=true` is Lightning's
// cuDNN autotuning of a real run (Lightning docs, Trainer `benchmark`).
// `max_count` above 0: the value is a count from 1 to max_count where the pattern has `#`
// (a bare entry: the value is the count), the rest literal: "max_duration=#ba" takes
// `12ba` (composer's unit of batches).
struct FlagSwitch {
  std::string_view name;
  std::string_view pattern;  // empty: a bare switch
  bool bare_dotted = true;
  std::int64_t max_count = 0;
  char last = '\0';       // PatternList::Entry::flag_last of the entry
  bool wildcard = false;  // the name has `*` (`*data*=synthetic*`): matched as a pattern
  FlagSwitch(std::string_view entry, char flag_last, bool bare_dotted_flags, std::int64_t max = 0)
      : name(entry), bare_dotted(bare_dotted_flags), max_count(max), last(flag_last) {
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos) {
      name = entry.substr(0, eq);
      pattern = entry.substr(eq + 1);
    }
    wildcard = name.find('*') != std::string_view::npos;
  }
  // names: the flag itself, or the last component of a dotted override
  // (`trainer.enable_checkpointing`, `+checkpoint.enable_checkpoint`).
  // key: a flag word as names_key compares it: no dashes, `+` or `=value`.
  static std::string_view key(std::string_view flag) {
    flag = flag_name(flag);
    while (!flag.empty() && flag.front() == '+') flag.remove_prefix(1);
    return flag;
  }
  bool names(std::string_view flag) const { return names_key(key(flag)); }
  bool names_key(std::string_view flag) const {
    // Every way of naming it below ends the flag with the name: one byte rejects nearly
    // every (entry, word) pair, and this runs for each of them.
    if (last != '\0' && (flag.empty() || fold_flag_char(flag.back()) != last)) return false;
    // A pattern name is matched against the whole flag as normalized_flag spells it,
    // folded on the stack (this runs for every flag word of every review).
    if (wildcard) {
      std::array<char, 128> folded{};
      std::size_t n = 0;
      for (FoldedFlag f(flag_name(flag)); !f.done(); folded[n++] = f.next()) {
        if (n == folded.size()) return false;  // no data flag is this long
      }
      return wildcard_match_icase(name, std::string_view(folded.data(), n));
    }
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
    if (max_count > 0) return count_within(pattern.empty() ? "#" : pattern, value, max_count);
    if (!pattern.empty()) return wildcard_match_icase(pattern, value);
    // A bare switch given a value: on unless the value says off.
    for (std::string_view off : {"false", "0", "no", "off", "none"}) {
      if (value.size() == off.size() && std::equal(off.begin(), off.end(), value.begin(), iequal)) return false;
    }
    return true;
  }
};

// WordFlag: a word of a command line that can name a flag, split once per call of
// switched rather than once per policy entry: `name=value` (joined) or `--name`.
struct WordFlag {
  std::string_view key;    // FlagSwitch::key of the name
  std::string_view value;  // joined: what follows '='
  std::size_t index = 0;   // in facts.words
  bool joined = false;
  std::uint64_t bytes = 0;  // byte_mask of the key
};

// switched: the first flag, bare flag or env var that one of `entries` matches, as written.
std::optional<std::string> switched(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                    const PatternList& entries, bool bare_dotted, std::int64_t max_count = 0) {
  // Reused by each thread: this runs several times for every container of every review.
  thread_local std::vector<WordFlag> flags;
  flags.clear();
  for (std::size_t i = 0; i < facts.words.size(); ++i) {
    const std::string_view w = facts.words[i];
    const auto eq = w.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      const std::string_view key = FlagSwitch::key(w.substr(0, eq));
      flags.push_back({key, w.substr(eq + 1), i, true, byte_mask(key)});
    } else if (w.size() >= 2 && w.front() == '-') {
      const std::string_view key = FlagSwitch::key(w);
      flags.push_back({key, {}, i, false, byte_mask(key)});
    }
  }
  // The folded last bytes that end a flag's or an env var's name here: an entry whose
  // name is no pattern and ends in none of them names nothing, and is passed over before
  // FlagSwitch parses it (most entries of most lists, for every container of a review).
  std::array<bool, 256> ends{};
  const auto end_of = [&](std::string_view key) {
    if (!key.empty()) ends[static_cast<unsigned char>(fold_flag_char(key.back()))] = true;
  };
  for (const WordFlag& f : flags) end_of(f.key);
  for (const auto& e : env) end_of(FlagSwitch::key(e.name));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // The entry's last byte, known since the list was set, rejects most entries unparsed.
    const char last = entries.compiled(i).flag_last;
    if (last != '\0' && !ends[static_cast<unsigned char>(last)]) continue;
    const FlagSwitch sw(entries[i], last, bare_dotted, max_count);
    const std::uint64_t name_bytes = entries.compiled(i).name_bytes;
    for (const WordFlag& f : flags) {
      if ((name_bytes & ~f.bytes) != 0 || !sw.names_key(f.key)) continue;
      const std::string& w = facts.words[f.index];
      if (f.joined) {
        if (sw.accepts(f.value)) return w;
        continue;
      }
      const bool has_value = f.index + 1 < facts.words.size() && !facts.words[f.index + 1].starts_with('-');
      if (has_value && sw.accepts(facts.words[f.index + 1])) return w + " " + facts.words[f.index + 1];
      if (!has_value && sw.pattern.empty() && sw.max_count == 0) return w;
    }
    for (const auto& e : env) {
      if (sw.names(e.name) && !e.value.empty() && sw.accepts(e.value)) return e.name + "=" + e.value;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkpointing_off(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                             const Policy& policy) {
  if (auto off = switched(facts, env, policy.checkpointing_off, true)) {
    if (switched(facts, env, policy.checkpointing_on, true)) return std::nullopt;  // it saves another way
    return off;
  }
  // Inline code that trains and visibly keeps nothing (a Keras `model.fit` demo on random
  // data, printing its loss) has nothing to lose.
  // No other program that may train beside the inline code; `conda activate ENV`, `conda
  // install`, `uv pip install`, `poetry install` (like `pip`, a placeholder) only set up
  // the environment the code runs in.
  const auto python_only = [&] {
    for (std::size_t i = 0; i < facts.programs.size(); ++i) {
      const std::string& p = facts.programs[i];
      const std::string_view sub = i < facts.subcommands.size() ? std::string_view(facts.subcommands[i]) : "";
      const bool sets_up = ((p == "conda" || p == "mamba" || p == "micromamba") &&
                            (sub == "activate" || sub == "install" || sub == "create")) ||
                           (p == "uv" && sub == "pip") || (p == "poetry" && sub == "install");
      if (!p.starts_with("python") && !sets_up && !matches(policy.placeholder_commands, p)) return false;
    }
    return true;
  };
  if (!facts.code_trains.empty() && !facts.code_saves && python_only()) {
    return "inline python code, which calls " + std::string(facts.code_trains) + ") and saves nothing";
  }
  return saves_only_when_told(facts, env, policy);
}

std::optional<std::string> saves_only_when_told(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                                const Policy& policy) {
  // A program with no code that saves keeps nothing, whatever it is told (a fork that
  // saves would take a save flag: then it is judged).
  const auto run_of = [&](std::string_view program) {
    return std::find_if(facts.words.begin(), facts.words.end(),
                        [&](const std::string& w) { return !w.starts_with('-') && names_program(program, w); });
  };
  // Read only once a listed program runs: this is on every command's path.
  const auto told_where = [&] {
    const NameSet storage_flags(policy.checkpoint_storage_flags);
    return std::any_of(facts.words.begin(), facts.words.end(), [&](const std::string& w) {
      return w.size() > 1 && w.front() == '-' && storage_flags.contains(w);
    });
  };
  for (const auto& program : policy.saves_nothing) {
    const auto run = run_of(program);
    if (run == facts.words.end()) continue;
    if (told_where()) return std::nullopt;
    return std::string(basename_view(*run)) + ", which has no code that saves";
  }
  for (const auto& entry : policy.saves_only_with) {
    const auto eq = entry.rfind('=');
    if (eq == std::string::npos || eq == 0) continue;
    const auto run = run_of(std::string_view(entry).substr(0, eq));
    if (run == facts.words.end()) continue;
    // A flag that names where to save says the program was told to (or is a fork that
    // saves).
    if (told_where()) return std::nullopt;
    const PatternList told{entry.substr(eq + 1)};
    if (switched(facts, env, told, true)) continue;
    return std::string(basename_view(*run)) + ", which saves only with --" + told.front() + " (not given)";
  }
  return std::nullopt;
}

std::optional<std::string> short_run(const CommandFacts& facts, const std::vector<EnvVar>& env, const Policy& policy) {
  if (policy.short_run_max_steps <= 0) return std::nullopt;
  return switched(facts, env, policy.short_run_flags, true, policy.short_run_max_steps);
}

std::optional<std::string> benchmark_evidence(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                              const Policy& policy) {
  if (auto flag = switched(facts, env, policy.benchmark_flags, false)) return "benchmark flag " + *flag;
  if (auto program = word_hint(facts, policy.benchmark_programs)) return "benchmark program " + *program;
  if (auto run = short_run(facts, env, policy)) {
    return "short run " + *run + " (at most " + std::to_string(policy.short_run_max_steps) + " steps)";
  }
  return std::nullopt;
}

}  // namespace kubegap

#include "policies/save_places.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include "policies/flag_words.h"
#include "policies/text.h"

namespace kubegap {

std::string resolve_path(std::string_view base, std::string_view path) {
  std::string out;
  if (path.starts_with('/')) {
    base = {};
  } else if (!base.starts_with('/')) {
    return out;
  }
  std::vector<std::string_view> parts;
  for (std::string_view rest : {base, path}) {
    while (!rest.empty()) {
      const auto slash = rest.find('/');
      const std::string_view part = rest.substr(0, slash);
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
      if (part.empty() || part == ".") continue;
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
        continue;
      }
      parts.push_back(part);
    }
  }
  for (const auto part : parts) (out += '/') += part;
  return out.empty() ? "/" : out;
}

namespace {

// shell_name: a shell variable's name (letters, digits, underscores; not a digit first).
bool shell_name(std::string_view name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front())) &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// NameWords: what the words of a flag or env name say (policy savePlaceNames).
struct NameWords {
  bool saves = false;        // a word of `saves`
  bool reads = false;        // a word of `reads`
  bool place_last = false;   // the last word is one of `places`
  bool bucket_last = false;  // the last word ends in "bucket" (MODEL_BUCKET, gcsbucket)
  bool listed_last = false;  // the last word is a listed name itself (MODEL_CHECKPOINT)
  int words = 0;             // how many words the name has
};

// name_words: the name's words as normalized_flag spells them (split at `_` and `.`),
// read on the stack: this runs for every flag of every command line. `listed_last` is
// read only when asked (`with_listed`): it compares each word with every listed name.
NameWords name_words(std::string_view name, const Policy& policy, bool with_listed = false) {
  const SavePlaceNames& names = policy.save_place_names;
  NameWords out;
  std::array<char, 32> buffer{};  // longer words are in no list
  std::size_t size = 0;
  bool too_long = false;
  const auto end_word = [&] {
    if (size == 0 && !too_long) return;
    const std::string_view word(buffer.data(), too_long ? 0 : size);
    const auto in = [&](const std::vector<std::string>& list) {
      return !word.empty() && std::any_of(list.begin(), list.end(), [&](const std::string& w) {
        return w.size() == word.size() && std::equal(w.begin(), w.end(), word.begin(), iequal);
      });
    };
    out.saves = out.saves || in(names.saves);
    out.reads = out.reads || in(names.reads);
    out.place_last = in(names.places);
    out.bucket_last = word.ends_with("bucket");
    ++out.words;
    const char initial = word.empty() ? '\0' : flag_initial(word);  // read once, not once per name
    out.listed_last =
        with_listed && !word.empty() &&
        std::any_of(policy.checkpoint_storage_flags.begin(), policy.checkpoint_storage_flags.end(),
                    [&](const std::string& f) { return flag_initial(f) == initial && same_flag_folded(f, word); });
    size = 0;
    too_long = false;
  };
  for (FoldedFlag folded(flag_name(name)); !folded.done();) {
    const char c = folded.next();
    if (c == '_' || c == '.') {
      end_word();
    } else if (size < buffer.size()) {
      buffer[size++] = c;
    } else {
      too_long = true;
    }
  }
  end_word();
  return out;
}

// local_save_name: a name the words of which say the run saves there (savePlaceNames).
bool local_save_name(std::string_view name, const Policy& policy) {
  const NameWords words = name_words(name, policy);
  return words.saves && words.place_last && !words.reads;
}

// save_place_argument: `word` is an absolute path given as a plain argument (not a flag's
// value) whose last directory is named for what a run saves: `train_start.sh CODE
// /job/output/`, `cp model.pt /checkpoints`. Its words are read as a flag's (output,
// ckpt_out; not data_output or pretrained_ckpt), without the `places` ending a flag needs.
bool save_place_argument(std::string_view word, std::string_view before, const Policy& policy) {
  if (word.size() < 2 || word.front() != '/' || word.find_first_of("$:") != std::string_view::npos) return false;
  if (before.size() > 1 && before.front() == '-' && before.find('=') == std::string_view::npos) return false;
  while (word.size() > 1 && word.back() == '/') word.remove_suffix(1);
  const NameWords words = name_words(basename_view(word), policy);
  return words.saves && !words.reads;
}

// default_place: where the program the command's word `i` runs (policy savesByDefault,
// saves_by_default_entry) saves when nothing tells it, resolved: a PLACE of `./DIR`
// under `cwd`, `<script>/DIR` beside the script, an absolute one as it is. A FLAG of the
// entry given on the command line names the place instead (`--checkpoint-format
// /ckpt/{epoch}.h5`). Empty when the program is not listed or the place cannot be
// resolved (the working directory is the image's, which the manifest does not show).
std::optional<SavePath> default_place(const CommandFacts& facts, std::size_t i, std::string_view cwd,
                                      const Policy& policy, bool& matched) {
  const std::string_view word = facts.words[i];
  const std::string* entry = saves_by_default_entry(word, {}, policy);
  // A relative script under a known directory (`cd yolov5 && python train.py`) is matched
  // by its whole path too. This runs for every word: only a `.py` word is resolved, and
  // only under a directory of a sane length (a hostile 100 KB workingDir is not copied
  // for each of thousands of words).
  constexpr std::size_t kMaxResolvedDir = 1024;
  std::string script;
  if (word.ends_with(".py") && cwd.size() <= kMaxResolvedDir &&
      (entry == nullptr || entry->find("<script>") != std::string::npos)) {
    script = resolve_path(cwd, word);
    if (entry == nullptr) entry = saves_by_default_entry(word, script, policy);
  }
  if (entry == nullptr) return std::nullopt;
  matched = true;
  std::vector<std::string_view> parts;  // PLACE, then the program's flags for it
  for (std::string_view rest = std::string_view(*entry).substr(entry->find('=') + 1); !rest.empty();) {
    const auto space = rest.find(' ');
    if (space != 0) parts.push_back(rest.substr(0, space));
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  if (parts.empty()) return std::nullopt;
  for (std::size_t f = 1; f < parts.size(); ++f) {
    for (const auto& [name, value] : flag_values(facts.words)) {
      if (!same_flag(name, parts[f]) || value.empty()) continue;
      // A file name pattern (`ckpt-{epoch}.pth.tar`) names its directory.
      const std::string_view last = basename_view(value);
      const bool file = last.find_first_of("{.") != std::string_view::npos && last != "." && last != "..";
      std::string path = resolve_path(cwd, file ? value.substr(0, value.size() - last.size()) : value);
      if (path.empty()) return std::nullopt;
      return SavePath{"--" + std::string(name), std::move(path)};
    }
  }
  std::string_view place = parts.front();
  std::string path;
  constexpr std::string_view kBesideScript = "<script>";
  if (place.starts_with(kBesideScript)) {
    place.remove_prefix(kBesideScript.size());
    const auto slash = script.rfind('/');
    if (slash != std::string::npos) {
      // Built in place: GCC 12 warns (-Wrestrict, a false positive) on "." + std::string.
      std::string relative(1, '.');
      relative.append(place);
      path = resolve_path(script.substr(0, slash + 1), relative);
    }
  } else {
    path = resolve_path(cwd, place);
  }
  if (path.empty()) return std::nullopt;
  return SavePath{std::string(basename_view(word)) + "'s default place", std::move(path)};
}

}  // namespace

std::optional<SavePath> save_path(const CommandFacts& facts, const std::vector<EnvVar>& env, const Policy& policy,
                                  std::string_view working_dir) {
  const NameSet storage_flags(policy.checkpoint_storage_flags);
  std::string cwd(working_dir);  // the directory relative paths start from, where known
  // The script's own variables so far (`X=...`), each name once with its latest value; a
  // few dozen are kept (bounded work on a hostile script).
  constexpr std::size_t kMaxAssigned = 64;
  std::vector<EnvVar> assigned;
  const auto expand = [&](std::string_view written) {
    // One returned variable: two returned strings set off GCC 12's -Wrestrict false positive.
    std::string value = assigned.empty() ? std::string(written) : expand_env_reference(written, assigned);
    if (value == written) value = expand_env_reference(written, env);
    return value;
  };
  // A listed name decides; the first name read by its words is kept in case none does,
  // and the first save-place argument in case no name does.
  std::optional<SavePath> by_words, by_argument, by_default;
  bool tried_default = false;
  const auto keep = [&](bool listed, std::string_view name, std::string path) -> std::optional<std::string> {
    if (listed) return path;
    by_words = SavePath{std::string(name), std::move(path)};
    return std::nullopt;
  };
  const auto local = [&](std::string_view name, std::string_view written) -> std::optional<std::string> {
    // A one-byte value other than "." is no place (`--nproc-per-node=8`): said before the
    // name is read (no expansion makes a reference of one byte).
    if (written.empty() || (written.size() < 2 && written != ".") || icontains(flag_name(name), "bucket")) {
      return std::nullopt;
    }
    const bool listed = storage_flags.contains(name);
    if (!listed && (by_words || !local_save_name(name, policy))) return std::nullopt;
    const std::string value = expand(written);
    if (value.size() < 2 && value != ".") return std::nullopt;
    if (value.front() == '/') return keep(listed, name, resolve_path({}, value));
    // Relative: only a plain path (not another flag, a URL, an unexpanded reference or a
    // home dir). A bare name given to a model flag is more likely a model to load
    // (`--model_path bert-base-uncased`) than a directory: only `./` and `../` count there.
    const bool explicit_relative = value == "." || value.starts_with("./") || value.starts_with("../");
    if (cwd.empty() || value.front() == '-' || value.find("://") != std::string::npos ||
        value.find('$') != std::string::npos || value.front() == '~' ||
        (!explicit_relative && icontains(flag_name(name), "model"))) {
      return std::nullopt;
    }
    return keep(listed, name, resolve_path(cwd, value));
  };
  for (std::size_t i = 0; i < facts.words.size(); ++i) {
    const std::string_view w = facts.words[i];
    // The shell's directory for what follows (`cd DIR`), or the one mpirun starts its
    // program in (`-wdir DIR`).
    if ((w == "cd" || w == "-wdir" || w == "--wdir") && i + 1 < facts.words.size()) {
      const std::string dir = expand(facts.words[i + 1]);
      const bool known = !dir.empty() && dir.find('$') == std::string::npos && dir.front() != '~' &&
                         dir.front() != '-' && dir.front() != '&' && dir.front() != ';';
      cwd = known ? resolve_path(cwd, dir) : std::string();
      continue;
    }
    const auto eq = w.find('=');
    if (eq != std::string_view::npos && eq > 0 && shell_name(w.substr(0, eq))) {
      // `X=value` (or `X="value"`, which reaches here as two words): later `$X` reads it.
      const bool quoted = eq + 1 == w.size() && i + 1 < facts.words.size();
      std::string value = expand(quoted ? std::string_view(facts.words[i + 1]) : w.substr(eq + 1));
      const auto name = w.substr(0, eq);
      const auto known =
          std::find_if(assigned.begin(), assigned.end(), [&](const EnvVar& v) { return v.name == name; });
      if (known != assigned.end()) {
        known->value = std::move(value);
      } else if (assigned.size() < kMaxAssigned) {
        assigned.push_back(EnvVar{std::string(name), std::move(value)});
      }
    }
    if (eq != std::string_view::npos && eq > 0) {
      if (auto path = local(w.substr(0, eq), w.substr(eq + 1))) return SavePath{std::string(w.substr(0, eq)), *path};
    } else if (w.size() > 1 && w.front() == '-' && i + 1 < facts.words.size()) {
      if (auto path = local(w, facts.words[i + 1])) return SavePath{std::string(w), *path};
    } else if (!by_argument && i > 0 && save_place_argument(w, facts.words[i - 1], policy)) {
      by_argument = SavePath{std::string(kSavePlaceArgument), resolve_path({}, w)};
    } else if (!tried_default && !policy.saves_by_default.empty()) {
      // The first listed program decides, resolved or not: the rest are not tried again.
      by_default = default_place(facts, i, cwd, policy, tried_default);
    }
  }
  for (const auto& e : env) {
    if (auto path = local(e.name, e.value)) return SavePath{e.name, *path};
  }
  if (by_words) return by_words;
  return by_default ? by_default : by_argument;
}

bool names_program(std::string_view pattern, std::string_view word) {
  return wildcard_match_icase(pattern, word) ||
         (word.find('/') != std::string_view::npos && wildcard_match_icase(pattern, basename_view(word)));
}

const std::string* saves_by_default_entry(std::string_view word, std::string_view script, const Policy& policy) {
  if (word.empty() || word.front() == '-' || word.find('=') != std::string_view::npos) return nullptr;
  // A program with a literal first byte can only match a text starting with it: tested
  // before the entry is split (this runs for every word of every command line).
  const std::string_view base = basename_view(word);
  const char firsts[] = {ascii_lower(word.front()), base.empty() ? '\0' : ascii_lower(base.front()),
                         script.empty() ? '\0' : ascii_lower(script.front())};
  // The bytes of a program a word or its script can be (its name's bytes, as
  // PatternList keeps them: all but `*`, `_` and `-`).
  const std::uint64_t have = byte_mask(word) | byte_mask(script);
  const PatternList& entries = policy.saves_by_default;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& entry = entries[i];
    if ((entries.compiled(i).name_bytes & ~have) != 0) continue;
    if (!entry.empty() && entry.front() != '*' &&
        std::find(std::begin(firsts), std::end(firsts), ascii_lower(entry.front())) == std::end(firsts)) {
      continue;
    }
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string_view program = std::string_view(entry).substr(0, eq);
    // A program without '*' matches only a text of its own length: most entries end here
    // (a dozen `tensorflow*_mnist*.py` share the first byte of `train.py`).
    if (program.find('*') == std::string_view::npos && program.size() != word.size() && program.size() != base.size() &&
        program.size() != script.size()) {
      continue;
    }
    if (names_program(program, word) || (!script.empty() && wildcard_match_icase(program, script))) {
      return &entry;
    }
  }
  return nullptr;
}

namespace {

// bucket_name: `value` is shaped like a bucket's name (GCS and S3 rules: 3 to 63 lower-case
// letters, digits, dots, dashes or underscores, a letter among them), not a switch's value.
bool bucket_name(std::string_view value) {
  if (value.size() < 3 || value.size() > 63) return false;
  for (const std::string_view word : {"true", "false", "yes", "no", "none", "null"}) {
    if (value == word) return false;
  }
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  };
  return std::all_of(value.begin(), value.end(), allowed) &&
         std::any_of(value.begin(), value.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// upload_destination: the object-storage URL a command copies local files to with a
// storage CLI (`aws s3 cp|mv|sync SRC s3://...`, `gsutil [-m] cp|mv|rsync SRC gs://...`,
// `gcloud storage cp|mv|rsync SRC gs://...`), with the command that does it: what the run
// keeps lands there. A download (the source is the URL), a copy between buckets, or logs
// and metrics synced are not one. Only the first two operands are read (`gsutil cp a b
// gs://x` is not seen): the words of a script are not split by command.
std::optional<std::string> upload_destination(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                              const Policy& policy) {
  const auto& words = facts.words;
  const auto verb_at = [&](std::size_t i, std::initializer_list<std::string_view> verbs) {
    return i < words.size() && std::find(verbs.begin(), verbs.end(), words[i]) != verbs.end();
  };
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view program = basename_view(words[i]);
    // The verb's index: `aws s3 VERB`, `gcloud storage VERB`, `gsutil [-m ...] VERB`.
    std::size_t at = i + 1;
    const bool two_words = (program == "aws" && at < words.size() && words[at] == "s3") ||
                           (program == "gcloud" && at < words.size() && words[at] == "storage");
    if (two_words) {
      ++at;
    } else if (program == "gsutil") {
      while (at < words.size() && words[at].starts_with('-')) ++at;
    } else {
      continue;
    }
    if (!verb_at(at, {"cp", "mv", "sync", "rsync"})) continue;
    // An option takes the next word as its value (`--exclude "*.bin"`, `--endpoint-url
    // URL`) unless it is one of the switches below: a wrong guess misses an upload rather
    // than taking an option's value for the source.
    constexpr std::array<std::string_view, 14> kSwitches = {"--recursive",
                                                            "-r",
                                                            "-R",
                                                            "--quiet",
                                                            "-q",
                                                            "--dryrun",
                                                            "--no-progress",
                                                            "--delete",
                                                            "--only-show-errors",
                                                            "--no-sign-request",
                                                            "-m",
                                                            "-n",
                                                            "-c",
                                                            "--no-clobber"};
    std::array<std::string_view, 2> operands;
    std::size_t found = 0;
    for (std::size_t j = at + 1; j < words.size() && j <= at + 16 && found < operands.size(); ++j) {
      const std::string_view w = words[j];
      if (!w.starts_with('-')) {
        operands[found++] = w;
      } else if (w.find('=') == std::string_view::npos &&
                 std::find(kSwitches.begin(), kSwitches.end(), w) == kSwitches.end()) {
        ++j;  // its value
      }
    }
    if (found < operands.size()) continue;
    const std::string from = expand_env_reference(operands[0], env), to = expand_env_reference(operands[1], env);
    if (has_scheme(from, policy) || !has_scheme(to, policy)) continue;
    // Logs or summaries synced to a bucket say nothing about where checkpoints go (the
    // source's last named directory: `./tb-metrics/*` is metrics).
    const std::string_view source = basename_view(std::string_view(from).substr(0, from.find_last_not_of("/*") + 1));
    if (name_words(source, policy).reads) continue;
    std::string by(program);
    for (std::size_t j = i + 1; j <= at; ++j) (by += ' ') += words[j];
    const std::size_t scheme = to.find("://");  // policy schemes may be written without one
    const std::size_t path = scheme == std::string::npos ? 0 : scheme + 3;
    return to.substr(0, path) + expand_env_reference(std::string_view(to).substr(path), env) + " (uploaded by " + by +
           ")";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkpoint_destination(const CommandFacts& facts, const std::vector<EnvVar>& env,
                                                  const Policy& policy) {
  if (auto uploaded = upload_destination(facts, env, policy)) return uploaded;
  const NameSet storage_flags(policy.checkpoint_storage_flags);
  // Other names of a place the run writes to, by their words (savePlaceNames): a bucket
  // (MODEL_BUCKET=s3://..., --artifacts-bucket gs://...) or a save, output or checkpoint
  // name (TRAIN_OUTPUT_DIR, sft_checkpoint_dir): only with an object-storage URL as the
  // value, and not a place it reads (DATA_BUCKET, RESUME_CHECKPOINT_DIR, BASE_...) or logs.
  // A save word last counts here too (MODEL_CHECKPOINT=gs://...): the URL says where.
  // On the command line, a flag that is a save word alone (`--output`, `--export`) counts
  // too: its URL says where (an env var so named, OUT, is too loose a sign).
  const auto other_output = [&](std::string_view name, bool flag) {
    const NameWords words = name_words(name, policy, true);
    return !words.reads && (words.bucket_last || (words.saves && (words.place_last || words.listed_last)) ||
                            (flag && words.saves && words.words == 1));
  };
  // A bucket a name says the run saves to (`--checkpoint-bucket runs-lab`): a bucket's name
  // needs no scheme.
  const auto save_bucket = [&](std::string_view name, std::string_view value) {
    const NameWords words = name_words(name, policy);
    return words.bucket_last && words.saves && !words.reads && bucket_name(value);
  };

  const auto destination = [&](std::string_view name, std::string_view written,
                               bool flag) -> std::optional<std::string> {
    if (written.empty()) return std::nullopt;
    const bool listed = storage_flags.contains(name);
    const std::string value = expand_env_reference(written, env);
    if (!listed) {
      // Only a URL or a bucket's name makes a name that is not listed a destination: the
      // value is looked at before the name's words, which cost more to read.
      const bool url = has_scheme(value, policy);
      if ((!url && !bucket_name(value)) || !other_output(name, flag)) return std::nullopt;
      if (url) return value;
      return save_bucket(name, value) ? std::optional<std::string>("bucket " + value) : std::nullopt;
    }
    if (has_scheme(value, policy)) return value;
    if (icontains(flag_name(name), "bucket")) return "bucket " + value;
    return set_outside(value, facts, env);
  };
  bool local_flag = false;  // the command line names a local place to save
  for (const auto& [name, value] : flag_values(facts.words)) {
    if (auto d = destination(name, value, true)) return d;
    // Only a listed name: one read by its words may be a place the run reads.
    local_flag = local_flag || (storage_flags.contains(name) && !value.empty() && value.front() != '$' &&
                                !has_scheme(std::string(value), policy));
  }
  // An env var does not outrank it (MODEL_DIR=gs://... beside `--output_dir lm-out`: the
  // program saves where its command line says).
  if (local_flag) return std::nullopt;
  for (const auto& e : env) {
    if (!e.from.empty() && !e.name.empty() && storage_flags.contains(e.name)) {
      return "$(" + e.name + ") (set from " + e.from + ")";
    }
    if (auto d = destination(e.name, e.value, false)) return d;
  }
  return std::nullopt;
}

}  // namespace kubegap

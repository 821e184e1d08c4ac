#include "policies/input_volumes.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "policies/command_facts.h"
#include "policies/flag_words.h"
#include "policies/mounted_files.h"

namespace kubegap {
namespace {

// kMaxPaths: the paths kept per pod, of each use. Each mount is compared with every one of
// them, so a hostile pod with thousands of paths and mounts costs a bounded amount; past
// the bound, a write counts as one that may land anywhere.
constexpr std::size_t kMaxPaths = 256;

bool listed(const std::vector<std::string>& list, std::string_view word) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& w) {
    return w.size() == word.size() && std::equal(w.begin(), w.end(), word.begin(), iequal);
  });
}

// for_each_word: `each` gets every word of a name: a run of letters, split at anything
// else and where a lower-case letter meets an upper-case one ("mnist-nfs-data1": mnist,
// nfs, data; "hfCache": hf, cache).
template <typename Each>
void for_each_word(std::string_view name, Each each) {
  std::size_t start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    const bool letter = i < name.size() && std::isalpha(static_cast<unsigned char>(name[i]));
    const bool hump = letter && i > start && std::isupper(static_cast<unsigned char>(name[i])) &&
                      std::islower(static_cast<unsigned char>(name[i - 1]));
    if (!letter || hump) {
      if (i > start) each(name.substr(start, i - start));
      start = letter ? i : i + 1;
    }
  }
}

// named_for_input: a word of the volume's name (unless a subPath is mounted), of its
// mount directory's last component or of its subPath says input, and none says it may
// hold what a run writes.
bool named_for_input(const VolumeMount& mount, const InputVolumes& vocabulary) {
  std::string_view dir = mount.mount_path;
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  bool input = false;
  bool keeps = false;
  const auto read = [&](std::string_view word) {
    input = input || listed(vocabulary.names, word);
    keeps = keeps || listed(vocabulary.keeps, word);
  };
  // A subPath mount shows the pod one directory of the volume: the volume's own name
  // (a "work" claim) says nothing of what that directory ("data") holds.
  if (mount.sub_path.empty()) for_each_word(mount.name, read);
  for_each_word(basename_view(dir), read);
  for_each_word(mount.sub_path, read);
  return input && !keeps;
}

// reading_name: a flag or env name under which the job reads the path it is given
// (`--dataset_path`, `HF_HOME`, `--model_name_or_path`): a word of inputVolumes.readers, and
// none of inputVolumes.writers nor of savePlaceNames.saves (`--log_file`, `--run_dir`).
bool reading_name(std::string_view name, const Policy& policy) {
  bool reads = false;
  bool writes = false;
  for_each_word(flag_name(name), [&](std::string_view word) {
    reads = reads || listed(policy.input_volumes.readers, word);
    writes = writes || listed(policy.save_place_names.saves, word) || listed(policy.input_volumes.writers, word);
  });
  return reads && !writes;
}

// redirected: the path of a word that redirects output to a file (`>/data/log`,
// `2>>/data/err`, `&>/data/x`), or the word itself.
std::string_view redirected(std::string_view w) {
  std::size_t i = 0;
  while (i < w.size() && (std::isdigit(static_cast<unsigned char>(w[i])) || w[i] == '&')) ++i;
  if (i < w.size() && w[i] == '>') {
    ++i;
    if (i < w.size() && w[i] == '>') ++i;
    return w.substr(i);
  }
  return w;
}

}  // namespace

bool under(std::string_view dir, std::string_view path) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || dir == "/" || path[dir.size()] == '/';
}

void InputUses::use(std::string_view path, std::string_view name) {
  if (path.empty() || path.front() != '/') return;
  const bool read = !name.empty() && reading_name(name, policy_);
  std::vector<std::string>& kept = read ? reads_ : writes_;
  if (kept.size() < kMaxPaths) {
    kept.emplace_back(path);
  } else if (!read) {
    unknown_ = true;
  }
}

void InputUses::work_in(std::string_view dir) {
  if (dir.empty()) return;
  if (dir.front() != '/') {
    unknown_ = unknown_ || dir.front() == '$';  // a directory the pod does not show
    return;
  }
  if (dirs_.size() < kMaxPaths) {
    dirs_.emplace_back(dir);
  } else {
    unknown_ = true;
  }
}

InputUses::InputUses(const PodSpecView& pod, const std::string& ns, const ClusterSnapshot* known, const Policy& policy)
    : policy_(policy) {
  ConfigReadBudget budget;
  for (const auto& c : pod.containers) {
    work_in(c.working_dir);  // relative paths land there
    CommandFacts facts = command_facts(c.command, c.args);
    MountedFiles files = mounted_files(facts, c, pod, ns, known, budget);
    if (!files.script.empty()) append_facts(facts, command_facts({"sh", "-c", std::string(files.script)}, {}));
    if (facts.words.size() >= kMaxCommandWords) unknown_ = true;  // the rest was not read
    std::vector<EnvVar> merged;
    for (const auto& e : effective_env(c, ns, known, merged)) {
      // Set from a ConfigMap the input does not hold: any path may be in it, unless its
      // name reads. (A Secret's or the pod's own fields hold no path of a volume.)
      const bool config_map = e.from.starts_with("ConfigMap");
      if (config_map && (e.name.empty() || !reading_name(e.name, policy))) unknown_ = true;
      use(e.value, e.name);
    }
    for (const auto& s : files.settings) use(s.value, s.name);
    for (std::size_t i = 0; i < facts.words.size(); ++i) {
      const std::string_view w = facts.words[i];
      const std::string_view before = i > 0 ? std::string_view(facts.words[i - 1]) : std::string_view();
      if (before == "cd" || before == "pushd") {
        work_in(w);
        continue;
      }
      const auto eq = w.find('=');
      if (eq != std::string_view::npos && eq > 0 && w.front() != '/') {  // --name=/path, NAME=/path
        use(w.substr(eq + 1), w.substr(0, eq));
        continue;
      }
      // A flag's value is read when its name reads; a plain argument or `>` is a write.
      const bool flag = before.size() > 1 && before.front() == '-' && before.find('=') == std::string_view::npos;
      use(redirected(w), flag && !w.empty() && w.front() != '>' ? before : std::string_view());
    }
  }
}

InputUses::Holds InputUses::holds(const VolumeMount& mount) const {
  if (unknown_ || !named_for_input(mount, policy_.input_volumes)) return Holds::kOther;
  const std::string_view at = mount.mount_path;
  const auto into = [&](const std::string& path) { return under(at, path); };
  if (std::any_of(writes_.begin(), writes_.end(), into)) return Holds::kOther;
  // Working in it, or above it (relative paths may reach it).
  if (std::any_of(dirs_.begin(), dirs_.end(), [&](const std::string& d) { return under(at, d) || under(d, at); })) {
    return Holds::kOther;
  }
  return std::any_of(reads_.begin(), reads_.end(), into) ? Holds::kRead : Holds::kInput;
}

}  // namespace kubegap

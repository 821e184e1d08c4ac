#include "policies/input_volumes.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "policies/command_facts.h"
#include "policies/flag_words.h"

namespace kubegap {
namespace {

bool listed(const std::vector<std::string>& list, std::string_view word) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& w) {
    return w.size() == word.size() && std::equal(w.begin(), w.end(), word.begin(), iequal);
  });
}

// for_each_word: `each` gets every word of a name: a run of letters, split at anything
// else and at camelCase humps ("mnist-nfs-data1": mnist, nfs, data; "hfCache": hf, cache).
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

// named_for_input: a word of the volume's name or of its mount directory's last component
// says input, and none says it may hold what the run writes.
bool named_for_input(const VolumeMount& mount, const InputVolumes& vocabulary) {
  std::string_view dir = mount.mount_path;
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  bool input = false;
  bool keeps = false;
  const auto read = [&](std::string_view word) {
    input = input || listed(vocabulary.names, word);
    keeps = keeps || listed(vocabulary.keeps, word);
  };
  for_each_word(mount.name, read);
  for_each_word(basename_view(dir), read);
  return input && !keeps;
}

// reading_name: a flag or env name under which the job reads the path it is given
// (`--dataset_path`, `HF_HOME`, `--model_name_or_path`), not one it saves to.
bool reading_name(std::string_view name, const Policy& policy) {
  bool reads = false;
  bool saves = false;
  for_each_word(flag_name(name), [&](std::string_view word) {
    reads = reads || listed(policy.input_volumes.readers, word);
    saves = saves || listed(policy.save_place_names.saves, word);
  });
  return reads && !saves;
}

// kMaxUses: the paths kept per pod. Each mount is compared with every one of them, so a
// hostile pod with thousands of paths and mounts costs a bounded amount; past the bound,
// a path counts as one the job may write to (the volume is not set aside).
constexpr std::size_t kMaxUses = 256;

}  // namespace

bool under(std::string_view dir, std::string_view path) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || dir == "/" || path[dir.size()] == '/';
}

InputUses::InputUses(const PodSpecView& pod, const Policy& policy) : policy_(policy) {
  bool full = false;
  const auto use = [&](std::string_view path, bool read) {
    if (path.empty() || path.front() != '/') return;
    if (uses_.size() < kMaxUses) {
      uses_.push_back({std::string(path), read});
    } else if (!read) {
      full = true;
    }
  };
  for (const auto& c : pod.containers) {
    use(c.working_dir, false);  // relative paths land there
    for (const auto& e : c.env) use(e.value, reading_name(e.name, policy));
    const CommandFacts facts = command_facts(c.command, c.args);
    for (std::size_t i = 0; i < facts.words.size(); ++i) {
      const std::string_view w = facts.words[i];
      const auto eq = w.find('=');
      if (eq != std::string_view::npos && eq > 0) {  // --name=/path, NAME=/path
        use(w.substr(eq + 1), reading_name(w.substr(0, eq), policy));
        continue;
      }
      const std::string_view before = i > 0 ? std::string_view(facts.words[i - 1]) : std::string_view();
      // A plain argument, `cd`, `>` ... is no read; a flag's value is, when its name reads.
      const bool flag = before.size() > 1 && before.front() == '-' && before.find('=') == std::string_view::npos;
      use(w, flag && !w.empty() && reading_name(before, policy));
    }
  }
  if (full) uses_.push_back({"/", false});  // past the bound: any volume may be written
}

bool InputUses::holds_only_input(const VolumeMount& mount) const {
  if (!named_for_input(mount, policy_.input_volumes)) return false;
  return std::none_of(uses_.begin(), uses_.end(),
                      [&](const Use& u) { return !u.read && (under(mount.mount_path, u.path) || u.path == "/"); });
}

}  // namespace kubegap

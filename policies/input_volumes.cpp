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

bool points_into(std::string_view dir, std::string_view value) {
  return !value.empty() && value.front() == '/' && under(dir, value);
}

// only_read_by: every use of `dir` in the container is a path it reads.
bool only_read_by(const Container& c, std::string_view dir, const Policy& policy) {
  if (!c.working_dir.empty() && under(dir, c.working_dir)) return false;  // relative paths land there
  for (const auto& e : c.env) {
    if (points_into(dir, e.value) && !reading_name(e.name, policy)) return false;
  }
  const CommandFacts facts = command_facts(c.command, c.args);
  for (std::size_t i = 0; i < facts.words.size(); ++i) {
    const std::string_view w = facts.words[i];
    const auto eq = w.find('=');
    if (eq != std::string_view::npos && eq > 0) {  // --name=/path, NAME=/path
      if (points_into(dir, w.substr(eq + 1)) && !reading_name(w.substr(0, eq), policy)) return false;
      continue;
    }
    if (!points_into(dir, w)) continue;
    const std::string_view before = i > 0 ? std::string_view(facts.words[i - 1]) : std::string_view();
    const bool flag_value = before.size() > 1 && before.front() == '-';
    if (!flag_value || !reading_name(before, policy)) return false;  // a plain argument, cd, > ...
  }
  return true;
}

}  // namespace

bool under(std::string_view dir, std::string_view path) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || dir == "/" || path[dir.size()] == '/';
}

bool holds_only_input(const VolumeMount& mount, const PodSpecView& pod, const Policy& policy) {
  if (!named_for_input(mount, policy.input_volumes)) return false;
  return std::all_of(pod.containers.begin(), pod.containers.end(),
                     [&](const Container& c) { return only_read_by(c, mount.mount_path, policy); });
}

}  // namespace kubegap

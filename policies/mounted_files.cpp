#include "policies/mounted_files.h"

#include <algorithm>

#include "policies/config_settings.h"

namespace kubegap {
namespace {

constexpr std::size_t kMaxContainerBytes = 64 * 1024;
constexpr std::size_t kMaxSettings = 256;

struct ConfigMapMount {
  std::string_view dir;  // the mount path without a trailing '/'
  const VolumeMount* mount;
  const Volume* volume;
};

// config_map_mounts: the container's ConfigMap volume mounts, the first 16 of them.
std::vector<ConfigMapMount> config_map_mounts(const Container& c, const PodSpecView& pod) {
  constexpr std::size_t kMaxMounts = 16;
  std::vector<ConfigMapMount> mounts;
  for (const auto& m : c.volume_mounts) {
    if (mounts.size() == kMaxMounts) break;
    const auto volume =
        std::find_if(pod.volumes.begin(), pod.volumes.end(), [&](const Volume& v) { return v.name == m.name; });
    if (volume == pod.volumes.end() || volume->config_map.empty()) continue;
    std::string_view dir = m.mount_path;
    while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
    mounts.push_back({dir, &m, &*volume});
  }
  return mounts;
}

bool is_script(std::string_view key, std::string_view text) {
  return key.ends_with(".sh") || key.ends_with(".bash") || key.ends_with(".py") || text.starts_with("#!");
}

// take: up to `limit` bytes of `text`, charged to the object's budget; cut short, it ends
// at the last whole line (`max_steps: 100000` must not become `max_steps: 1`).
std::string_view take(std::string_view text, std::size_t limit, ConfigReadBudget& budget) {
  std::string_view read = text.substr(0, std::min(limit, budget.bytes));
  if (read.size() < text.size()) read = read.substr(0, read.rfind('\n') + 1);  // npos + 1 == 0
  budget.bytes -= read.size();
  return read;
}

// Script: the text of a script the container runs from a mounted file, and its language.
struct Script {
  std::string_view text;
  bool shell = false;  // a shell script; else a Python one
};

// script_of: the shell or Python script the container runs from a mounted file (`bash
// /etc/config/train.sh`, `python /script/train.py`, or the file itself as the command);
// the first few absolute words are looked at.
Script script_of(const CommandFacts& facts, const std::vector<ConfigMapMount>& mounts, const std::string& ns,
                 const ClusterSnapshot& known, ConfigReadBudget& budget) {
  constexpr std::size_t kMaxWords = 64;
  std::size_t looked = 0;
  for (const auto& word : facts.words) {
    if (!word.starts_with('/')) continue;
    if (++looked > kMaxWords) break;
    for (const auto& [dir, m, volume] : mounts) {
      // The file's path inside the volume: the mount's subPath, or the word under it.
      std::string_view file;
      if (!m->sub_path.empty()) {
        if (word != dir) continue;
        file = m->sub_path;
      } else {
        if (!word.starts_with(dir) || word.size() <= dir.size() + 1 || word[dir.size()] != '/') continue;
        file = std::string_view(word).substr(dir.size() + 1);
      }
      std::string_view key = file;
      if (!volume->items.empty()) {  // only the listed keys are there, at their paths
        const auto item =
            std::find_if(volume->items.begin(), volume->items.end(), [&](const auto& kp) { return kp.second == file; });
        if (item == volume->items.end()) continue;
        key = item->first;
      }
      const StringMap* data = known.config_map(ns, volume->config_map);
      if (data == nullptr) continue;
      const auto text = data->find(key);
      if (text == data->end()) continue;
      const std::string_view script(text->second);
      const std::string_view first_line = script.substr(0, script.find('\n'));
      if (word.ends_with(".sh") || (script.starts_with("#!") && first_line.find("sh") != std::string_view::npos)) {
        return {take(script, kMaxContainerBytes, budget), true};
      }
      if (word.ends_with(".py") || (script.starts_with("#!") && first_line.find("python") != std::string_view::npos)) {
        return {take(script, kMaxContainerBytes, budget), false};
      }
    }
  }
  return {};
}

// named: a command word is the file's path (`--config /config/train.yaml`,
// `--config=/config/train.yaml`).
bool named(const CommandFacts& facts, std::string_view path) {
  return std::any_of(facts.words.begin(), facts.words.end(), [&](std::string_view w) {
    return w == path || (w.size() > path.size() && w.ends_with(path) && w[w.size() - path.size() - 1] == '=');
  });
}

// settings_of: the settings of the config files (not scripts) in the mounts; the files the
// command names are read first, so their settings speak first, then `script_settings` (the
// constants of the Python script it runs: a file the command names overrides them, as
// `--config` does), then the other files'.
std::vector<EnvVar> settings_of(const CommandFacts& facts, const std::vector<ConfigMapMount>& mounts,
                                const std::string& ns, const ClusterSnapshot& known, std::string_view script,
                                std::vector<EnvVar> script_settings, ConfigReadBudget& budget) {
  std::vector<EnvVar> settings;
  std::size_t room = kMaxContainerBytes;
  for (const bool first_pass : {true, false}) {
    if (!first_pass) {
      for (auto& setting : script_settings) {
        if (settings.size() == kMaxSettings) break;
        settings.push_back(std::move(setting));
      }
    }
    for (const ConfigMapMount& mount : mounts) {
      const StringMap* data = known.config_map(ns, mount.volume->config_map);
      if (data == nullptr) continue;
      const std::string& sub_path = mount.mount->sub_path;
      // One file: its key in the ConfigMap and its path inside the volume.
      const auto read_file = [&](const std::string& key, const std::string& path, const std::string& text) {
        // Not a script (by its key, its path in the volume or its first line), and not
        // the one the command runs, read already.
        if ((!sub_path.empty() && sub_path != path) || is_script(key, text) || is_script(path, text) ||
            (!script.empty() && script.data() == text.data())) {
          return;
        }
        const std::string full = sub_path.empty() ? std::string(mount.dir) + "/" + path : std::string(mount.dir);
        if (named(facts, full) != first_pass) return;
        const std::string_view read = take(text, room, budget);
        room -= read.size();
        append_config_settings(read, kMaxSettings, settings);
      };
      const auto full = [&] { return room == 0 || budget.bytes == 0 || settings.size() == kMaxSettings; };
      if (mount.volume->items.empty()) {
        for (const auto& [key, text] : *data) {
          if (full()) return settings;
          read_file(key, key, text);
        }
      }
      for (const auto& [key, path] : mount.volume->items) {  // only the listed keys are there
        if (full()) return settings;
        if (const auto it = data->find(key); it != data->end()) read_file(key, path, it->second);
      }
    }
  }
  return settings;
}

}  // namespace

MountedFiles mounted_files(const CommandFacts& facts, const Container& c, const PodSpecView& pod, const std::string& ns,
                           const ClusterSnapshot* known, ConfigReadBudget& budget) {
  MountedFiles out;
  if (known == nullptr || budget.bytes == 0) return out;
  const std::vector<ConfigMapMount> mounts = config_map_mounts(c, pod);
  if (mounts.empty()) return out;
  const Script script = script_of(facts, mounts, ns, *known, budget);
  std::vector<EnvVar> constants;
  if (script.shell) {
    out.script = script.text;
  } else {
    // A quarter of the room at most, so a busy script leaves config files theirs.
    append_script_settings(script.text, kMaxSettings / 4, constants);
  }
  out.settings = settings_of(facts, mounts, ns, *known, script.text, std::move(constants), budget);
  return out;
}

const std::vector<EnvVar>& effective_env(const Container& c, const std::string& ns, const ClusterSnapshot* known,
                                         std::vector<EnvVar>& merged) {
  if (c.env_from_config_maps.empty()) return c.env;
  merged = c.env;
  for (const auto& name : c.env_from_config_maps) {
    const StringMap* data = known == nullptr ? nullptr : known->config_map(ns, name);
    if (data == nullptr) {
      merged.push_back({"", "", "ConfigMap " + name});  // any var may come from it
      continue;
    }
    for (const auto& [key, value] : *data) merged.push_back({key, value});
  }
  return merged;
}

}  // namespace kubegap

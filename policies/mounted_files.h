#pragma once
// What a container reads from the ConfigMap volumes it mounts, when the input (`check`) or
// the cluster view holds those ConfigMaps: the shell script it runs from one (many
// manifests keep the training script there, and it says where the job saves) and the
// settings of config files (output_dir, max_steps, save_strategy in a YAML, TOML, INI or
// JSON file: policies/config_settings.h). Bounded: a hostile object must not make a review
// slow, so each container reads at most 64 KiB and 256 settings, and one object at most
// ConfigReadBudget's bytes in all (real scripts and configs are a few KiB).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/command_facts.h"
#include "policies/pod_view.h"

namespace kubegap {

// ConfigReadBudget: the bytes of mounted files one object's evaluation may still read.
struct ConfigReadBudget {
  std::size_t bytes = 256 * 1024;
};

// MountedFiles: what one container reads from its ConfigMap volumes.
struct MountedFiles {
  std::string_view script;       // the shell script it runs from one, or empty
  std::vector<EnvVar> settings;  // config files' settings, files the command names first
};

// effective_env: a container's env plus the data of the ConfigMaps it takes env from
// (when the snapshot knows them); explicit env wins, as in the kubelet. A ConfigMap the
// snapshot does not hold stands as one unnamed var set from it. Without envFrom
// ConfigMaps it is the container's own env, not a copy (this runs for every container of
// every review); otherwise the merge is built in `merged`.
const std::vector<EnvVar>& effective_env(const Container& c, const std::string& ns, const ClusterSnapshot* known,
                                         std::vector<EnvVar>& merged);

MountedFiles mounted_files(const CommandFacts& facts, const Container& c, const PodSpecView& pod, const std::string& ns,
                           const ClusterSnapshot* known, ConfigReadBudget& budget);

}  // namespace kubegap

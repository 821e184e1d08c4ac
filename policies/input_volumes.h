#pragma once
// What a durable volume is for, read from its names and from how the pod uses it: a claim
// named for a dataset or a cache, mounted at /data, that the command only reads
// (`--dataset_path /data/train.json`, `HF_HOME=/cache/hf`) is not where checkpoints go.
// The job saves somewhere else in the pod, and a replacement starts without it. Pure
// string work.

#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

// under: `path` is `dir` or below it (at a '/' boundary); `dir` "/" holds every absolute
// path.
bool under(std::string_view dir, std::string_view path);

// InputUses: how a pod's main containers use paths, read once per pod: their command
// lines (with a script they run from a ConfigMap the input holds), env (with envFrom
// ConfigMaps the input holds) and config files' settings. Each path is a read (the value
// of a name that reads), a write (any other use) or a directory the container works in.
class InputUses {
 public:
  InputUses(const PodSpecView& pod, const std::string& ns, const ClusterSnapshot* known, const Policy& policy);

  // What the volume `mount` mounts holds, for checkpoint-volume (policy inputVolumes):
  //   kOther    it may hold what the job writes;
  //   kInput    a word of its name, its mount directory's last component or its subPath is
  //             one of `names` and none is one of `keeps`, and no container writes into it
  //             or works in or above it: nothing the pod shows writes there;
  //   kRead     the same, and the pod visibly reads it (`--dataset_path /data/x`).
  // A path given any other way (a plain argument, `cd /data`, `> /data/log`, `--dir
  // /data/runs`), env from a ConfigMap the input does not hold, a command line cut at
  // kMaxCommandWords, or more paths than are kept: the volume may be written (kOther).
  enum class Holds { kOther, kInput, kRead };
  Holds holds(const VolumeMount& mount) const;

 private:
  void use(std::string_view path, std::string_view name);  // name: the flag or var that gives it
  void work_in(std::string_view dir);

  const Policy& policy_;
  std::vector<std::string> reads_, writes_, dirs_;
  bool unknown_ = false;  // something may write anywhere
};

}  // namespace kubegap

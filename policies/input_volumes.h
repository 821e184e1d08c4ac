#pragma once
// What a durable volume is for, read from its names and from how the command uses it: a
// claim named for a dataset or a cache, mounted at /data, that the command only reads
// (`--dataset_path /data/train.json`, `HF_HOME=/cache/hf`) is not where checkpoints go.
// The job saves somewhere else in the pod, and a replacement starts without it. Pure
// string work.

#include <string>
#include <string_view>
#include <vector>

#include "policies/pod_view.h"
#include "policies/policy.h"

namespace kubegap {

// under: `path` is `dir` or below it (at a '/' boundary); `dir` "/" holds every absolute
// path.
bool under(std::string_view dir, std::string_view path);

// InputUses: how a pod's main containers use paths, read once per pod: every path a
// command line or env gives, whether a name that reads gave it, and the working
// directories. Then holds_only_input costs a pass over those paths per mount.
class InputUses {
 public:
  InputUses(const PodSpecView& pod, const Policy& policy);

  // holds_only_input: the volume mounted by `mount` is for what the job reads (policy
  // inputVolumes): a word of its name or of its mount directory's last component is one of
  // `names` and none is one of `keeps`; no container works in it (workingDir); and every
  // word of a command line or env value that points into it is the value of a flag or env
  // var whose name reads (a word of `readers`, none of savePlaceNames.saves). A path given
  // any other way (a plain argument, `cd /data`, `--dir /data/runs`) may be where the job
  // writes, so the volume is not judged input.
  bool holds_only_input(const VolumeMount& mount) const;

 private:
  struct Use {
    std::string path;
    bool read;  // given by a name that reads
  };
  const Policy& policy_;
  std::vector<Use> uses_;  // working directories are uses that are not reads
};

}  // namespace kubegap

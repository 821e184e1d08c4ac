// CheckpointVolumeCheck: a training pod must mount a volume that outlives it, or a
// restart loses everything since the last save (cases acme-llm-pretraining-2023,
// llama3-pretraining-2024, opt-175b-logbook-2021, bloom-176b-training-2022).
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <string_view>

#include "policies/checks.h"

namespace kubegap {
namespace {

// Volume sources whose data lives outside the node and outlives the pod. The cloud
// block devices are in-tree network disks too (deprecated, still accepted).
constexpr std::array<std::string_view, 14> kDurableSources = {
    "persistentVolumeClaim", "nfs",         "cephfs",        "rbd",
    "iscsi",                 "azureFile",   "glusterfs",     "fc",
    "gcePersistentDisk",     "awsElasticBlockStore", "azureDisk", "cinder",
    "portworxVolume",        "vsphereVolume"};

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool is_durable(const Volume& volume, const Policy& policy) {
  if (volume.source == "csi") return contains(policy.durable_csi_drivers, volume.csi_driver);
  return std::find(kDurableSources.begin(), kDurableSources.end(), volume.source) !=
         kDurableSources.end();
}

// VolumeIndex: volumes by name, built once per pod so that a pod with many mounts and
// volumes costs O(n log n), not O(n^2) (hostile reviews included).
class VolumeIndex {
 public:
  explicit VolumeIndex(const PodSpecView& pod) {
    for (const auto& v : pod.volumes) by_name_.emplace(v.name, &v);  // first wins, like the API
  }
  const Volume* find(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string_view, const Volume*> by_name_;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool looks_like_checkpoints(const std::string& path, const Policy& policy) {
  const std::string lowered = lower(path);
  return std::any_of(policy.checkpoint_path_hints.begin(), policy.checkpoint_path_hints.end(),
                     [&](const std::string& hint) {
                       return !hint.empty() && lowered.find(lower(hint)) != std::string::npos;
                     });
}

std::string describe_source(const Volume* volume) {
  if (volume == nullptr) return "an undeclared volume";
  if (volume->source.empty()) return "volume \"" + volume->name + "\"";
  if (volume->source == "csi") {
    return "CSI volume \"" + volume->name + "\" (driver " + volume->csi_driver + ")";
  }
  return volume->source + " \"" + volume->name + "\"";
}

std::string_view why_lost(const Volume* volume) {
  if (volume == nullptr) return "not durable";
  if (volume->source == "emptyDir") return "deleted when the pod leaves its node";
  if (volume->source == "hostPath") return "left behind on one node";
  if (volume->source == "ephemeral") return "deleted with the pod";
  return "not durable";
}

}  // namespace

std::optional<Gap> check_checkpoint_volume(const PodSpecView& pod, const CheckContext& ctx) {
  const VolumeIndex volumes(pod);
  // Only main containers count: init containers finish before training starts.
  for (const auto& container : pod.containers) {
    for (const auto& mount : container.volume_mounts) {
      const Volume* volume = volumes.find(mount.name);
      if (volume != nullptr && is_durable(*volume, ctx.policy)) return std::nullopt;
    }
  }
  for (const auto& container : pod.containers) {
    for (const auto& mount : container.volume_mounts) {
      if (!looks_like_checkpoints(mount.mount_path, ctx.policy)) continue;
      const Volume* volume = volumes.find(mount.name);
      const std::string where = describe_source(volume);
      // The warning leaves out the container so the same gap in several parts is one
      // warning; the annotation names it.
      return Gap{Outcome::kFinding,
                 "checkpoints at " + mount.mount_path + " are on " + where + ", " +
                     std::string(why_lost(volume)) + ": a restart loses all progress since the last save",
                 "checkpoint path " + mount.mount_path + " of container " + container.name +
                     " is on " + where + "; no durable volume mounted"};
    }
  }
  return Gap{Outcome::kFinding,
             "no durable volume (PVC, network or durable CSI) for checkpoints: a restart loses "
             "all progress since the last save",
             "no durable volume mounted by any container"};
}

}  // namespace kubegap

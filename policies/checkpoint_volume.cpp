// CheckpointVolumeCheck: the checkpoints a training pod writes must outlive the pod, or
// its replacement starts without them (cases bloom-176b-training-2022,
// opt-175b-logbook-2021, llama3-pretraining-2024, acme-llm-pretraining-2023: restarts
// are frequent and each one resumes from the last checkpoint).
//
// Judged on the mounts that can hold checkpoints: writable mounts of the containers that
// train (those requesting an accelerator; all main containers when none does, as in CPU
// training). A sidecar's volume or a read-only dataset claim says nothing about where
// the trainer saves. A mount whose path looks like checkpoints decides by itself.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "policies/checks.h"
#include "policies/classifier.h"
#include "policies/evidence.h"
#include "policies/input_volumes.h"
#include "policies/save_places.h"

namespace kubegap {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool is_durable(const Volume& volume, const Policy& policy) {
  if (volume.source == "csi" || volume.source == "flexVolume")
    return contains(policy.durable_csi_drivers, volume.driver);
  return std::find(kDurableVolumeSources.begin(), kDurableVolumeSources.end(), volume.source) !=
         kDurableVolumeSources.end();
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

std::string describe_source(const Volume* volume) {
  if (volume == nullptr) return "an undeclared volume";
  if (volume->source.empty()) return "volume \"" + volume->name + "\"";
  if (volume->source == "csi") {
    return "CSI volume \"" + volume->name + "\" (driver " + volume->driver + ")";
  }
  return volume->source + " \"" + volume->name + "\"";
}

// what_happens: what becomes of checkpoints on a volume that is not durable, said
// exactly: an emptyDir (or generic ephemeral volume) survives container restarts but is
// deleted with the pod; a hostPath stays behind on its node.
std::string_view what_happens(const Volume* volume) {
  if (volume != nullptr && (volume->source == "emptyDir" || volume->source == "ephemeral")) {
    return "a replacement pod starts with none of them";  // deleted with the pod
  }
  if (volume != nullptr && volume->source == "hostPath") {
    return "a pod rescheduled to another node starts with none of them";
  }
  return "not known to be durable, a replacement pod may start with none of them";
}

// TrainerMount: one writable mount of a training container, with its volume (nullptr
// when the pod does not declare it).
struct TrainerMount {
  const Container* container;
  const VolumeMount* mount;
  const Volume* volume;
};

// trainer_mounts: the mounts of the containers that train (those requesting an
// accelerator; all main containers when none does), writable ones or read-only ones.
std::vector<TrainerMount> trainer_mounts(const PodSpecView& pod, const VolumeIndex& volumes, const Policy& policy,
                                         bool writable = true) {
  const bool any_accelerator = std::any_of(pod.containers.begin(), pod.containers.end(), [&](const Container& c) {
    return container_requests_accelerator(c, policy);
  });
  std::vector<TrainerMount> out;
  for (const auto& c : pod.containers) {
    if (any_accelerator && !container_requests_accelerator(c, policy)) continue;
    for (const auto& mount : c.volume_mounts) {
      const Volume* volume = volumes.find(mount.name);
      const bool read_only = mount.read_only || (volume != nullptr && volume->read_only);
      if (read_only == writable) continue;
      out.push_back({&c, &mount, volume});
    }
  }
  return out;
}

// staged_by_init: an init container also mounts this volume. In a serving pod that is a
// model staged before the server starts (copied from a bucket into emptyDir, say): the
// server reads checkpoints there, it does not produce them.
bool staged_by_init(const PodSpecView& pod, const std::string& volume_name) {
  return std::any_of(pod.init_containers.begin(), pod.init_containers.end(), [&](const Container& c) {
    return std::any_of(c.volume_mounts.begin(), c.volume_mounts.end(),
                       [&](const VolumeMount& m) { return m.name == volume_name; });
  });
}

// starts_server: the container starts an inference server (servingPrograms): a
// checkpoint-looking mount of it holds the model it loads, not checkpoints it writes.
bool starts_server(const Container& c, const Policy& policy) {
  return serving_evidence(command_facts(c.command, c.args), entrypoint_image_of(c), policy).has_value();
}

Gap undeclared(const TrainerMount& m) {
  return not_evaluated("volume \"" + m.mount->name + "\" mounted at " + m.mount->mount_path + " by container " +
                       m.container->name + " is not declared");
}

// holder_of: the trainer mount among `mounts` deepest above `path`, or nullptr.
const TrainerMount* holder_of(const std::vector<TrainerMount>& mounts, std::string_view path) {
  const TrainerMount* holder = nullptr;
  for (const auto& m : mounts) {
    if (under(m.mount->mount_path, path) &&
        (holder == nullptr || m.mount->mount_path.size() > holder->mount->mount_path.size())) {
      holder = &m;
    }
  }
  return holder;
}

// judge_save_path: the mount that holds the save path decides (the deeper of the writable
// `holder` and the read-only `read_only` one); none means the container's own filesystem.
// nullopt: it is durable.
std::optional<Gap> judge_save_path(const TrainerMount* holder, const TrainerMount* read_only, const CheckContext& ctx) {
  const std::string path(ctx.save_path);
  const std::string said = "checkpoints at " + path + " (" + std::string(ctx.save_flag) + ")";
  if (read_only != nullptr &&
      (holder == nullptr || read_only->mount->mount_path.size() > holder->mount->mount_path.size())) {
    const std::string where = describe_source(read_only->volume);
    return Gap{
        Outcome::kFinding, said + " are on read-only " + where + ": they cannot be written there",
        "save path " + path + " of container " + read_only->container->name + " is on a read-only mount of " + where,
        "mount " + read_only->mount->mount_path +
            " writable (without readOnly), or save to a writable PersistentVolumeClaim"};
  }
  if (holder == nullptr) {
    return Gap{Outcome::kFinding,
               said + " are in the container's own filesystem: a replacement pod starts with none of them",
               "save path " + path + " (" + std::string(ctx.save_flag) + ") is on no mounted volume",
               "mount a PersistentVolumeClaim (or durable CSI volume) at " + path};
  }
  if (holder->volume == nullptr) return undeclared(*holder);
  if (is_durable(*holder->volume, ctx.policy)) return std::nullopt;
  const std::string where = describe_source(holder->volume);
  return Gap{Outcome::kFinding, said + " are on " + where + ": " + std::string(what_happens(holder->volume)),
             "save path " + path + " of container " + holder->container->name + " is on " + where + ", not durable",
             "mount a PersistentVolumeClaim (or durable CSI volume) at " + holder->mount->mount_path};
}

// input_only: the finding when every writable durable volume of the trainer holds what the
// job reads (InputUses): say which, and on what grounds (names alone, or names and use).
Gap input_only(const std::vector<const TrainerMount*>& inputs, bool read) {
  const auto where = [](const TrainerMount* m) { return describe_source(m->volume) + " at " + m->mount->mount_path; };
  const std::string grounds = read ? " and use)" : ")";
  std::string said;
  if (inputs.size() == 1) {
    said = "the only writable durable volume, " + where(inputs.front()) + ", holds what the job reads (by its name" +
           grounds;
  } else {
    std::string list;
    for (const auto* m : inputs) list += (list.empty() ? "" : "; ") + where(m);
    said = "the writable durable volumes (" + list + ") hold what the job reads (by their names" + grounds;
  }
  const TrainerMount& first = *inputs.front();
  return Gap{Outcome::kFinding, said + ": checkpoints saved elsewhere in the pod are lost when the pod is replaced",
             "durable " + where(&first) + " of container " + first.container->name + " is named for input" +
                 (read ? " and only read by the pod" : ", and nothing in the pod writes there") +
                 " (policy inputVolumes)",
             "mount a PersistentVolumeClaim where the job saves checkpoints, or have it save under " +
                 first.mount->mount_path + " or to object storage"};
}

}  // namespace

std::optional<Gap> check_checkpoint_volume(const PodSpecView& pod, const CheckContext& ctx) {
  // A run that saves nothing on purpose has nothing to lose.
  if (!ctx.checkpointing_off.empty()) return note("checkpointing disabled by " + std::string(ctx.checkpointing_off));
  // An auto-class pod with no sign of training (a smoke test, a download, a server in a
  // Job) is not judged: a warning there would teach people to ignore the others.
  if (ctx.workload_class == WorkloadClass::kAuto) {
    return not_evaluated(std::string("no sign that this pod trains (label it ") + kTrainingJobAnnotation +
                         ": \"true\" to check it)");
  }
  // Where checkpoints go is set outside the object (a ConfigMap, a Secret, a deploy-time
  // template var): it may well be a bucket, and a warning would be a guess.
  if (ctx.checkpoint_destination.starts_with('$')) {
    return not_evaluated("checkpoints go to " + std::string(ctx.checkpoint_destination) +
                         ", a place this object does not show");
  }
  if (!ctx.checkpoint_destination.empty()) {
    return note("checkpoints go to " + std::string(ctx.checkpoint_destination));
  }
  const VolumeIndex volumes(pod);
  const std::vector<TrainerMount> mounts = trainer_mounts(pod, volumes, ctx.policy);

  // A checkpoint-looking path decides: the first one that is not durable is the finding.
  const TrainerMount* unknown = nullptr;
  bool checkpoint_path = false;
  for (const auto& m : mounts) {
    if (!looks_like_checkpoint_path(m.mount->mount_path, ctx.policy)) continue;
    if (ctx.workload_class == WorkloadClass::kServing &&
        (staged_by_init(pod, m.mount->name) || starts_server(*m.container, ctx.policy))) {
      continue;
    }
    checkpoint_path = true;
    if (m.volume == nullptr) {
      if (unknown == nullptr) unknown = &m;
      continue;
    }
    if (is_durable(*m.volume, ctx.policy)) continue;
    const std::string where = describe_source(m.volume);
    // The warning leaves out the container so the same gap in several parts is one
    // warning; the annotation names it.
    return Gap{
        Outcome::kFinding,
        "checkpoints at " + m.mount->mount_path + " are on " + where + ": " + std::string(what_happens(m.volume)),
        "checkpoint path " + m.mount->mount_path + " of container " + m.container->name + " is on " + where +
            ", not durable",
        "mount a PersistentVolumeClaim (or durable CSI volume) at " + m.mount->mount_path};
  }
  if (unknown != nullptr) return undeclared(*unknown);
  if (checkpoint_path) return std::nullopt;
  // Without a checkpoint-looking path, an inference server says nothing about training.
  if (ctx.workload_class == WorkloadClass::kServing) return std::nullopt;
  // The command says where it saves (--output_dir /workspace/output): the mount that
  // holds that path decides, not whichever volume happens to be durable (a dataset PVC).
  // A path given as a plain argument (kSavePlaceArgument) is a weaker sign: it decides
  // only when a mount holds it (`cp model.pt /output` into the image's own /output may be
  // a step before an upload the command does not show).
  if (!ctx.save_path.empty()) {
    const TrainerMount* holder = holder_of(mounts, ctx.save_path);
    if (holder != nullptr || ctx.save_flag != kSavePlaceArgument) {
      // Read-only mounts are gathered only here, where a save path is judged.
      const std::vector<TrainerMount> read_only = trainer_mounts(pod, volumes, ctx.policy, false);
      if (auto gap = judge_save_path(holder, holder_of(read_only, ctx.save_path), ctx)) return *gap;
      return std::nullopt;
    }
  }

  // A durable volume decides, unless it holds only what the job reads (a dataset or a
  // cache claim that nothing in the pod writes to): the job saves somewhere else.
  std::vector<const TrainerMount*> inputs;
  bool read = false;              // the pod visibly reads one of them
  std::optional<InputUses> uses;  // read once, and only when a durable volume is mounted
  for (const auto& m : mounts) {
    if (m.volume == nullptr || !is_durable(*m.volume, ctx.policy)) continue;
    if (!uses) uses.emplace(pod, ctx.object.namespace_name, ctx.cluster, ctx.policy);
    const InputUses::Holds holds = uses->holds(*m.mount);
    if (holds == InputUses::Holds::kOther) return std::nullopt;
    read = read || holds == InputUses::Holds::kRead;
    if (inputs.size() < 3) inputs.push_back(&m);
  }
  for (const auto& m : mounts) {
    if (m.volume == nullptr) return undeclared(m);
  }
  if (!inputs.empty()) return input_only(inputs, read);
  return Gap{Outcome::kFinding,
             "no writable durable volume is mounted: checkpoints saved in the pod are lost when it is replaced",
             std::string(kNoDurableVolumeReason),
             "mount a PersistentVolumeClaim where the job saves checkpoints, or save them to object storage"};
}

}  // namespace kubegap

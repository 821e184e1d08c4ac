#include "webhook/core/object_evaluation.h"

#include <algorithm>
#include <array>

#include "policies/checks.h"
#include "webhook/core/object_decoder.h"
#include "webhook/core/pod_template_locator.h"
#include "webhook/core/trainjob_runtime.h"

namespace kubegap {
namespace {

// runtime_is_a_template: a Trainer runtime reviewed on its own is the template of every
// TrainJob that names it, and each TrainJob may patch in its own volume (it is judged with
// it when applied). A runtime that mounts nothing durable for its trainer is therefore a
// note, not a warning; a runtime that itself mounts a volume that dies with the pod (an
// emptyDir for its output) still warns: every TrainJob inherits that mount.
void runtime_is_a_template(const WorkloadView& runtime, std::vector<Finding>& findings) {
  const auto mounts_nothing = [&](const std::string& part) {
    for (const auto& pod : runtime.pods) {
      if (pod.part != part) continue;
      return std::none_of(pod.containers.begin(), pod.containers.end(), [](const Container& c) {
        return std::any_of(c.volume_mounts.begin(), c.volume_mounts.end(),
                           [](const VolumeMount& m) { return !m.read_only; });
      });
    }
    return false;
  };
  for (auto& f : findings) {
    if (f.check != kCheckpointVolume || f.outcome != Outcome::kFinding || f.reason != kNoDurableVolumeReason ||
        !std::all_of(f.parts.begin(), f.parts.end(), mounts_nothing)) {
      continue;
    }
    f.outcome = Outcome::kNote;
    f.message.clear();
    f.remedy.clear();
    f.reason =
        "a runtime is a template and mounts no volume for its trainer: each TrainJob that names it is judged "
        "with the volumes it patches in";
  }
}

// evaluate_located: the object's metadata and pod templates (following `row`) through the
// engine.
ObjectEvaluation evaluate_located(const rapidjson::Value& json, const JsonPath& path, const WorkloadKind& row,
                                  std::string_view default_namespace, const ClusterSnapshot* cluster,
                                  const Policy& policy, std::string_view cluster_unavailable,
                                  const ClusterSnapshot* claims, std::vector<std::string> notes = {}) {
  ObjectEvaluation out;
  JsonReader reader;
  out.object.api_group = row.group;
  out.object.kind = row.kind;
  out.object.notes = std::move(notes);
  out.object.unlisted_kind = policy.workload_kind(row.group, row.kind) == nullptr;
  decode_object_meta(reader, json, path, out.object);
  if (out.object.namespace_name.empty()) out.object.namespace_name = default_namespace;
  locate_pod_templates(reader, json, path, row, out.object, &policy, 0, claims != nullptr ? claims : cluster);
  out.object.notes.insert(out.object.notes.end(), reader.notes().begin(), reader.notes().end());
  if (std::string dropped = reader.dropped_note(); !dropped.empty()) out.object.notes.push_back(std::move(dropped));
  if (!reader.ok()) {
    out.error = reader.error();
    return out;
  }
  Evaluation evaluation = evaluate_object_view(out.object, cluster, policy, cluster_unavailable, claims);
  out.findings = std::move(evaluation.findings);
  out.parts = std::move(evaluation.parts);
  if (row.group == kTrainerApiGroup && (row.kind == kClusterTrainingRuntimeKind || row.kind == kTrainingRuntimeKind)) {
    runtime_is_a_template(out.object, out.findings);
  }
  return out;
}

// kRuntimeDecides: the checks whose answer a TrainJob's runtime can change (it may mount a
// volume or add tolerations). Without the runtime their findings are not evaluated; what
// the TrainJob alone decides (a zone pin in its overrides, the PDB that selects its pods)
// is still judged.
// restart-on-failure: the restart budget is the runtime's failurePolicy, which a TrainJob
// cannot override.
constexpr std::array<std::string_view, 3> kRuntimeDecides = {kCheckpointVolume, "gpu-health-tolerations",
                                                             kRestartOnFailure};

// evaluate_trainjob: a Kubeflow Trainer TrainJob, judged as the JobSet its runtime and its
// own fields make (webhook/core/trainjob_resolver.h). The findings are the TrainJob's.
ObjectEvaluation evaluate_trainjob(const rapidjson::Value& json, const JsonPath& path, const WorkloadKind& row,
                                   std::string_view default_namespace, const ClusterSnapshot* cluster,
                                   const Policy& policy, std::string_view cluster_unavailable,
                                   const ClusterSnapshot* claims) {
  std::string namespace_name = JsonReader::string_member(JsonReader::member(&json, "metadata"), "namespace");
  if (namespace_name.empty()) namespace_name = default_namespace;
  TrainJobBuild built = build_trainjob(json, namespace_name, claims != nullptr ? claims : cluster, cluster_unavailable);
  TrainJobResolution& resolved = built.resolution;
  ObjectEvaluation out;
  if (!resolved.error.empty()) {
    out.error = std::string(path.name) + "." + resolved.error;
    return out;
  }
  const std::string& missing = built.missing;
  out = evaluate_located(resolved.object, JsonPath{nullptr, path.name}, row, default_namespace, cluster, policy,
                         cluster_unavailable, claims, {built.note});
  out.provenance = std::move(resolved.provenance);
  if (missing.empty()) return out;
  for (auto& f : out.findings) {
    const bool runtime_decides =
        std::find(kRuntimeDecides.begin(), kRuntimeDecides.end(), f.check) != kRuntimeDecides.end();
    if (!runtime_decides || f.outcome != Outcome::kFinding) continue;
    f.outcome = Outcome::kNotEvaluated;
    f.message.clear();
    f.remedy.clear();
    f.reason = missing;
  }
  return out;
}

}  // namespace

ObjectEvaluation evaluate_object(const rapidjson::Value& json, std::string_view json_path, const WorkloadKind& row,
                                 std::string_view default_namespace, const ClusterSnapshot* cluster,
                                 const Policy& policy, std::string_view cluster_unavailable,
                                 const ClusterSnapshot* claims, std::vector<std::string> notes) {
  const JsonPath path{nullptr, json_path};
  if (row.resolve == "trainerRuntime") {
    return evaluate_trainjob(json, path, row, default_namespace, cluster, policy, cluster_unavailable, claims);
  }
  return evaluate_located(json, path, row, default_namespace, cluster, policy, cluster_unavailable, claims,
                          std::move(notes));
}

}  // namespace kubegap

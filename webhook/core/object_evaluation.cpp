#include "webhook/core/object_evaluation.h"

#include <algorithm>
#include <array>

#include "policies/checks.h"
#include "webhook/core/object_decoder.h"
#include "webhook/core/pod_template_locator.h"
#include "webhook/core/trainer_shipped_runtimes.h"
#include "webhook/core/trainjob_resolver.h"

namespace kubegap {
namespace {

// evaluate_located: the object's metadata and pod templates (following `row`) through the
// engine.
ObjectEvaluation evaluate_located(const rapidjson::Value& json, const JsonPath& path, const WorkloadKind& row,
                                  const std::string& default_namespace, const ClusterSnapshot* cluster,
                                  const Policy& policy, std::string_view cluster_unavailable,
                                  const ClusterSnapshot* claims, std::vector<std::string> notes = {}) {
  ObjectEvaluation out;
  JsonReader reader;
  out.object.api_group = row.group;
  out.object.kind = row.kind;
  out.object.notes = std::move(notes);
  decode_object_meta(reader, json, path, out.object);
  if (out.object.namespace_name.empty()) out.object.namespace_name = default_namespace;
  locate_pod_templates(reader, json, path, row, out.object, &policy);
  out.object.notes.insert(out.object.notes.end(), reader.notes().begin(), reader.notes().end());
  if (!reader.ok()) {
    out.error = reader.error();
    return out;
  }
  Evaluation evaluation = evaluate_object_view(out.object, cluster, policy, cluster_unavailable, claims);
  out.findings = std::move(evaluation.findings);
  out.parts = std::move(evaluation.parts);
  return out;
}

// kRuntimeDecides: the checks whose answer a TrainJob's runtime can change (it may mount a
// volume or add tolerations). Without the runtime their findings are not evaluated; what
// the TrainJob alone decides (a zone pin in its overrides, the PDB that selects its pods)
// is still judged.
constexpr std::array<std::string_view, 2> kRuntimeDecides = {kCheckpointVolume, "gpu-health-tolerations"};

// missing_runtime: why the runtime could not be read, for the "not evaluated" annotation.
std::string missing_runtime(const RuntimeRef& ref, const ClusterSnapshot* known, std::string_view unavailable) {
  std::string why = "runtime " + ref.kind + "/" + ref.name + " not found (";
  if (known == nullptr) {
    why += std::string(unavailable);
  } else if (!known->runtimes().listed()) {
    why += "training runtimes are not listed: is the Trainer CRD installed?";
  } else {
    why += "not in the " + std::string(known->runtimes().size() == 0 ? "input or cluster view" : "known runtimes");
  }
  return why + ")";
}

// evaluate_trainjob: a Kubeflow Trainer TrainJob, judged as the JobSet its runtime and its
// own fields make (webhook/core/trainjob_resolver.h). The findings are the TrainJob's.
ObjectEvaluation evaluate_trainjob(const rapidjson::Value& json, const JsonPath& path, const WorkloadKind& row,
                                   const std::string& default_namespace, const ClusterSnapshot* cluster,
                                   const Policy& policy, std::string_view cluster_unavailable,
                                   const ClusterSnapshot* claims) {
  const RuntimeRef ref = runtime_ref(json);
  std::string namespace_name = JsonReader::string_member(JsonReader::member(&json, "metadata"), "namespace");
  if (namespace_name.empty()) namespace_name = default_namespace;
  const ClusterSnapshot* known = claims != nullptr ? claims : cluster;
  const std::string* text =
      known != nullptr && !ref.name.empty() ? known->runtimes().find(ref.kind, namespace_name, ref.name) : nullptr;
  std::string shipped_note;
  std::string shipped_text;
  if (text == nullptr && known != nullptr && known->runtimes().shipped_defaults() &&
      ref.kind == kClusterTrainingRuntimeKind) {
    if (const std::string_view* shipped = shipped_trainer_runtime(ref.name)) {
      shipped_text = std::string(*shipped);
      text = &shipped_text;
      shipped_note = "runtime " + ref.kind + "/" + ref.name + " is not in the input: judged as " +
                     std::string(kShippedRuntimesVersion) + " ships it (give your runtime to judge yours)";
    }
  }
  rapidjson::Document runtime;
  if (text != nullptr && runtime.Parse(text->data(), text->size()).HasParseError()) text = nullptr;
  TrainJobResolution resolved =
      text != nullptr ? resolve_trainjob(json, runtime) : resolve_trainjob_without_runtime(json);
  ObjectEvaluation out;
  if (!resolved.error.empty()) {
    out.error = std::string(path.name) + "." + resolved.error;
    return out;
  }
  const std::string missing = ref.name.empty()  ? "no spec.runtimeRef.name"
                              : text == nullptr ? missing_runtime(ref, known, cluster_unavailable)
                                                : std::string();
  std::vector<std::string> notes;
  notes.push_back(!missing.empty()        ? missing + ": judged on what the TrainJob alone sets"
                  : !shipped_note.empty() ? shipped_note
                                          : "judged as the JobSet of runtime " + ref.kind + "/" + ref.name);
  out = evaluate_located(resolved.object, JsonPath{nullptr, path.name}, row, default_namespace, cluster, policy,
                         cluster_unavailable, claims, std::move(notes));
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
                                 const std::string& default_namespace, const ClusterSnapshot* cluster,
                                 const Policy& policy, std::string_view cluster_unavailable,
                                 const ClusterSnapshot* claims) {
  const JsonPath path{nullptr, json_path};
  if (row.resolve == "trainerRuntime") {
    return evaluate_trainjob(json, path, row, default_namespace, cluster, policy, cluster_unavailable, claims);
  }
  return evaluate_located(json, path, row, default_namespace, cluster, policy, cluster_unavailable, claims);
}

}  // namespace kubegap

#include "webhook/core/trainjob_runtime.h"

#include "webhook/core/trainer_shipped_runtimes.h"

namespace kubegap {
namespace {

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

}  // namespace

TrainJobBuild build_trainjob(const rapidjson::Value& trainjob, const std::string& namespace_name,
                             const ClusterSnapshot* known, std::string_view unavailable) {
  TrainJobBuild out;
  out.ref = runtime_ref(trainjob);
  const RuntimeRef& ref = out.ref;
  const std::string* text =
      known != nullptr && !ref.name.empty() ? known->runtimes().find(ref.kind, namespace_name, ref.name) : nullptr;
  std::string shipped_text;
  if (text == nullptr && known != nullptr && known->runtimes().shipped_defaults() &&
      ref.kind == kClusterTrainingRuntimeKind) {
    if (const std::string_view* shipped = shipped_trainer_runtime(ref.name)) {
      shipped_text = std::string(*shipped);
      text = &shipped_text;
      out.note = "runtime " + ref.kind + "/" + ref.name + " is not in the input: judged as " +
                 std::string(kShippedRuntimesVersion) + " ships it (give your runtime to judge yours)";
    }
  }
  rapidjson::Document runtime;
  if (text != nullptr && runtime.Parse(text->data(), text->size()).HasParseError()) text = nullptr;
  out.resolution = text != nullptr ? resolve_trainjob(trainjob, runtime) : resolve_trainjob_without_runtime(trainjob);
  if (ref.name.empty()) {
    out.missing = "no spec.runtimeRef.name";
  } else if (text == nullptr) {
    out.missing = missing_runtime(ref, known, unavailable);
  }
  if (!out.missing.empty()) {
    out.note = out.missing + ": judged on what the TrainJob alone sets";
  } else if (out.note.empty()) {
    out.note = "judged as the JobSet of runtime " + ref.kind + "/" + ref.name;
  }
  return out;
}

}  // namespace kubegap

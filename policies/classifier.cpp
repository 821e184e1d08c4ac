#include "policies/classifier.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include "policies/evidence.h"
#include "policies/flag_words.h"
#include "policies/text.h"

namespace kubegap {
namespace {

// With the DRAExtendedResource feature a device class can serve a plain resource
// request; without an explicit name it is this prefix plus the class name
// (k8s.io/api/resource/v1, ResourceDeviceClassPrefix).
constexpr std::string_view kDeviceClassResourcePrefix = "deviceclass.resource.kubernetes.io/";

bool matches_any(const std::vector<std::string>& patterns, const std::string& text) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& pattern) { return wildcard_match(pattern, text); });
}

// visibly_trains_on_cpu: strong evidence, and a script counts only when its name starts
// like a training script (the policy's `scripts` patterns without their leading `*`):
// train_model.py, finetune.sh, retrain.py, run_train.py do; validate_constraints.py,
// prepare_train.py and sync_training_data.sh, which CPU cron jobs run, do not.
bool visibly_trains_on_cpu(std::string_view why, const Policy& policy) {
  if (!strong_training_evidence(why)) return false;
  constexpr std::string_view kScript = "script ";
  if (!why.starts_with(kScript)) return true;
  std::string name(why.substr(kScript.size()));
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // A word that only says "this runs it" leaves the name's meaning to what follows:
  // main_train.py, run-train.sh, start_training.py train (prepare_train.py does not).
  for (const std::string_view runs : {"main", "run", "start", "launch", "do"}) {
    if (name.size() > runs.size() + 1 && name.starts_with(runs) &&
        (name[runs.size()] == '_' || name[runs.size()] == '-')) {
      name.erase(0, runs.size() + 1);
      break;
    }
  }
  if (name.starts_with("re")) name.erase(0, 2);  // retrain.py trains again
  return std::any_of(policy.training_hints.scripts.begin(), policy.training_hints.scripts.end(),
                     [&](const std::string& pattern) {
                       const bool anchored = pattern.starts_with('*') && !pattern.starts_with("*.");
                       return wildcard_match(anchored ? pattern.substr(1) : pattern, name);
                     });
}

bool accelerator_resource(const std::string& resource, const Policy& policy) {
  if (matches_any(policy.accelerator_resources, resource)) return true;
  return resource.starts_with(kDeviceClassResourcePrefix) &&
         matches_any(policy.accelerator_device_classes, resource.substr(kDeviceClassResourcePrefix.size()));
}

// claims_accelerator: a pod resource claim (DRA) that a container consumes and whose
// requests name an accelerator device class. A pod names no device class itself: the
// ResourceClaim or ResourceClaimTemplate does. When the cluster view does not know it
// (no view, or not yet listed), the claim counts as an accelerator: on the clusters this
// webhook serves, DRA claims are overwhelmingly GPUs, and missing a training pod costs
// more than judging one device pod too many.
bool claims_accelerator(const PodSpecView& pod, const Policy& policy, const std::string& namespace_name,
                        const ClusterSnapshot* cluster) {
  return std::any_of(pod.resource_claims.begin(), pod.resource_claims.end(), [&](const PodResourceClaim& claim) {
    const bool is_template = claim.claim_name.empty();
    const std::string& name = is_template ? claim.template_name : claim.claim_name;
    const auto* classes = cluster != nullptr ? cluster->device_classes(namespace_name, name, is_template) : nullptr;
    if (classes == nullptr) return true;
    return std::any_of(classes->begin(), classes->end(),
                       [&](const std::string& c) { return matches_any(policy.accelerator_device_classes, c); });
  });
}

bool annotated_training(const StringMap& annotations) {
  const auto it = annotations.find(kTrainingJobAnnotation);
  return it != annotations.end() && it->second == "true";
}

}  // namespace

bool container_requests_accelerator(const Container& container, const Policy& policy) {
  return std::any_of(container.resources.begin(), container.resources.end(),
                     [&](const std::string& resource) { return accelerator_resource(resource, policy); });
}

bool requests_accelerator(const PodSpecView& pod, const Policy& policy, const std::string& namespace_name,
                          const ClusterSnapshot* cluster) {
  auto requests = [&](const Container& c) { return container_requests_accelerator(c, policy); };
  if (std::any_of(pod.containers.begin(), pod.containers.end(), requests) ||
      std::any_of(pod.init_containers.begin(), pod.init_containers.end(), requests)) {
    return true;
  }
  if (std::any_of(policy.accelerator_annotations.begin(), policy.accelerator_annotations.end(),
                  [&](const std::string& key) { return pod.annotations.contains(key); })) {
    return true;
  }
  return claims_accelerator(pod, policy, namespace_name, cluster);
}

const WorkloadKind* judging_row(const WorkloadView& object, const Policy& policy) {
  if (object.kind == "Pod" && object.api_group.empty() && !object.owner.kind.empty()) {
    if (const WorkloadKind* owner = policy.workload_kind(object.owner.api_group, object.owner.kind)) return owner;
  }
  return policy.workload_kind(object.api_group, object.kind);
}

namespace {

// named_as_check: the word of `name` that says it is a smoke test or a check (policy
// diagnosticNames), alone or joined with the next word (`self-test`, `bring-up`,
// `pre-check`); none when a word of it starts with "train", "pretrain" or "retrain".
std::optional<std::string> named_as_check(std::string_view name, const Policy& policy) {
  // `head` then `tail` spell a listed word (tail alone when head is empty), compared in
  // place: this runs for every judged part of every review, so nothing is built.
  const auto listed = [&](std::string_view head, std::string_view tail) -> const std::string* {
    const auto found =
        std::find_if(policy.diagnostic_names.begin(), policy.diagnostic_names.end(), [&](const std::string& w) {
          return w.size() == head.size() + tail.size() && std::equal(head.begin(), head.end(), w.begin(), iequal) &&
                 std::equal(tail.begin(), tail.end(), w.begin() + static_cast<std::ptrdiff_t>(head.size()), iequal);
        });
    return found == policy.diagnostic_names.end() ? nullptr : &*found;
  };
  const std::string* said = nullptr;
  std::string_view previous;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && std::isalpha(static_cast<unsigned char>(name[i]))) continue;
    const std::string_view word = name.substr(start, i - start);
    start = i + 1;
    if (word.empty()) continue;
    if (istarts_with(word, "train") || istarts_with(word, "pretrain") || istarts_with(word, "retrain")) {
      return std::nullopt;
    }
    if (said == nullptr) said = listed({}, word);
    if (said == nullptr && !previous.empty()) said = listed(previous, word);
    previous = word;
  }
  return said == nullptr ? std::nullopt : std::optional<std::string>(*said);
}

}  // namespace

PodClass classify_pod(const PodSpecView& pod, const WorkloadView& object, const WorkloadKind* row, bool accelerator,
                      const Policy& policy, const PartEvidence& evidence) {
  if (annotated_training(pod.annotations) || annotated_training(object.annotations)) {
    return {true, WorkloadClass::kTraining, std::string("annotated ") + kTrainingJobAnnotation};
  }
  const WorkloadClass row_class = row != nullptr ? row->workload_class : WorkloadClass::kAuto;
  const bool framework = std::any_of(policy.framework_labels.begin(), policy.framework_labels.end(),
                                     [&](const std::string& key) { return pod.labels.contains(key); });
  // A smoke test is a smoke test in any kind; only the explicit opt-in outranks it.
  if (!evidence.diagnostic.empty() && (accelerator || framework || row_class == WorkloadClass::kTraining)) {
    return {true, WorkloadClass::kDiagnostic, evidence.diagnostic};
  }
  // A name that says smoke test or check makes a training or auto part diagnostic; a
  // serving kind keeps its own rules (a "hello-vllm" Deployment serves).
  if (row_class != WorkloadClass::kServing && (accelerator || framework || row_class == WorkloadClass::kTraining)) {
    if (auto word = named_as_check(object.name, policy)) {
      return {true, WorkloadClass::kDiagnostic, "its name " + object.name + " says " + *word};
    }
  }
  const std::string kind = row != nullptr ? row->kind : object.kind;
  // An inference server in any kind (offline batch inference in a JobSet) serves, unless
  // the part visibly trains too.
  if (!evidence.serving.empty() && row_class != WorkloadClass::kServing &&
      !strong_training_evidence(evidence.training) &&
      (accelerator || framework || row_class == WorkloadClass::kTraining)) {
    return {true, WorkloadClass::kServing, evidence.serving};
  }
  // Batch work that only reads checkpoints (offline inference, evaluation, conversion) in
  // a training kind or a framework's pod is not training: judged like an auto pod with no
  // sign of training (as an auto pod already is). Serving kinds keep their own rule for
  // checkpoint-looking mounts.
  if (!evidence.reader.empty() && evidence.training.empty() && row_class != WorkloadClass::kServing &&
      (framework || row_class == WorkloadClass::kTraining)) {
    return {true, WorkloadClass::kAuto, evidence.reader};
  }
  // A cluster with no workload of its own (a Volcano Job whose tasks only run `ray start`)
  // is judged like a RayCluster: it needs evidence, like a bare Pod, whatever its kind.
  if (evidence.idle_cluster) {
    if (!accelerator) return {false, WorkloadClass::kAuto, "no accelerator and no training label"};
    if (!evidence.training.empty()) return {true, WorkloadClass::kTraining, evidence.training};
    return {true, WorkloadClass::kAuto,
            "every part only starts cluster nodes: a " + kind + " with no workload of its own"};
  }
  for (const auto& key : policy.framework_labels) {
    if (pod.labels.contains(key)) return {true, WorkloadClass::kTraining, "framework label " + key};
  }
  const std::string via = row != nullptr && row->kind != object.kind && !object.owner.kind.empty()
                              ? " (owner " + object.owner.kind + ")"
                              : "";
  // A serving controller whose pods visibly train (torchrun in a Deployment) is a
  // training job in the wrong kind; a checkpoint-looking path alone does not say so.
  if (row_class == WorkloadClass::kServing && row->evidence_promotes && strong_training_evidence(evidence.training)) {
    return {true, WorkloadClass::kTraining, evidence.training + " (a " + kind + via + " that trains)"};
  }
  if (row_class == WorkloadClass::kTraining) return {true, row_class, "kind " + kind + via + " is training"};
  // A wrapper may let its parts speak without an accelerator (a Katib trial on CPU): with
  // training evidence they are training. A Job or bare Pod on CPU that visibly trains
  // (torchrun, a training script) loses its checkpoints like a GPU one (judgeCpuTraining),
  // unless its object trains on accelerators elsewhere; a checkpoint-looking path alone
  // does not say it trains. Otherwise a CPU part stays unjudged.
  if (!accelerator && !(pod.without_accelerator && !evidence.training.empty())) {
    // Made by a controller (KubeRay's submitter Job, a Job's Pod): the object applied is
    // judged, not what it makes.
    const bool made = !object.owner.kind.empty();
    if (policy.judge_cpu_training && row_class == WorkloadClass::kAuto && !made && !evidence.accelerator_elsewhere &&
        !evidence.submits_elsewhere && visibly_trains_on_cpu(evidence.training, policy)) {
      return {true, WorkloadClass::kTraining, evidence.training + " (no accelerator: policy judgeCpuTraining)"};
    }
    if (evidence.accelerator_elsewhere && strong_training_evidence(evidence.training)) {
      return {false, row_class, "no accelerator; the parts that request one are judged"};
    }
    return {false, row_class, "no accelerator and no training label"};
  }
  if (row_class == WorkloadClass::kAuto) {
    if (!evidence.training.empty()) return {true, WorkloadClass::kTraining, evidence.training};
    return {true, WorkloadClass::kAuto, "no sign of training in its command or env"};
  }
  return {true, row_class, "kind " + kind + via + " is " + std::string(class_name(row_class))};
}

}  // namespace kubegap

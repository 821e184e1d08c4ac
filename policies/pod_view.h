#pragma once
// Plain views of what the checks read from a pod and from the object under review.
// The webhook decodes JSON into these; the checks never see JSON, sockets or clocks.
//
//   PodSpecView pod;
//   pod.containers.push_back({.name = "trainer", .resources = {"nvidia.com/gpu"}});
//   WorkloadView object{.kind = "Pod", .name = "train-0", .pods = {pod}};

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kubegap {

// Labels and annotations; std::less<> allows lookups by std::string_view.
using StringMap = std::map<std::string, std::string, std::less<>>;

struct VolumeMount {
  std::string name;
  std::string mount_path;
  bool read_only = false;     // readOnly: true on the mount: it cannot hold checkpoints
  std::string sub_path = {};  // subPath: one file or directory of the volume at mount_path
};

// EnvVar: a literal env value. A valueFrom reference is kept with an empty value and
// `from` naming its source ("ConfigMap train-config", "Secret s3", "the pod's fields"),
// so a flag that takes its value from it is known to be set outside the object; an
// entry with an empty name and a `from` stands for every var an envFrom source the input
// does not hold may set.
struct EnvVar {
  std::string name;
  std::string value;
  std::string from = {};  // where its value is set, when the object does not show it
  // A setting read from a Python script's constants (append_script_settings), not from a
  // config file: findings say which.
  bool script = false;
};

struct Container {
  std::string name;
  // Names of the resources the container requests or limits with a non-zero quantity.
  std::vector<std::string> resources;
  std::vector<VolumeMount> volume_mounts;
  // Names of the pod's resource claims (DRA) this container consumes
  // (resources.claims[].name).
  std::vector<std::string> claims = {};
  std::string image = {};
  std::vector<std::string> command = {};
  std::vector<std::string> args = {};
  std::string working_dir = {};  // workingDir: where relative paths in its command start
  std::vector<EnvVar> env = {};
  // envFrom ConfigMaps (names): their data are env vars, when the input holds them.
  std::vector<std::string> env_from_config_maps = {};
};

struct Volume {
  std::string name;
  // The member of the Volume that names its source: "persistentVolumeClaim", "emptyDir",
  // "csi", "nfs", ... Empty when the volume has no source we recognise.
  std::string source;
  std::string driver;  // for source == "csi" or "flexVolume"
  // A source with readOnly: true (persistentVolumeClaim, nfs, csi, azureFile, ...): the
  // kubelet mounts it read-only whatever the volumeMount says.
  bool read_only = false;
  // For source == "configMap": the ConfigMap, and its items as (key, path) when only
  // those keys are projected (else every key is a file of its own name).
  std::string config_map = {};
  std::vector<std::pair<std::string, std::string>> items = {};
};

// PodResourceClaim: an entry of spec.resourceClaims (dynamic resource allocation): the
// pod-level name containers refer to, and the ResourceClaim or ResourceClaimTemplate
// that holds the device requests (and so the device class names).
struct PodResourceClaim {
  std::string name;
  std::string claim_name;     // resourceClaimName
  std::string template_name;  // resourceClaimTemplateName
};

// A node selector requirement, as in NodeSelectorRequirement and
// LabelSelectorRequirement: key, operator (In, NotIn, Exists, DoesNotExist, Gt, Lt), values.
struct Requirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
  bool operator==(const Requirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<Requirement> match_expressions;
  std::vector<Requirement> match_fields;
};

struct Toleration {
  std::string key;
  std::string op;  // "Equal" (the API default when empty) or "Exists"
  std::string value;
  std::string effect;  // empty = every effect
  std::optional<std::int64_t> toleration_seconds;
};

// RestartRule: one rule that decides what a failure does to a job: a Job's
// podFailurePolicy rule (`on`: the onPodConditions types whose status is True), a
// JobSet's failurePolicy rule (`on`: onJobFailureReasons; `narrowed` when it also
// targets replicated jobs or message patterns), a Volcano lifecycle policy (`on`: the
// event and events).
struct RestartRule {
  std::string action;
  std::vector<std::string> on;
  bool narrowed = false;
};

// RestartKnobs: what restart-on-failure reads for one part, as written (unset is nullopt
// or empty; the row's defaults are applied by the check). The object-level knobs are the
// same in every part; `part_*` come from the part's own spec: a JobSet's child Job
// (backoffLimit, podFailurePolicy), a Kubeflow replica (restartPolicy), a Volcano task
// (policies).
struct RestartKnobs {
  std::optional<std::int64_t> budget;
  std::optional<std::int64_t> per_index_budget;
  std::vector<RestartRule> rules;
  std::optional<std::int64_t> part_budget;
  std::vector<RestartRule> part_rules;
  std::string replica_restart_policy;
  // A knob is an unrendered template ($RETRIES): set at deploy time, so not judged.
  bool placeholder = false;
};

// PodSpecView: one pod (or pod template) to evaluate.
struct PodSpecView {
  // Which part of the workload this is ("replica Worker", "replicatedJob workers");
  // empty for a Pod.
  std::string part;
  // The part's role in its workload (PartRole in policies/policy.h): a coordinator (an
  // MPIJob Launcher) writes no checkpoints of its own; it is judged with its job.
  bool coordinator = false;
  // The part writes its job's checkpoints (PartRole::checkpoint_writer: a TFJob Chief).
  bool checkpoint_writer = false;
  // The part prepares the job (PartRole::helper: Trainer's initializers): no checkpoints
  // of its own, and its command does not speak for the job.
  bool helper = false;
  // The kind of the wrapped object this part belongs to (a Katib trial's PyTorchJob), so
  // the part is judged by that kind's row; empty for the object's own parts.
  std::string wrapped_group = {};
  std::string wrapped_kind = {};
  // Judged on its evidence without an accelerator (PodTemplateLocation::without_accelerator).
  bool without_accelerator = false;
  StringMap labels;
  StringMap annotations;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::vector<Volume> volumes;
  StringMap node_selector;
  // requiredDuringSchedulingIgnoredDuringExecution terms (ORed), and whether that field
  // is set at all: set with no (non-empty) term, it admits no node.
  std::vector<NodeSelectorTerm> required_node_terms;
  bool required_node_affinity = false;
  std::vector<Toleration> tolerations;
  std::string node_name;
  std::vector<PodResourceClaim> resource_claims;
  // spec.restartPolicy as written ("" when unset).
  std::string restart_policy = {};
  RestartKnobs restart = {};
};

// OwnerReference: the controller owner of a Pod (metadata.ownerReferences with
// controller: true), so a pod made by a Deployment or a DaemonSet is judged like one.
struct OwnerReference {
  std::string api_group;  // "" for core, "apps", "kubeflow.org", ...
  std::string kind;
  std::string name;
};

// WorkloadView: the object under review and the pod specs found in it.
struct WorkloadView {
  std::string api_group;  // "" for core
  std::string kind;       // "Pod", "Job", "PyTorchJob", ...
  std::string namespace_name;
  std::string name;
  StringMap labels;
  StringMap annotations;
  // The controller owner (Pods only); empty kind when there is none.
  OwnerReference owner;
  // Commands that run the whole job, outside any pod template (a RayJob's entrypoint).
  std::vector<std::string> entrypoints;
  // Notes the decoder keeps for the audit trail: envsubst placeholders read as set at
  // deploy time ("resource nvidia.com/gpu is $GPUS"), the runtime a TrainJob resolved.
  std::vector<std::string> notes = {};
  std::vector<PodSpecView> pods;
  // The kind has no row in the workload table: its pod templates were found by their
  // shape (policy judgeUnlistedKinds), so which labels its controller adds is unknown.
  bool unlisted_kind = false;
};

}  // namespace kubegap

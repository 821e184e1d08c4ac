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
#include <vector>

namespace kubegap {

// Labels and annotations; std::less<> allows lookups by std::string_view.
using StringMap = std::map<std::string, std::string, std::less<>>;

struct VolumeMount {
  std::string name;
  std::string mount_path;
};

struct Container {
  std::string name;
  // Names of the resources the container requests or limits with a non-zero quantity.
  std::vector<std::string> resources;
  std::vector<VolumeMount> volume_mounts;
};

struct Volume {
  std::string name;
  // The member of the Volume that names its source: "persistentVolumeClaim", "emptyDir",
  // "csi", "nfs", ... Empty when the volume has no source we recognise.
  std::string source;
  std::string csi_driver;  // for source == "csi"
};

// A node selector requirement, as in NodeSelectorRequirement and
// LabelSelectorRequirement: key, operator (In, NotIn, Exists, DoesNotExist, Gt, Lt), values.
struct Requirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<Requirement> match_expressions;
  std::vector<Requirement> match_fields;
};

struct Toleration {
  std::string key;
  std::string op;      // "Equal" (the API default when empty) or "Exists"
  std::string value;
  std::string effect;  // empty = every effect
  std::optional<std::int64_t> toleration_seconds;
};

// PodSpecView: one pod (or pod template) to evaluate.
struct PodSpecView {
  // Which part of the workload this is ("replica Worker", "replicatedJob workers");
  // empty for a Pod.
  std::string part;
  StringMap labels;
  StringMap annotations;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::vector<Volume> volumes;
  StringMap node_selector;
  // requiredDuringSchedulingIgnoredDuringExecution terms (ORed). Empty: no requirement.
  std::vector<NodeSelectorTerm> required_node_terms;
  std::vector<Toleration> tolerations;
  std::string node_name;
};

// WorkloadView: the object under review and the pod specs found in it.
struct WorkloadView {
  std::string api_group;  // "" for core
  std::string kind;       // "Pod", "Job", "PyTorchJob", ...
  std::string namespace_name;
  std::string name;
  StringMap labels;
  StringMap annotations;
  // A training workload kind (PyTorchJob, JobSet, ...): its pods are training pods.
  bool training_kind = false;
  std::vector<PodSpecView> pods;
};

}  // namespace kubegap

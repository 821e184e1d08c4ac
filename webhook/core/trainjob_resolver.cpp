#include "webhook/core/trainjob_resolver.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "webhook/core/json_reader.h"

// Upstream files cited below are from github.com/kubeflow/trainer at v2.3.0 unless a tag
// says otherwise; docs/trainjob-resolution.md has the full list.
namespace kubegap {
namespace {

using rapidjson::SizeType;
using rapidjson::Value;
using Fields = std::span<const std::string_view>;

// The label that marks which step a replicated job runs (pkg/constants/constants.go).
constexpr std::string_view kAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
constexpr std::string_view kTrainerStep = "trainer";
// The trainer's container, and the MPI worker job (pkg/constants: Node).
constexpr std::string_view kNode = "node";
constexpr int kMaxDepth = 100;
// Real TrainJobs copy a few thousand values; only deliberately huge patches (the API allows
// 16 patches of 100 jobs of 128 volumes each) come near this.
constexpr std::size_t kMaxWork = std::size_t{1} << 20;
constexpr std::size_t kMaxProvenance = 64;

// The pod spec fields each override generation may set: PodSpecOverride (v2.0.0),
// PodTemplateSpecOverride (v2.1.0) and PodSpecPatch (v2.2.0; terminationGracePeriodSeconds
// from v2.3.0) in pkg/apis/trainer/v1alpha1/trainjob_types.go. The API server prunes the
// rest, so they are dropped here too.
constexpr std::array<std::string_view, 7> kPodSpecOverrideFields = {
    "serviceAccountName", "nodeSelector", "tolerations", "volumes", "initContainers", "containers", "schedulingGates"};
constexpr std::array<std::string_view, 9> kPodTemplateOverrideFields = {
    "serviceAccountName", "nodeSelector", "affinity",        "tolerations",     "volumes",
    "initContainers",     "containers",   "schedulingGates", "imagePullSecrets"};
constexpr std::array<std::string_view, 11> kPodSpecPatchFields = {"serviceAccountName",
                                                                  "volumes",
                                                                  "initContainers",
                                                                  "containers",
                                                                  "imagePullSecrets",
                                                                  "securityContext",
                                                                  "nodeSelector",
                                                                  "affinity",
                                                                  "tolerations",
                                                                  "schedulingGates",
                                                                  "terminationGracePeriodSeconds"};
// ContainerOverride (v2.0, v2.1) and ContainerPatch (v2.2+).
constexpr std::array<std::string_view, 3> kContainerOverrideFields = {"name", "env", "volumeMounts"};
constexpr std::array<std::string_view, 4> kContainerPatchFields = {"name", "env", "volumeMounts", "securityContext"};

// The runtime that stands in when the real one cannot be read: the shape of the shipped
// torch-distributed ClusterTrainingRuntime (manifests/base/runtimes), without its image.
constexpr std::string_view kStandInRuntime =
    R"({"kind":"ClusterTrainingRuntime","spec":{"mlPolicy":{"numNodes":1},"template":{"spec":{"replicatedJobs":[)"
    R"({"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},)"
    R"("spec":{"template":{"spec":{"containers":[{"name":"node"}]}}}}}]}}}})";

rapidjson::GenericStringRef<char> ref(std::string_view s) {
  return rapidjson::StringRef(s.data(), static_cast<SizeType>(s.size()));
}

std::string_view text(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

// merge_key: the patchMergeKey of a list field (k8s.io/api core/v1 types.go; jobset
// v0.12.0 api/jobset/v1alpha2 for replicatedJobs). Such lists merge item by item on the
// key; every other list (tolerations, command, nodeSelectorTerms, ...) is replaced whole.
// Only lists a TrainJob can reach are here; all of them are keyed by a string.
std::string_view merge_key(std::string_view field) {
  if (field == "volumeMounts") return "mountPath";
  for (std::string_view keyed : {"replicatedJobs", "containers", "initContainers", "volumes", "env", "imagePullSecrets",
                                 "schedulingGates", "claims", "resourceClaims"}) {
    if (field == keyed) return "name";
  }
  return {};
}

// MlPolicy: what the runtime's spec.mlPolicy says about node counts.
struct MlPolicy {
  bool present = false;
  std::int64_t num_nodes = 1;  // MLPolicy.NumNodes defaults to 1
  bool mpi = false;
  bool launcher_as_node = false;  // mpi.runLauncherAsNode
};

class Resolver {
 public:
  Resolver(TrainJobResolution& out, const Value& trainjob, bool stand_in)
      : out_(out), alloc_(out.object.GetAllocator()), trainjob_(trainjob), stand_in_(stand_in) {}
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  void run(const Value& runtime);

 private:
  bool ok() const { return reader_.ok(); }
  Value& jobs() { return out_.object["spec"]["replicatedJobs"]; }
  void note(std::string line);
  void check_depth(const Value& v, const JsonPath& path, int depth);
  bool charge(std::size_t n, const JsonPath& path);
  std::size_t size_of(const Value& v) const;
  Value copy(const Value& v, const JsonPath& path);
  Value& slot(Value& object, std::string_view key);
  Value* at(std::size_t job, std::initializer_list<std::string_view> keys);
  Value* container(std::size_t job, std::string_view name);
  std::string ancestor(std::size_t job);
  std::optional<std::size_t> job_named(const std::string& name, const std::string& source);

  void start(const Value& runtime);
  void describe_runtime();
  void merge(Value& target, const Value& patch, std::string_view field, const JsonPath& path);
  void merge_list(Value& target, const Value& patch, std::string_view key, bool replace_items, const JsonPath& path);
  void patch_pod(std::size_t job, const Value* metadata, const Value* spec, const JsonPath& path, Fields pod_fields,
                 Fields container_fields, const std::string& source);
  void apply_targeted_overrides(std::string_view field, bool template_shape, Fields pod_fields);
  void apply_runtime_patches();
  void apply_job_patch(const Value& patch, const JsonPath& path, const std::string& source);
  MlPolicy read_ml_policy(const Value& runtime);
  void apply_node_counts(const MlPolicy& policy, const Value* trainer, const JsonPath& trainer_path);
  void apply_trainer(const MlPolicy& policy);
  void apply_initializer(std::string_view field, std::string_view step);

  JsonReader reader_;
  TrainJobResolution& out_;
  rapidjson::Document::AllocatorType& alloc_;
  const Value& trainjob_;
  const Value* spec_ = nullptr;  // the TrainJob's spec
  const bool stand_in_;
  std::string runtime_name_;  // "ClusterTrainingRuntime/torch-distributed"
  std::vector<std::string> job_names_;
  std::unordered_map<std::string, std::size_t> job_index_;
  std::size_t work_ = 0;
  std::size_t dropped_ = 0;
  const JsonPath root_{};
  const JsonPath spec_path_{&root_, "spec"};
  const JsonPath runtime_{nullptr, "runtime"};
  const JsonPath runtime_spec_{&runtime_, "spec"};
  const JsonPath runtime_template_{&runtime_spec_, "template"};
  const JsonPath jobset_spec_{&runtime_template_, "spec"};
  const JsonPath jobs_path_{&jobset_spec_, "replicatedJobs"};
};

void Resolver::note(std::string line) {
  if (out_.provenance.size() < kMaxProvenance) {
    out_.provenance.push_back(std::move(line));
  } else {
    ++dropped_;
  }
}

// check_depth: RapidJSON copies recursively, so nesting is bounded before anything is copied.
void Resolver::check_depth(const Value& v, const JsonPath& path, int depth) {
  if (!ok()) return;
  if (depth > kMaxDepth) return reader_.fail(path, "nested more than 100 levels deep");
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) check_depth(m.value, JsonPath{&path, text(m.name)}, depth + 1);
  } else if (v.IsArray()) {
    for (SizeType i = 0; i < v.Size(); ++i) check_depth(v[i], JsonPath{&path, {}, i}, depth + 1);
  }
}

// charge: counts work against kMaxWork, so an override aimed at every job of a large
// runtime, repeated many times, ends in an error instead of a long copy.
bool Resolver::charge(std::size_t n, const JsonPath& path) {
  work_ += n;
  if (work_ > kMaxWork) reader_.fail(path, "too large to resolve (more than 1048576 values copied)");
  return ok();
}

std::size_t Resolver::size_of(const Value& v) const {
  std::size_t n = 1;
  if (v.IsObject()) {
    for (const auto& m : v.GetObject()) n += size_of(m.value);
  } else if (v.IsArray()) {
    for (const auto& e : v.GetArray()) n += size_of(e);
  }
  return n;
}

// deep_copy: `v` with every string copied. RapidJSON 1.1's own copy keeps the strings of
// an in-situ parse (the webhook's) pointing into the caller's buffer.
Value deep_copy(const Value& v, rapidjson::Document::AllocatorType& alloc) {
  if (v.IsString()) return Value(v.GetString(), v.GetStringLength(), alloc);
  if (v.IsObject()) {
    Value out(rapidjson::kObjectType);
    for (const auto& m : v.GetObject()) {
      out.AddMember(Value(m.name.GetString(), m.name.GetStringLength(), alloc), deep_copy(m.value, alloc), alloc);
    }
    return out;
  }
  if (v.IsArray()) {
    Value out(rapidjson::kArrayType);
    out.Reserve(v.Size(), alloc);
    for (const auto& e : v.GetArray()) out.PushBack(deep_copy(e, alloc), alloc);
    return out;
  }
  return Value(v, alloc);  // a number, boolean or null
}

// copy: a deep copy into the output, charged by its size.
Value Resolver::copy(const Value& v, const JsonPath& path) {
  if (!charge(size_of(v), path)) return Value();
  return deep_copy(v, alloc_);
}

// slot: the member `key` of `object`, added as null when absent.
Value& Resolver::slot(Value& object, std::string_view key) {
  const auto it = object.FindMember(ref(key));
  if (it != object.MemberEnd()) return it->value;
  object.AddMember(Value(key.data(), static_cast<SizeType>(key.size()), alloc_), Value(), alloc_);
  return (object.MemberEnd() - 1)->value;
}

// at: the object at `keys` under replicated job `job`, created when absent; nullptr, with
// an error, when a value on the way is not an object.
Value* Resolver::at(std::size_t job, std::initializer_list<std::string_view> keys) {
  std::array<JsonPath, 6> chain{};
  chain[0] = JsonPath{&jobs_path_, {}, job};
  Value* v = &jobs()[static_cast<SizeType>(job)];
  std::size_t depth = 0;
  for (std::string_view key : keys) {
    chain[depth + 1] = JsonPath{&chain[depth], key};
    ++depth;
    Value& next = slot(*v, key);
    if (next.IsNull()) next.SetObject();
    if (!next.IsObject()) {
      reader_.fail(chain[depth], "expected an object");
      return nullptr;
    }
    v = &next;
  }
  return v;
}

// container: the container `name` of the job's pod template, or nullptr.
Value* Resolver::container(std::size_t job, std::string_view name) {
  Value* spec = at(job, {"template", "spec", "template", "spec"});
  const JsonPath path{&jobs_path_, {}, job};
  if (spec == nullptr) return nullptr;
  Value& list = slot(*spec, "containers");
  if (list.IsNull()) return nullptr;
  if (!list.IsArray()) {
    reader_.fail(JsonPath{&path, "template.spec.template.spec.containers"}, "expected an array");
    return nullptr;
  }
  for (Value& c : list.GetArray()) {
    const Value* n = JsonReader::member(&c, "name");
    if (n != nullptr && n->IsString() && text(*n) == name) return &c;
  }
  return nullptr;
}

std::string Resolver::ancestor(std::size_t job) {
  const Value* labels = JsonReader::member(
      JsonReader::member(JsonReader::member(&jobs()[static_cast<SizeType>(job)], "template"), "metadata"), "labels");
  return JsonReader::string_member(labels, kAncestorLabel);
}

// job_named: the index of replicated job `name`. A name the runtime lacks is skipped, as
// Trainer's admission webhook rejects it (pkg/runtime/framework/plugins/jobset/jobset.go,
// Validate); over the stand-in runtime the job is created, since the real one may have it.
std::optional<std::size_t> Resolver::job_named(const std::string& name, const std::string& source) {
  if (const auto it = job_index_.find(name); it != job_index_.end()) return it->second;
  if (!stand_in_) {
    note("replicatedJob " + name + " named in " + source + " is not in runtime " + runtime_name_ + ": not applied");
    return std::nullopt;
  }
  Value job(rapidjson::kObjectType);
  job.AddMember("name", Value(name.c_str(), static_cast<SizeType>(name.size()), alloc_), alloc_);
  jobs().PushBack(job, alloc_);
  job_names_.push_back(name);
  job_index_.emplace(name, job_names_.size() - 1);
  return job_names_.size() - 1;
}

// start: the output's frame, the runtime's JobSet spec copied in, its jobs indexed.
void Resolver::start(const Value& runtime) {
  const JsonPath meta_path{&root_, "metadata"};
  const Value* metadata = reader_.object(JsonReader::member(&trainjob_, "metadata"), meta_path);
  spec_ = reader_.object(JsonReader::member(&trainjob_, "spec"), spec_path_);
  const Value* runtime_spec = reader_.object(JsonReader::member(&runtime, "spec"), runtime_spec_);
  const Value* tmpl = reader_.object(JsonReader::member(runtime_spec, "template"), runtime_template_);
  const Value* jobset_spec = reader_.object(JsonReader::member(tmpl, "spec"), jobset_spec_);
  if (!ok()) return;
  Value& out = out_.object.SetObject();
  out.AddMember("apiVersion", "jobset.x-k8s.io/v1alpha2", alloc_);
  out.AddMember("kind", "JobSet", alloc_);
  out.AddMember("metadata", metadata != nullptr ? copy(*metadata, meta_path) : Value(rapidjson::kObjectType), alloc_);
  out.AddMember("spec", jobset_spec != nullptr ? copy(*jobset_spec, jobset_spec_) : Value(rapidjson::kObjectType),
                alloc_);
  if (!ok()) return;
  Value& list = slot(out["spec"], "replicatedJobs");
  if (list.IsNull()) list.SetArray();
  if (!list.IsArray()) return reader_.fail(jobs_path_, "expected an array");
  for (SizeType i = 0; i < list.Size() && ok(); ++i) {
    const JsonPath item{&jobs_path_, {}, i};
    reader_.object(&list[i], item);
    if (list[i].IsNull()) list[i].SetObject();
    job_names_.push_back(reader_.string(JsonReader::member(&list[i], "name"), JsonPath{&item, "name"}));
    job_index_.emplace(job_names_.back(), i);
  }
}

// describe_runtime: which scheduling and storage fields each job has from the runtime.
void Resolver::describe_runtime() {
  for (std::size_t i = 0; i < job_names_.size(); ++i) {
    const Value* spec = JsonReader::member(&jobs()[static_cast<SizeType>(i)], "template");
    for (const char* key : {"spec", "template", "spec"}) spec = JsonReader::member(spec, key);
    std::string parts;
    const auto add = [&](std::string_view part) { parts += (parts.empty() ? "" : ", ") + std::string(part); };
    const Value* volumes = JsonReader::member(spec, "volumes");
    for (SizeType v = 0; volumes != nullptr && volumes->IsArray() && v < volumes->Size(); ++v) {
      add("volume " + JsonReader::string_member(&(*volumes)[v], "name"));
    }
    for (std::string_view field :
         {"nodeSelector", "affinity", "tolerations", "serviceAccountName", "imagePullSecrets"}) {
      if (JsonReader::member(spec, field) != nullptr) add(field);
    }
    if (!parts.empty()) note("replicatedJob " + job_names_[i] + ": " + parts + " from runtime " + runtime_name_);
  }
  const Value* policies = JsonReader::member(&out_.object["spec"], "volumeClaimPolicies");
  for (SizeType p = 0; policies != nullptr && policies->IsArray() && p < policies->Size(); ++p) {
    const Value* templates = JsonReader::member(&(*policies)[p], "templates");
    for (SizeType t = 0; templates != nullptr && templates->IsArray() && t < templates->Size(); ++t) {
      const std::string name = JsonReader::string_member(JsonReader::member(&(*templates)[t], "metadata"), "name");
      note("claim template " + name + " (volumeClaimPolicies) from runtime " + runtime_name_);
    }
  }
}

// merge: Kubernetes' strategic merge patch of `patch` onto `target`, as Trainer applies
// every override generation (apimachinery pkg/util/strategicpatch, StrategicMergePatch):
// objects merge member by member, lists with a merge key merge item by item (merge_list),
// other lists and scalars are replaced. Nulls are skipped: Trainer marshals typed structs,
// which omit empty fields, so its patches never delete.
void Resolver::merge(Value& target, const Value& patch, std::string_view field, const JsonPath& path) {
  if (!charge(1, path)) return;
  if (patch.IsObject()) {
    if (!target.IsObject()) target.SetObject();
    for (const auto& m : patch.GetObject()) {
      if (m.value.IsNull()) continue;
      const std::string_view key = text(m.name);
      merge(slot(target, key), m.value, key, JsonPath{&path, key});
      if (!ok()) return;
    }
  } else if (patch.IsArray() && !merge_key(field).empty()) {
    merge_list(target, patch, merge_key(field), false, path);
  } else {
    target = copy(patch, path);
  }
}

// merge_list: `patch` onto the list `target`, item by item on the string member `key`: a
// matching item is merged (replace_items false: strategic merge) or replaced (true:
// Trainer's apply.Upsert* helpers, pkg/apply/apply.go); the others are appended. Indexed,
// so long lists cost n + m, not n * m.
void Resolver::merge_list(Value& target, const Value& patch, std::string_view key, bool replace_items,
                          const JsonPath& path) {
  if (!patch.IsArray()) return reader_.fail(path, "expected an array");
  if (!target.IsArray()) target.SetArray();
  if (!charge(target.Size(), path)) return;
  std::unordered_map<std::string, SizeType> index;
  for (SizeType i = 0; i < target.Size(); ++i) {
    const Value* k = JsonReader::member(&target[i], key);
    if (k != nullptr && k->IsString()) index.emplace(std::string(text(*k)), i);
  }
  for (SizeType i = 0; i < patch.Size() && ok(); ++i) {
    const JsonPath item{&path, {}, i};
    if (reader_.object(&patch[i], item) == nullptr) continue;
    const JsonPath key_path{&item, key};
    const Value* k = JsonReader::member(&patch[i], key);
    if (k == nullptr) return reader_.fail(key_path, "missing (the list is merged by it)");
    const auto [it, added] = index.emplace(reader_.string(k, key_path), target.Size());
    if (!ok()) return;
    if (added) {
      target.PushBack(copy(patch[i], item), alloc_);
    } else if (replace_items) {
      target[it->second] = copy(patch[i], item);
    } else {
      merge(target[it->second], patch[i], {}, item);
    }
  }
}

// patch_pod: one override onto the pod template of `job`: labels and annotations of
// `metadata`, and the fields of `spec` its generation allows (containers' too).
void Resolver::patch_pod(std::size_t job, const Value* metadata, const Value* spec, const JsonPath& path,
                         Fields pod_fields, Fields container_fields, const std::string& source) {
  std::string parts;
  const auto add = [&](std::string_view part) { parts += (parts.empty() ? "" : ", ") + std::string(part); };
  if (metadata != nullptr) {
    Value* target = at(job, {"template", "spec", "template", "metadata"});
    for (std::string_view field : {"labels", "annotations"}) {
      const Value* v = JsonReader::member(metadata, field);
      if (v == nullptr || target == nullptr) continue;
      merge(slot(*target, field), *v, field, JsonPath{&path, field});
      add(field == "labels" ? "pod labels" : "pod annotations");
    }
  }
  Value* target = spec != nullptr ? at(job, {"template", "spec", "template", "spec"}) : nullptr;
  for (std::string_view field : pod_fields) {
    const Value* v = JsonReader::member(spec, field);
    const JsonPath field_path{&path, field};
    if (v == nullptr || target == nullptr || !ok()) continue;
    if (field != "containers" && field != "initContainers") {
      merge(slot(*target, field), *v, field, field_path);
      if (field != "volumes") add(field);
      for (SizeType i = 0; field == "volumes" && v->IsArray() && i < v->Size(); ++i) {
        add("volume " + JsonReader::string_member(&(*v)[i], "name"));
      }
      continue;
    }
    // A container override may set only a few fields (ContainerOverride, ContainerPatch).
    Value allowed(rapidjson::kArrayType);
    reader_.each(v, field_path, [&](const Value& c, const JsonPath& p) {
      if (reader_.object(&c, p) == nullptr) return;
      Value kept(rapidjson::kObjectType);
      std::string set;
      for (std::string_view f : container_fields) {
        const Value* fv = JsonReader::member(&c, f);
        if (fv == nullptr) continue;
        kept.AddMember(Value(f.data(), static_cast<SizeType>(f.size()), alloc_), copy(*fv, JsonPath{&p, f}), alloc_);
        if (f != "name") set += (set.empty() ? "" : ", ") + std::string(f);
      }
      allowed.PushBack(kept, alloc_);
      add("container " + JsonReader::string_member(&c, "name") + (set.empty() ? "" : ": " + set));
    });
    if (ok()) merge_list(slot(*target, field), allowed, "name", false, field_path);
  }
  if (ok() && !parts.empty()) note("replicatedJob " + job_names_[job] + ": " + parts + " from " + source);
}

// apply_targeted_overrides: podSpecOverrides (v2.0.0) or podTemplateOverrides (v2.1.0),
// in order, each onto every job its targetJobs names (pkg/runtime/core/trainingruntime.go,
// mergePodSpecOverrides / mergePodTemplateOverrides at those tags).
void Resolver::apply_targeted_overrides(std::string_view field, bool template_shape, Fields pod_fields) {
  const JsonPath list_path{&spec_path_, field};
  reader_.each(JsonReader::member(spec_, field), list_path, [&](const Value& o, const JsonPath& p) {
    if (reader_.object(&o, p) == nullptr) return;
    std::vector<std::string> targets;
    const JsonPath targets_path{&p, "targetJobs"};
    reader_.each(JsonReader::member(&o, "targetJobs"), targets_path, [&](const Value& t, const JsonPath& tp) {
      if (reader_.object(&t, tp) == nullptr) return;
      targets.push_back(reader_.string(JsonReader::member(&t, "name"), JsonPath{&tp, "name"}));
    });
    const JsonPath spec_path{&p, "spec"};
    const JsonPath meta_path{&p, "metadata"};
    const Value* spec = template_shape ? reader_.object(JsonReader::member(&o, "spec"), spec_path) : &o;
    const Value* meta = template_shape ? reader_.object(JsonReader::member(&o, "metadata"), meta_path) : nullptr;
    if (!ok()) return;
    const std::string source = "TrainJob " + p.render();
    std::unordered_set<std::size_t> done;  // a job named twice is patched once, as upstream
    for (const std::string& name : targets) {
      const std::optional<std::size_t> job = job_named(name, source);
      if (!job || !done.insert(*job).second) continue;
      patch_pod(*job, meta, spec, template_shape ? spec_path : p, pod_fields, kContainerOverrideFields, source);
      if (!ok()) return;
    }
  });
}

// apply_runtime_patches: runtimePatches (v2.2.0+), in order, each
// trainingRuntimeSpec.template.spec.replicatedJobs[] entry onto the job of its name
// (trainingruntime.go, mergeRuntimePatches). The JobSet-level template.metadata only
// labels the JobSet, which the output does not model (its metadata is the TrainJob's).
void Resolver::apply_runtime_patches() {
  const JsonPath list_path{&spec_path_, "runtimePatches"};
  reader_.each(JsonReader::member(spec_, "runtimePatches"), list_path, [&](const Value& patch, const JsonPath& p) {
    if (reader_.object(&patch, p) == nullptr) return;
    const JsonPath rs{&p, "trainingRuntimeSpec"};
    const Value* runtime_spec = reader_.object(JsonReader::member(&patch, "trainingRuntimeSpec"), rs);
    const JsonPath tp{&rs, "template"};
    const Value* tmpl = reader_.object(JsonReader::member(runtime_spec, "template"), tp);
    const JsonPath sp{&tp, "spec"};
    const Value* jobset = reader_.object(JsonReader::member(tmpl, "spec"), sp);
    const JsonPath jp{&sp, "replicatedJobs"};
    const std::string source = "TrainJob " + p.render();
    reader_.each(JsonReader::member(jobset, "replicatedJobs"), jp,
                 [&](const Value& job, const JsonPath& q) { apply_job_patch(job, q, source); });
  });
}

void Resolver::apply_job_patch(const Value& patch, const JsonPath& path, const std::string& source) {
  if (reader_.object(&patch, path) == nullptr) return;
  const std::string name = reader_.string(JsonReader::member(&patch, "name"), JsonPath{&path, "name"});
  const JsonPath t{&path, "template"};
  const Value* job_template = reader_.object(JsonReader::member(&patch, "template"), t);
  const JsonPath jm{&t, "metadata"};
  const Value* job_meta = reader_.object(JsonReader::member(job_template, "metadata"), jm);
  const JsonPath js{&t, "spec"};
  const Value* job_spec = reader_.object(JsonReader::member(job_template, "spec"), js);
  const JsonPath pt{&js, "template"};
  const Value* pod_template = reader_.object(JsonReader::member(job_spec, "template"), pt);
  const JsonPath pm{&pt, "metadata"};
  const Value* pod_meta = reader_.object(JsonReader::member(pod_template, "metadata"), pm);
  const JsonPath ps{&pt, "spec"};
  const Value* pod_spec = reader_.object(JsonReader::member(pod_template, "spec"), ps);
  if (!ok() || job_template == nullptr) return;
  const std::optional<std::size_t> job = job_named(name, source);
  if (!job) return;
  // The Job template's labels are read after patching: a patch can set the ancestor label.
  Value* target = job_meta != nullptr ? at(*job, {"template", "metadata"}) : nullptr;
  std::string parts;
  for (std::string_view field : {"labels", "annotations"}) {
    const Value* v = JsonReader::member(job_meta, field);
    if (v == nullptr || target == nullptr) continue;
    merge(slot(*target, field), *v, field, JsonPath{&jm, field});
    parts += (parts.empty() ? "job " : ", job ") + std::string(field);
  }
  if (!parts.empty() && ok()) note("replicatedJob " + name + ": " + parts + " from " + source);
  if (ok()) patch_pod(*job, pod_meta, pod_spec, ps, kPodSpecPatchFields, kContainerPatchFields, source);
}

MlPolicy Resolver::read_ml_policy(const Value& runtime) {
  MlPolicy policy;
  const JsonPath path{&runtime_spec_, "mlPolicy"};
  const Value* ml = reader_.object(JsonReader::member(JsonReader::member(&runtime, "spec"), "mlPolicy"), path);
  if (ml == nullptr) return policy;
  policy.present = true;
  policy.num_nodes = reader_.int64(JsonReader::member(ml, "numNodes"), JsonPath{&path, "numNodes"}).value_or(1);
  const JsonPath mpi_path{&path, "mpi"};
  const Value* mpi = reader_.object(JsonReader::member(ml, "mpi"), mpi_path);
  policy.mpi = mpi != nullptr;
  policy.launcher_as_node =
      reader_.boolean(JsonReader::member(mpi, "runLauncherAsNode"), JsonPath{&mpi_path, "runLauncherAsNode"});
  return policy;
}

// apply_node_counts: every job's parallelism and completions become its pod count
// (jobset plugin, SyncParallelCount). The count is mlPolicy.numNodes for the trainer step
// when the runtime has an mlPolicy, else the template's parallelism (core/trainingruntime.go,
// newRuntimeInfo); spec.trainer.numNodes then replaces it: for MPI on the job "node" (one
// fewer when the launcher is a node too, plugins/mpi), else on the first trainer-step job
// (plugins/torch, plainml, jax, xgboost).
void Resolver::apply_node_counts(const MlPolicy& policy, const Value* trainer, const JsonPath& trainer_path) {
  const JsonPath n_path{&trainer_path, "numNodes"};
  const std::optional<std::int64_t> num_nodes = reader_.int64(JsonReader::member(trainer, "numNodes"), n_path);
  if (num_nodes && (*num_nodes < 0 || *num_nodes > std::numeric_limits<std::int32_t>::max())) {
    return reader_.fail(n_path, "out of range");
  }
  std::optional<std::size_t> numbered;
  for (std::size_t i = 0; i < job_names_.size() && ok(); ++i) {
    Value* job_spec = at(i, {"template", "spec"});
    if (job_spec == nullptr) return;
    const JsonPath p_path{&jobs_path_, {}, i};
    std::int64_t count =
        reader_.int64(JsonReader::member(job_spec, "parallelism"), JsonPath{&p_path, "template.spec.parallelism"})
            .value_or(1);
    const bool trainer_step = ancestor(i) == kTrainerStep;
    if (trainer_step && policy.present) count = policy.num_nodes;
    if (num_nodes && !numbered && (policy.mpi ? job_names_[i] == kNode : trainer_step)) {
      count = policy.mpi && policy.launcher_as_node ? std::max<std::int64_t>(*num_nodes - 1, 1) : *num_nodes;
      numbered = i;
      note("replicatedJob " + job_names_[i] + ": parallelism, completions " + std::to_string(count) +
           " from TrainJob spec.trainer.numNodes");
    } else {
      count = std::max<std::int64_t>(count, 1);  // runtime.WithPodSet: max(count, 1)
    }
    slot(*job_spec, "parallelism").SetInt64(count);
    slot(*job_spec, "completions").SetInt64(count);
  }
}

// apply_trainer: spec.trainer onto the container "node" (jobset plugin builder.go, Trainer;
// trainingruntime.go, newRuntimeInfo). Image, command and args go to trainer-step jobs and
// set them to one replica; env is upserted by name and resourcesPerNode merged per key
// (requests and limits by resource, claims by name) on the trainer step and, for MPI
// with runLauncherAsNode, on the job "node". v2.3.0 merges resourcesPerNode only when the
// runtime has an mlPolicy; v2.0-v2.2 replaced the whole resources block.
void Resolver::apply_trainer(const MlPolicy& policy) {
  const JsonPath path{&spec_path_, "trainer"};
  const Value* trainer = reader_.object(JsonReader::member(spec_, "trainer"), path);
  const JsonPath image_path{&path, "image"}, command_path{&path, "command"}, args_path{&path, "args"};
  const JsonPath env_path{&path, "env"}, resources_path{&path, "resourcesPerNode"};
  const Value* image = JsonReader::member(trainer, "image");
  const Value* command = JsonReader::member(trainer, "command");
  const Value* args = JsonReader::member(trainer, "args");
  const Value* env = JsonReader::member(trainer, "env");
  const Value* resources = reader_.object(JsonReader::member(trainer, "resourcesPerNode"), resources_path);
  reader_.string(image, image_path);
  reader_.string_list(command, command_path);
  reader_.string_list(args, args_path);
  apply_node_counts(policy, trainer, path);
  for (std::size_t i = 0; i < job_names_.size() && ok(); ++i) {
    const bool trainer_step = ancestor(i) == kTrainerStep;
    if (trainer_step) slot(jobs()[static_cast<SizeType>(i)], "replicas").SetInt(1);
    if (trainer == nullptr || !(trainer_step || (policy.launcher_as_node && job_names_[i] == kNode))) continue;
    Value* node = container(i, kNode);
    if (node == nullptr) continue;
    std::string set;
    const auto put = [&](const Value* v, std::string_view field, const JsonPath& p) {
      if (v == nullptr || !trainer_step) return;
      slot(*node, field) = copy(*v, p);
      set += (set.empty() ? "" : ", ") + std::string(field);
    };
    put(image, "image", image_path);
    put(command, "command", command_path);
    put(args, "args", args_path);
    if (env != nullptr) {
      merge_list(slot(*node, "env"), *env, "name", true, env_path);
      set += set.empty() ? "env" : ", env";
    }
    if (resources != nullptr && policy.present) {
      merge(slot(*node, "resources"), *resources, "resources", resources_path);
      set += set.empty() ? "resources" : ", resources";
    } else if (resources != nullptr) {
      note("replicatedJob " + job_names_[i] + ": resourcesPerNode not applied (runtime " + runtime_name_ +
           " has no mlPolicy; Trainer v2.3.0 applies it only then)");
    }
    if (ok() && !set.empty())
      note("replicatedJob " + job_names_[i] + ", container node: " + set + " from TrainJob spec.trainer");
  }
}

// apply_initializer: spec.initializer.dataset or .model onto the container of the same
// name in the jobs of that step (builder.go, Initializer): STORAGE_URI and env upserted by
// name, the secret added as envFrom. Those jobs run one replica whether or not it is set.
void Resolver::apply_initializer(std::string_view field, std::string_view step) {
  const JsonPath init_path{&spec_path_, "initializer"};
  const JsonPath path{&init_path, field};
  const Value* init = reader_.object(JsonReader::member(spec_, "initializer"), init_path);
  const Value* config = reader_.object(JsonReader::member(init, field), path);
  const JsonPath uri_path{&path, "storageUri"}, env_path{&path, "env"}, secret_path{&path, "secretRef"};
  const std::string uri = reader_.string(JsonReader::member(config, "storageUri"), uri_path);
  const Value* env = JsonReader::member(config, "env");
  const Value* secret = reader_.object(JsonReader::member(config, "secretRef"), secret_path);
  const std::string secret_name = reader_.string(JsonReader::member(secret, "name"), JsonPath{&secret_path, "name"});
  for (std::size_t i = 0; i < job_names_.size() && ok(); ++i) {
    if (ancestor(i) != step) continue;
    slot(jobs()[static_cast<SizeType>(i)], "replicas").SetInt(1);
    Value* c = config != nullptr ? container(i, step) : nullptr;
    if (c == nullptr) continue;
    std::string set;
    if (JsonReader::member(config, "storageUri") != nullptr) {
      Value var(rapidjson::kArrayType);
      Value item(rapidjson::kObjectType);
      item.AddMember("name", "STORAGE_URI", alloc_);
      item.AddMember("value", Value(uri.c_str(), static_cast<SizeType>(uri.size()), alloc_), alloc_);
      var.PushBack(item, alloc_);
      merge_list(slot(*c, "env"), var, "name", true, uri_path);
      set = "env STORAGE_URI";
    }
    if (env != nullptr) {
      merge_list(slot(*c, "env"), *env, "name", true, env_path);
      set += set.empty() ? "env" : ", env";
    }
    if (secret != nullptr) {
      Value& env_from = slot(*c, "envFrom");
      if (!env_from.IsArray()) env_from.SetArray();
      Value ref_value(rapidjson::kObjectType);
      ref_value.AddMember("name", Value(secret_name.c_str(), static_cast<SizeType>(secret_name.size()), alloc_),
                          alloc_);
      Value source(rapidjson::kObjectType);
      source.AddMember("secretRef", ref_value, alloc_);
      env_from.PushBack(source, alloc_);
      set += (set.empty() ? "envFrom secret " : ", envFrom secret ") + secret_name;
    }
    if (ok() && !set.empty()) {
      note("replicatedJob " + job_names_[i] + ", container " + std::string(step) + ": " + set +
           " from TrainJob spec.initializer." + std::string(field));
    }
  }
}

void Resolver::run(const Value& runtime) {
  if (!trainjob_.IsObject()) {
    out_.error = "TrainJob: expected an object";
    out_.object.SetObject();
    return;
  }
  const RuntimeRef named = runtime_ref(trainjob_);
  const std::string kind = JsonReader::string_member(&runtime, "kind");
  const std::string name = JsonReader::string_member(JsonReader::member(&runtime, "metadata"), "name");
  runtime_name_ = (kind.empty() ? named.kind : kind) + "/" + (name.empty() ? named.name : name);
  if (stand_in_) {
    runtime_name_ = named.kind + "/" + named.name;
    note((named.name.empty() ? std::string("no runtime named (spec.runtimeRef.name)")
                             : "runtime " + runtime_name_ + " not read") +
         ": one replicatedJob node with one container node stands in for it");
  }
  check_depth(trainjob_, root_, 0);
  check_depth(runtime, runtime_, 0);
  if (ok()) start(runtime);
  if (ok() && !stand_in_) describe_runtime();
  // A TrainJob uses one generation; the API server of each version prunes the others.
  if (ok()) apply_targeted_overrides("podSpecOverrides", false, kPodSpecOverrideFields);
  if (ok()) apply_targeted_overrides("podTemplateOverrides", true, kPodTemplateOverrideFields);
  if (ok()) apply_runtime_patches();
  const MlPolicy policy = ok() ? read_ml_policy(runtime) : MlPolicy{};
  if (ok()) apply_trainer(policy);
  if (ok()) apply_initializer("dataset", "dataset-initializer");
  if (ok()) apply_initializer("model", "model-initializer");
  const JsonPath suspend_path{&spec_path_, "suspend"};
  const Value* suspend = JsonReader::member(spec_, "suspend");
  if (ok() && suspend != nullptr) {
    slot(out_.object["spec"], "suspend").SetBool(reader_.boolean(suspend, suspend_path));
  }
  if (dropped_ > 0) out_.provenance.push_back("... and " + std::to_string(dropped_) + " more");
  if (!ok()) {
    out_.error = reader_.error();
    out_.object.SetObject();
  }
}

}  // namespace

RuntimeRef runtime_ref(const Value& trainjob) {
  const Value* ref_value = JsonReader::member(JsonReader::member(&trainjob, "spec"), "runtimeRef");
  RuntimeRef out{JsonReader::string_member(ref_value, "apiGroup"), JsonReader::string_member(ref_value, "kind"),
                 JsonReader::string_member(ref_value, "name")};
  // The API's defaults (RuntimeRef in trainjob_types.go: +kubebuilder:default).
  if (out.api_group.empty()) out.api_group = kTrainerApiGroup;
  if (out.kind.empty()) out.kind = kClusterTrainingRuntimeKind;
  return out;
}

TrainJobResolution resolve_trainjob(const Value& trainjob, const Value& runtime) {
  TrainJobResolution out;
  Resolver(out, trainjob, false).run(runtime);
  return out;
}

TrainJobResolution resolve_trainjob_without_runtime(const Value& trainjob) {
  rapidjson::Document stand_in;
  stand_in.Parse(kStandInRuntime.data(), kStandInRuntime.size());
  TrainJobResolution out;
  Resolver(out, trainjob, true).run(stand_in);
  return out;
}

}  // namespace kubegap

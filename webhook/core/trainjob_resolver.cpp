#include "webhook/core/trainjob_resolver.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "webhook/core/json_reader.h"
#include "webhook/core/template_path.h"

// Files cited are kubeflow/trainer's at v2.3.0 unless a tag is named (docs/trainjob-resolution.md).
namespace kubegap {
namespace {

using rapidjson::SizeType;
using rapidjson::Value;
using Allocator = rapidjson::Document::AllocatorType;
using Fields = std::span<const std::string_view>;

// The label that marks which step a replicated job runs (pkg/constants/constants.go).
constexpr std::string_view kAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
constexpr std::string_view kTrainerStep = "trainer";
// The trainer's container, and the MPI worker job (pkg/constants: Node).
constexpr std::string_view kNode = "node";
constexpr int kMaxDepth = 100;
// Real TrainJobs copy thousands of values; only deliberately huge patches come near this.
constexpr std::size_t kMaxWork = std::size_t{1} << 20;
constexpr std::size_t kMaxProvenance = 64;

// The pod spec fields each override generation may set (pkg/apis/trainer/v1alpha1/
// trainjob_types.go): PodSpecOverride (v2.0.0), PodTemplateSpecOverride (v2.1.0), PodSpecPatch
// (v2.2.0; terminationGracePeriodSeconds from v2.3.0). The API server prunes the rest.
// clang-format off
constexpr std::string_view kPodSpecOverrideFields[] = {
    "serviceAccountName", "nodeSelector", "tolerations", "volumes", "initContainers", "containers", "schedulingGates"};
constexpr std::string_view kPodTemplateOverrideFields[] = {
    "serviceAccountName", "nodeSelector", "affinity", "tolerations", "volumes", "initContainers", "containers",
    "schedulingGates", "imagePullSecrets"};
constexpr std::string_view kPodSpecPatchFields[] = {
    "serviceAccountName", "volumes", "initContainers", "containers", "imagePullSecrets", "securityContext",
    "nodeSelector", "affinity", "tolerations", "schedulingGates", "terminationGracePeriodSeconds"};
// clang-format on
// ContainerOverride (v2.0, v2.1) and ContainerPatch (v2.2+).
constexpr std::string_view kContainerOverrideFields[] = {"name", "env", "volumeMounts"};
constexpr std::string_view kContainerPatchFields[] = {"name", "env", "volumeMounts", "securityContext"};

// The runtime that stands in when the real one cannot be read: the shape of the shipped
// torch-distributed ClusterTrainingRuntime (manifests/base/runtimes), without its image.
constexpr std::string_view kStandInRuntime =
    R"({"kind":"ClusterTrainingRuntime","spec":{"mlPolicy":{"numNodes":1},"template":{"spec":{"replicatedJobs":[)"
    R"({"name":"node","template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},)"
    R"("spec":{"template":{"spec":{"containers":[{"name":"node"}]}}}}}]}}}})";

std::string_view text(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

// merge_key: the patchMergeKey of a list field a TrainJob can reach (k8s.io/api core/v1
// types.go; jobset v0.12.0 api/jobset/v1alpha2). Other lists (tolerations, command,
// nodeSelectorTerms, ...) have none: a patch replaces them whole.
std::string_view merge_key(std::string_view field) {
  if (field == "volumeMounts") return "mountPath";
  for (std::string_view keyed : {"replicatedJobs", "containers", "initContainers", "volumes", "env", "imagePullSecrets",
                                 "schedulingGates", "claims", "resourceClaims"}) {
    if (field == keyed) return "name";
  }
  return {};
}

// deep_copy: `v` with every string copied, counting the values copied. RapidJSON 1.1's own
// copy leaves the strings of an in-situ parse (the webhook's) in the caller's buffer.
Value deep_copy(const Value& v, Allocator& alloc, std::size_t& count) {
  ++count;
  if (v.IsString()) return Value(v.GetString(), v.GetStringLength(), alloc);
  if (v.IsObject()) {
    Value out(rapidjson::kObjectType);
    for (const auto& m : v.GetObject()) {
      out.AddMember(Value(m.name.GetString(), m.name.GetStringLength(), alloc), deep_copy(m.value, alloc, count),
                    alloc);
    }
    return out;
  }
  if (!v.IsArray()) return Value(v, alloc);  // a number, boolean or null
  Value out(rapidjson::kArrayType);
  out.Reserve(v.Size(), alloc);
  for (const auto& e : v.GetArray()) out.PushBack(deep_copy(e, alloc, count), alloc);
  return out;
}

// Parts: the comma-separated middle of a provenance line.
struct Parts {
  std::string text;
  void add(std::string_view part) { (text += text.empty() ? "" : ", ") += part; }
};

// Resolver: one resolution. Errors go through reader_ (the first one, with its path);
// every step is skipped once there is one.
class Resolver {
 public:
  // `runtime_name` ("ClusterTrainingRuntime/torch-distributed") names the runtime in provenance.
  Resolver(TrainJobResolution& out, const Value& trainjob, std::string runtime_name, bool stand_in)
      : out_(out),
        alloc_(out.object.GetAllocator()),
        trainjob_(trainjob),
        stand_in_(stand_in),
        runtime_name_(std::move(runtime_name)) {}

  void run(const Value& runtime) {
    if (!trainjob_.IsObject()) reader_.fail(JsonPath{nullptr, "TrainJob"}, "expected an object");
    check_depth(trainjob_, root_, 0);
    check_depth(runtime, runtime_, 0);
    if (ok()) start(runtime);
    if (ok() && !stand_in_) describe_runtime();
    // A TrainJob uses one generation; the API server of each version prunes the others.
    if (ok()) apply_targeted_overrides("podSpecOverrides", false, kPodSpecOverrideFields);
    if (ok()) apply_targeted_overrides("podTemplateOverrides", true, kPodTemplateOverrideFields);
    if (ok()) apply_runtime_patches();
    if (ok()) apply_trainer();
    if (ok()) apply_initializer("dataset", "dataset-initializer");
    if (ok()) apply_initializer("model", "model-initializer");
    if (dropped_ > 0) out_.provenance.push_back("... and " + std::to_string(dropped_) + " more");
    if (!ok()) {
      out_.error = reader_.error();
      out_.object.SetObject();
    }
  }

 private:
  bool ok() const { return reader_.ok(); }
  Value& jobs() { return out_.object["spec"]["replicatedJobs"]; }
  Value& job(std::size_t i) { return jobs()[static_cast<SizeType>(i)]; }
  std::string job_name(std::size_t i) { return JsonReader::string_member(&job(i), "name"); }
  void note(std::string line) {
    if (out_.provenance.size() < kMaxProvenance) return out_.provenance.push_back(std::move(line));
    ++dropped_;
  }
  // note: "<head>: <parts> from <source>", when there are parts.
  void note(const std::string& head, const Parts& parts, const std::string& source) {
    if (ok() && !parts.text.empty()) note(head + ": " + parts.text + " from " + source);
  }

  // check_depth: copying and merging recurse, so nesting is bounded before either runs.
  void check_depth(const Value& v, const JsonPath& path, int depth) {
    if (!ok()) return;
    if (depth > kMaxDepth) return reader_.fail(path, "nested more than 100 levels deep");
    if (v.IsObject()) {
      for (const auto& m : v.GetObject()) check_depth(m.value, JsonPath{&path, text(m.name)}, depth + 1);
    } else if (v.IsArray()) {
      for (SizeType i = 0; i < v.Size(); ++i) check_depth(v[i], JsonPath{&path, {}, i}, depth + 1);
    }
  }
  // charge: counts work, so overrides aimed at every job of a large runtime, many times over,
  // end in an error instead of a long copy.
  bool charge(std::size_t n, const JsonPath& path) {
    work_ += n;
    if (work_ > kMaxWork) reader_.fail(path, "too large to resolve (more than 1048576 values copied)");
    return ok();
  }
  Value copy(const Value& v, const JsonPath& path) {
    std::size_t count = 0;
    Value out = deep_copy(v, alloc_, count);
    return charge(count, path) ? std::move(out) : Value();
  }

  // slot: the member `key` of `object`, added as null when absent.
  Value& slot(Value& object, std::string_view key) {
    const auto it = object.FindMember(rapidjson::StringRef(key.data(), static_cast<SizeType>(key.size())));
    if (it != object.MemberEnd()) return it->value;
    object.AddMember(Value(key.data(), static_cast<SizeType>(key.size()), alloc_), Value(), alloc_);
    return (object.MemberEnd() - 1)->value;
  }
  // object_at: the object at `keys` under `from`: in an input, nullptr when absent; in the
  // output (V not const), created when absent. A level that is not an object is an error.
  template <typename V>
  V* object_at(V* from, const JsonPath& path, std::initializer_list<std::string_view> keys) {
    std::string walked;
    for (std::string_view key : keys) {
      (walked += walked.empty() ? "" : ".") += key;
      if constexpr (std::is_const_v<V>) {
        from = JsonReader::member(from, key);
      } else if (from = &slot(*from, key); from->IsNull()) {
        from->SetObject();
      }
      if (from != nullptr && !from->IsObject()) reader_.fail(JsonPath{&path, walked}, "expected an object");
      if (from == nullptr || !ok()) return nullptr;
    }
    return from;
  }
  Value* at(std::size_t i, std::initializer_list<std::string_view> keys) {
    return object_at(&job(i), JsonPath{&jobs_path_, {}, i}, keys);
  }
  // container: the container `name` of job `i`'s pod template, or nullptr (also when the
  // runtime's containers are not a list: the JobSet evaluation reports that).
  Value* container(std::size_t i, std::string_view name) {
    Value* spec = at(i, {"template", "spec", "template", "spec"});
    Value* list = spec != nullptr ? &slot(*spec, "containers") : nullptr;
    for (SizeType c = 0; list != nullptr && list->IsArray() && c < list->Size(); ++c) {
      if (JsonReader::string_member(&(*list)[c], "name") == name) return &(*list)[c];
    }
    return nullptr;
  }
  std::string ancestor(std::size_t i) {
    const Value* labels = &job(i);
    for (const char* key : {"template", "metadata", "labels"}) labels = JsonReader::member(labels, key);
    return JsonReader::string_member(labels, kAncestorLabel);
  }
  // job_named: the index of job `name`. A name the runtime lacks is skipped, as Trainer's
  // webhook rejects it (plugins/jobset/jobset.go, Validate); over the stand-in it is created.
  std::optional<std::size_t> job_named(const std::string& name, const std::string& source) {
    if (const auto it = job_index_.find(name); it != job_index_.end()) return it->second;
    if (!stand_in_) {
      note("replicatedJob " + name + " named in " + source + " is not in runtime " + runtime_name_ + ": not applied");
      return std::nullopt;
    }
    Value created(rapidjson::kObjectType);
    jobs().PushBack(created.AddMember("name", Value(name, alloc_), alloc_), alloc_);
    job_index_.emplace(name, jobs().Size() - 1);
    return jobs().Size() - 1;
  }

  // start: the output's frame, the runtime's JobSet spec and jobs, its mlPolicy.
  void start(const Value& runtime) {
    const JsonPath meta_path{&root_, "metadata"};
    const Value* metadata = reader_.object(JsonReader::member(&trainjob_, "metadata"), meta_path);
    spec_ = reader_.object(JsonReader::member(&trainjob_, "spec"), spec_path_);
    const Value* jobset_spec = object_at(&runtime, runtime_, {"spec", "template", "spec"});
    const JsonPath ml_path{&runtime_spec_, "mlPolicy"};
    const Value* ml = object_at(&runtime, runtime_, {"spec", "mlPolicy"});
    const Value* mpi = object_at(ml, ml_path, {"mpi"});
    ml_policy_ = ml != nullptr;
    ml_nodes_ = reader_.int64(JsonReader::member(ml, "numNodes"), JsonPath{&ml_path, "numNodes"}).value_or(1);
    mpi_ = mpi != nullptr;
    launcher_as_node_ =
        reader_.boolean(JsonReader::member(mpi, "runLauncherAsNode"), JsonPath{&ml_path, "mpi.runLauncherAsNode"});
    if (!ok()) return;
    Value& out = out_.object.SetObject();
    out.AddMember("apiVersion", "jobset.x-k8s.io/v1alpha2", alloc_);
    out.AddMember("kind", "JobSet", alloc_);
    out.AddMember("metadata", metadata != nullptr ? copy(*metadata, meta_path) : Value(rapidjson::kObjectType), alloc_);
    out.AddMember("spec", jobset_spec != nullptr ? copy(*jobset_spec, jobset_spec_) : Value(rapidjson::kObjectType),
                  alloc_);
    if (const Value* suspend = JsonReader::member(spec_, "suspend"); suspend != nullptr && ok()) {
      slot(out["spec"], "suspend").SetBool(reader_.boolean(suspend, JsonPath{&spec_path_, "suspend"}));
    }
    if (!ok()) return;
    Value& list = slot(out["spec"], "replicatedJobs");
    if (list.IsNull()) list.SetArray();
    if (!list.IsArray()) return reader_.fail(jobs_path_, "expected an array");
    for (SizeType i = 0; i < list.Size() && ok(); ++i) {
      const JsonPath item{&jobs_path_, {}, i};
      if (reader_.object(&list[i], item) == nullptr) list[i].SetObject();
      job_index_.emplace(reader_.string(JsonReader::member(&list[i], "name"), JsonPath{&item, "name"}), i);
    }
  }

  // describe: the fields of pod spec `spec` among `fields`; volumes and containers by name.
  static void describe(const Value* spec, Fields fields, Parts& parts) {
    for (std::string_view field : fields) {
      const Value* v = JsonReader::member(spec, field);
      const bool listed = field == "volumes" || field == "containers" || field == "initContainers";
      if (v != nullptr && !listed) parts.add(field);
      for (SizeType k = 0; v != nullptr && listed && v->IsArray() && k < v->Size(); ++k) {
        parts.add((field == "volumes" ? "volume " : "container ") + JsonReader::string_member(&(*v)[k], "name"));
      }
    }
  }
  // describe_runtime: what each job has from the runtime, and its claim templates. A separate
  // reader: shape errors there are the JobSet evaluation's to report.
  void describe_runtime() {
    JsonReader quiet;
    const std::string source = "runtime " + runtime_name_;
    constexpr std::string_view kDescribed[] = {"volumes", "nodeSelector", "affinity", "tolerations",
                                               "serviceAccountName"};
    walk_template_path(quiet, out_.object, root_, "spec.replicatedJobs[name].template.spec.template.spec",
                       [&](const Value& spec, const JsonPath&, const std::string& job) {
                         Parts parts;
                         describe(&spec, kDescribed, parts);
                         note("replicatedJob " + job, parts, source);
                       });
    walk_template_path(
        quiet, out_.object, root_, "spec.volumeClaimPolicies[].templates[]",
        [&](const Value& claim, const JsonPath&, const std::string&) {
          const Value* meta = JsonReader::member(&claim, "metadata");
          note("claim template " + JsonReader::string_member(meta, "name") + " (volumeClaimPolicies) from " + source);
        });
  }

  // merge: Kubernetes' strategic merge patch (apimachinery pkg/util/strategicpatch), which
  // Trainer applies for every override generation: objects merge by member, lists with a
  // merge key by item (merge_list), the rest is replaced. Nulls are skipped: Trainer's
  // patches are typed structs, which omit empty fields, so they never delete.
  void merge(Value& target, const Value& patch, std::string_view field, const JsonPath& path) {
    if (!charge(1, path)) return;
    if (patch.IsObject()) {
      if (!target.IsObject()) target.SetObject();
      for (const auto& m : patch.GetObject()) {
        const std::string_view key = text(m.name);
        if (!m.value.IsNull()) merge(slot(target, key), m.value, key, JsonPath{&path, key});
        if (!ok()) return;
      }
    } else if (patch.IsArray() && !merge_key(field).empty()) {
      merge_list(target, patch, merge_key(field), false, path);
    } else {
      target = copy(patch, path);
    }
  }
  // merge_list: `patch` onto the list `target` by the string member `key`: a matching item
  // is merged (strategic merge) or, with replace_items, replaced (Trainer's apply.Upsert*,
  // pkg/apply/apply.go); others are appended. Indexed: n + m, not n * m.
  void merge_list(Value& target, const Value& patch, std::string_view key, bool replace_items, const JsonPath& path) {
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
      const JsonPath key_path{&item, key};
      if (reader_.object(&patch[i], item) == nullptr) continue;
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

  // merge_labels: the labels and annotations of `patch` (ObjectMeta; Trainer applies only
  // these two) onto the object at `keys` of job `i`.
  void merge_labels(std::size_t i, std::initializer_list<std::string_view> keys, const Value* patch,
                    const JsonPath& path, std::string_view what, Parts& parts) {
    Value* target = patch != nullptr ? at(i, keys) : nullptr;
    for (std::string_view field : {"labels", "annotations"}) {
      const Value* v = JsonReader::member(patch, field);
      if (v == nullptr || target == nullptr) continue;
      merge(slot(*target, field), *v, field, JsonPath{&path, field});
      parts.add(std::string(what) + " " + std::string(field));
    }
  }
  // patch_pod: one override onto job `i`'s pod template: `metadata`'s labels and annotations,
  // the fields of `spec` its generation allows. `spec` is at `path`.<spec_key>.
  void patch_pod(std::size_t i, const Value* metadata, const Value* spec, const JsonPath& path,
                 std::string_view spec_key, Fields pod_fields, Fields container_fields, const std::string& source) {
    Parts parts;
    merge_labels(i, {"template", "spec", "template", "metadata"}, metadata, JsonPath{&path, "metadata"}, "pod", parts);
    Value* target = spec != nullptr && ok() ? at(i, {"template", "spec", "template", "spec"}) : nullptr;
    const JsonPath spec_path{&path, spec_key};  // an empty key renders as `path` itself
    for (std::string_view field : pod_fields) {
      const Value* v = JsonReader::member(spec, field);
      const JsonPath field_path{&spec_path, field};
      if (v == nullptr || target == nullptr || !ok()) continue;
      if (field != "containers" && field != "initContainers") {
        merge(slot(*target, field), *v, field, field_path);
        continue;
      }
      // A container override may set only a few fields (ContainerOverride, ContainerPatch).
      Value allowed(rapidjson::kArrayType);
      reader_.each(v, field_path, [&](const Value& c, const JsonPath& p) {
        if (reader_.object(&c, p) == nullptr) return;
        Value kept(rapidjson::kObjectType);
        for (std::string_view f : container_fields) {
          const Value* fv = JsonReader::member(&c, f);
          if (fv != nullptr) kept.AddMember(Value(std::string(f), alloc_), copy(*fv, JsonPath{&p, f}), alloc_);
        }
        allowed.PushBack(kept, alloc_);
      });
      if (ok()) merge_list(slot(*target, field), allowed, "name", false, field_path);
    }
    if (ok()) describe(spec, pod_fields, parts);
    note("replicatedJob " + job_name(i), parts, source);
  }

  // apply_targeted_overrides: podSpecOverrides (v2.0.0) or podTemplateOverrides (v2.1.0),
  // in order, each onto every job its targetJobs names (pkg/runtime/core/trainingruntime.go,
  // mergePodSpecOverrides / mergePodTemplateOverrides at those tags).
  void apply_targeted_overrides(std::string_view field, bool template_shape, Fields pod_fields) {
    const JsonPath list_path{&spec_path_, field};
    reader_.each(JsonReader::member(spec_, field), list_path, [&](const Value& o, const JsonPath& p) {
      if (reader_.object(&o, p) == nullptr) return;
      std::vector<std::string> targets;
      reader_.each(
          JsonReader::member(&o, "targetJobs"), JsonPath{&p, "targetJobs"}, [&](const Value& t, const JsonPath& q) {
            targets.push_back(reader_.string(JsonReader::member(reader_.object(&t, q), "name"), JsonPath{&q, "name"}));
          });
      const Value* spec = template_shape ? object_at(&o, p, {"spec"}) : &o;
      const Value* meta = template_shape ? object_at(&o, p, {"metadata"}) : nullptr;
      const std::string source = "TrainJob " + p.render();
      std::unordered_set<std::size_t> done;  // a job named twice is patched once, as upstream
      for (std::size_t t = 0; t < targets.size() && ok(); ++t) {
        const std::optional<std::size_t> i = job_named(targets[t], source);
        if (!i || !done.insert(*i).second) continue;
        patch_pod(*i, meta, spec, p, template_shape ? "spec" : "", pod_fields, kContainerOverrideFields, source);
      }
    });
  }

  // apply_runtime_patches: runtimePatches (v2.2.0+) in order, each replicatedJobs[] entry
  // onto the job of its name (trainingruntime.go, mergeRuntimePatches). The JobSet-level
  // template.metadata only labels the JobSet, whose metadata here is the TrainJob's.
  void apply_runtime_patches() {
    const JsonPath list_path{&spec_path_, "runtimePatches"};
    reader_.each(JsonReader::member(spec_, "runtimePatches"), list_path, [&](const Value& patch, const JsonPath& p) {
      const Value* jobset = object_at(reader_.object(&patch, p), p, {"trainingRuntimeSpec", "template", "spec"});
      const std::string source = "TrainJob " + p.render();
      const JsonPath jobs_path{&p, "trainingRuntimeSpec.template.spec.replicatedJobs"};
      reader_.each(JsonReader::member(jobset, "replicatedJobs"), jobs_path, [&](const Value& job, const JsonPath& q) {
        if (reader_.object(&job, q) == nullptr) return;
        const std::string name = reader_.string(JsonReader::member(&job, "name"), JsonPath{&q, "name"});
        const Value* job_meta = object_at(&job, q, {"template", "metadata"});
        const Value* pod_meta = object_at(&job, q, {"template", "spec", "template", "metadata"});
        const Value* pod_spec = object_at(&job, q, {"template", "spec", "template", "spec"});
        const std::optional<std::size_t> i = ok() ? job_named(name, source) : std::nullopt;
        if (!i) return;
        // Job template labels are patched before the ancestor label is read, as upstream.
        Parts parts;
        merge_labels(*i, {"template", "metadata"}, job_meta, JsonPath{&q, "template.metadata"}, "job", parts);
        note("replicatedJob " + name, parts, source);
        const JsonPath pod_path{&q, "template.spec.template"};
        patch_pod(*i, pod_meta, pod_spec, pod_path, "spec", kPodSpecPatchFields, kContainerPatchFields, source);
      });
    });
  }

  // apply_trainer: spec.trainer onto the jobs (jobset plugin builder.go, Trainer;
  // trainingruntime.go, newRuntimeInfo; plugins torch, plainml, jax, xgboost, mpi).
  // Every job's parallelism and completions become its pod count (jobset plugin,
  // SyncParallelCount): mlPolicy.numNodes for the trainer step when the runtime has an
  // mlPolicy, else the template's parallelism, at least 1 (runtime.go, WithPodSet). numNodes
  // replaces it on the job "node" for MPI (one fewer with runLauncherAsNode), else on the
  // first trainer-step job. Image, command and args replace the trainer step's, which runs
  // one replica; env is upserted by name and resourcesPerNode merged per key (claims by
  // name) on the trainer step and, for MPI with runLauncherAsNode, the job "node". v2.3.0
  // merges resourcesPerNode only when the runtime has an mlPolicy; v2.0-v2.2 replaced the
  // whole resources block.
  void apply_trainer() {
    const JsonPath path{&spec_path_, "trainer"};
    const Value* trainer = reader_.object(JsonReader::member(spec_, "trainer"), path);
    const JsonPath env_path{&path, "env"}, resources_path{&path, "resourcesPerNode"}, n_path{&path, "numNodes"};
    const Value* env = JsonReader::member(trainer, "env");
    const Value* resources = reader_.object(JsonReader::member(trainer, "resourcesPerNode"), resources_path);
    const std::optional<std::int64_t> num_nodes = reader_.int64(JsonReader::member(trainer, "numNodes"), n_path);
    reader_.string(JsonReader::member(trainer, "image"), JsonPath{&path, "image"});
    reader_.string_list(JsonReader::member(trainer, "command"), JsonPath{&path, "command"});
    reader_.string_list(JsonReader::member(trainer, "args"), JsonPath{&path, "args"});
    bool numbered = false;
    for (std::size_t i = 0; i < jobs().Size() && ok(); ++i) {
      const bool trainer_step = ancestor(i) == kTrainerStep;
      Value* job_spec = at(i, {"template", "spec"});
      const JsonPath item{&jobs_path_, {}, i};
      const JsonPath parallelism_path{&item, "template.spec.parallelism"};
      std::int64_t count = reader_.int64(JsonReader::member(job_spec, "parallelism"), parallelism_path).value_or(1);
      if (!ok()) return;
      count = std::max<std::int64_t>(trainer_step && ml_policy_ ? ml_nodes_ : count, 1);
      if (num_nodes && !numbered && (mpi_ ? job_name(i) == kNode : trainer_step)) {
        count = launcher_as_node_ ? std::max<std::int64_t>(*num_nodes - 1, 1) : *num_nodes;
        numbered = true;
        note("replicatedJob " + job_name(i) + ": parallelism, completions " + std::to_string(count) +
             " from TrainJob spec.trainer.numNodes");
      }
      slot(*job_spec, "parallelism").SetInt64(count);
      slot(*job_spec, "completions").SetInt64(count);
      if (trainer_step) slot(job(i), "replicas").SetInt(1);
      if (trainer == nullptr || !(trainer_step || (launcher_as_node_ && job_name(i) == kNode))) continue;
      Value* node = container(i, kNode);
      if (node == nullptr) continue;
      Parts set;
      for (std::string_view field : {"image", "command", "args"}) {
        const Value* v = JsonReader::member(trainer, field);
        if (v == nullptr || !trainer_step) continue;
        slot(*node, field) = copy(*v, JsonPath{&path, field});
        set.add(field);
      }
      if (env != nullptr) {
        merge_list(slot(*node, "env"), *env, "name", true, env_path);
        set.add("env");
      }
      if (resources != nullptr && ml_policy_) {
        merge(slot(*node, "resources"), *resources, "resources", resources_path);
        set.add("resources");
      } else if (resources != nullptr) {
        note("replicatedJob " + job_name(i) + ": resourcesPerNode not applied (runtime " + runtime_name_ +
             " has no mlPolicy; Trainer v2.3.0 applies it only then)");
      }
      note("replicatedJob " + job_name(i) + ", container node", set, "TrainJob spec.trainer");
    }
  }

  // apply_initializer: spec.initializer.dataset or .model onto the container of the same
  // name in the jobs of that step (builder.go, Initializer): STORAGE_URI, then env, upserted
  // by name; the secret added as envFrom. Those jobs run one replica whether or not it is set.
  void apply_initializer(std::string_view field, std::string_view step) {
    const JsonPath init_path{&spec_path_, "initializer"};
    const JsonPath path{&init_path, field};
    const Value* config = object_at(spec_, spec_path_, {"initializer", field});
    const JsonPath uri_path{&path, "storageUri"}, env_path{&path, "env"}, secret_path{&path, "secretRef"};
    const Value* uri = JsonReader::member(config, "storageUri");
    const Value* env = JsonReader::member(config, "env");
    const Value* secret = reader_.object(JsonReader::member(config, "secretRef"), secret_path);
    const std::string secret_name = reader_.string(JsonReader::member(secret, "name"), JsonPath{&secret_path, "name"});
    reader_.string(uri, uri_path);
    for (std::size_t i = 0; i < jobs().Size() && ok(); ++i) {
      if (ancestor(i) != step) continue;
      slot(job(i), "replicas").SetInt(1);
      Value* c = config != nullptr ? container(i, step) : nullptr;
      if (c == nullptr) continue;
      Parts set;
      if (uri != nullptr) {
        Value var(rapidjson::kObjectType), list(rapidjson::kArrayType);
        list.PushBack(var.AddMember("name", "STORAGE_URI", alloc_).AddMember("value", copy(*uri, uri_path), alloc_),
                      alloc_);
        merge_list(slot(*c, "env"), list, "name", true, uri_path);
        set.add("env STORAGE_URI");
      }
      if (env != nullptr) {
        merge_list(slot(*c, "env"), *env, "name", true, env_path);
        set.add("env");
      }
      if (secret != nullptr) {
        Value& list = slot(*c, "envFrom");
        Value ref(rapidjson::kObjectType), source(rapidjson::kObjectType);
        if (!list.IsArray()) list.SetArray();
        ref.AddMember("name", Value(secret_name, alloc_), alloc_);
        list.PushBack(source.AddMember("secretRef", ref, alloc_), alloc_);
        set.add("envFrom secret " + secret_name);
      }
      note("replicatedJob " + job_name(i) + ", container " + std::string(step), set,
           "TrainJob spec.initializer." + std::string(field));
    }
  }

  JsonReader reader_;
  TrainJobResolution& out_;
  Allocator& alloc_;
  const Value& trainjob_;
  const Value* spec_ = nullptr;  // the TrainJob's spec
  const bool stand_in_;
  const std::string runtime_name_;
  std::unordered_map<std::string, std::size_t> job_index_;
  std::size_t work_ = 0;
  std::size_t dropped_ = 0;
  // The runtime's spec.mlPolicy: whether it is there, numNodes (default 1), whether it is
  // MPI (whose plugin counts the job "node", not the trainer step), mpi.runLauncherAsNode.
  bool ml_policy_ = false, mpi_ = false, launcher_as_node_ = false;
  std::int64_t ml_nodes_ = 1;
  // Paths: the TrainJob's from its root ("spec.trainer"), the runtime's from "runtime".
  const JsonPath root_{};
  const JsonPath spec_path_{&root_, "spec"};
  const JsonPath runtime_{nullptr, "runtime"};
  const JsonPath runtime_spec_{&runtime_, "spec"};
  const JsonPath jobset_spec_{&runtime_spec_, "template.spec"};
  const JsonPath jobs_path_{&jobset_spec_, "replicatedJobs"};
};

}  // namespace

RuntimeRef runtime_ref(const Value& trainjob) {
  const Value* ref = JsonReader::member(JsonReader::member(&trainjob, "spec"), "runtimeRef");
  RuntimeRef out{JsonReader::string_member(ref, "apiGroup"), JsonReader::string_member(ref, "kind"),
                 JsonReader::string_member(ref, "name")};
  // The API's defaults (RuntimeRef in trainjob_types.go: +kubebuilder:default).
  if (out.api_group.empty()) out.api_group = kTrainerApiGroup;
  if (out.kind.empty()) out.kind = kClusterTrainingRuntimeKind;
  return out;
}

TrainJobResolution resolve_trainjob(const Value& trainjob, const Value& runtime) {
  const RuntimeRef ref = runtime_ref(trainjob);
  const std::string kind = JsonReader::string_member(&runtime, "kind");
  const std::string name = JsonReader::string_member(JsonReader::member(&runtime, "metadata"), "name");
  TrainJobResolution out;
  Resolver(out, trainjob, (kind.empty() ? ref.kind : kind) + "/" + (name.empty() ? ref.name : name), false)
      .run(runtime);
  return out;
}

TrainJobResolution resolve_trainjob_without_runtime(const Value& trainjob) {
  const RuntimeRef ref = runtime_ref(trainjob);
  rapidjson::Document stand_in;
  stand_in.Parse(kStandInRuntime.data(), kStandInRuntime.size());
  TrainJobResolution out;
  out.provenance.push_back((ref.name.empty() ? "no runtime named (spec.runtimeRef.name)"
                                             : "runtime " + ref.kind + "/" + ref.name + " not read") +
                           std::string(": one replicatedJob node with one container node stands in for it"));
  Resolver(out, trainjob, ref.kind + "/" + ref.name, true).run(stand_in);
  return out;
}

}  // namespace kubegap

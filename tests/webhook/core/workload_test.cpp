// Workload kinds (issue 4): the webhook evaluates the pod templates of the objects people
// apply (Job, PyTorchJob, JobSet, RayJob, ...), because controllers discard the warnings
// on the Pods they create. Every test here sends a real-shaped manifest from
// tests/fixtures/workloads through ReviewHandler::handle, as the API server would, and
// states one rule about the answer.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "policies/text.h"
#include "tests/webhook/test_util.h"
#include "webhook/core/policy_loader.h"
#include "webhook/core/review_handler.h"
#include "webhook/core/yaml_json.h"

namespace kgtest {
namespace {

using kubegap::ClusterSnapshot;
using kubegap::ClusterView;
using kubegap::ConfigError;
using kubegap::default_policy;
using kubegap::DisruptionBudget;
using kubegap::LabelSelector;
using kubegap::NoClusterView;
using kubegap::parse_policy;
using kubegap::Policy;
using kubegap::PolicyStore;
using kubegap::Requirement;
using kubegap::ReviewHandler;
using kubegap::ReviewResult;
using kubegap::rune_count;
using kubegap::StaticClusterView;

constexpr const char* kNamespace = "ml-research";
constexpr const char* kCheckpoint = "checkpoint-volume";
constexpr const char* kBudget = "disruption-budget";
constexpr const char* kZone = "zone-spread";
constexpr const char* kGpu = "gpu-health-tolerations";
constexpr const char* kRestart = "restart-on-failure";
constexpr const char* kNoClusterView = "not evaluated: no cluster view";

// ---------------------------------------------------------------------------------------
// Building reviews around fixture objects.

rapidjson::Document yaml_object(const std::string& text, const std::string& source) {
  auto documents = kubegap::load_yaml_documents(text, source);
  EXPECT_EQ(documents.size(), 1u) << source << ": expected exactly one YAML document";
  rapidjson::Document out;
  if (!documents.empty()) out.Swap(documents.front().json);
  EXPECT_TRUE(out.IsObject()) << source;
  return out;
}

// workload: tests/fixtures/workloads/<name>.yaml as a JSON object.
rapidjson::Document workload(const std::string& name) {
  const std::string path = fixture_path("workloads/" + name + ".yaml");
  const auto text = read_text(path);
  EXPECT_TRUE(text.has_value()) << "missing fixture " << path;
  return yaml_object(text.value_or("{}"), path);
}

// json_value: a JSON snippet as a value owned by `allocator`.
rapidjson::Value json_value(const std::string& text, rapidjson::Document::AllocatorType& allocator) {
  rapidjson::Document parsed = parse_json(text);
  return rapidjson::Value(parsed, allocator);
}

rapidjson::Value string_value(const std::string& text, rapidjson::Document::AllocatorType& allocator) {
  return rapidjson::Value(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), allocator);
}

std::string serialize(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

struct ReviewOptions {
  std::string operation = "CREATE";
  std::string sub_resource;
  // DELETE: request.object is null and oldObject carries the object.
  bool object_null = false;
  bool with_old_object = false;
  std::string uid = "7d3f9a2e-1b4c-4e8a-9f60-2c5d8e1a0b37";
};

// api_group_version: "kubeflow.org/v1" -> {"kubeflow.org", "v1"}; "v1" -> {"", "v1"}.
std::pair<std::string, std::string> api_group_version(const std::string& api_version) {
  const auto slash = api_version.find('/');
  if (slash == std::string::npos) return {"", api_version};
  return {api_version.substr(0, slash), api_version.substr(slash + 1)};
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// review_for: an admission.k8s.io/v1 AdmissionReview as the API server sends it for
// `object`: request.kind and request.resource from the object's apiVersion and kind.
std::string review_for(const rapidjson::Value& object, const ReviewOptions& options = {}) {
  const std::string api_version = str(object["apiVersion"]);
  const std::string kind = str(object["kind"]);
  const auto [group, version] = api_group_version(api_version);
  const auto* meta = member(object, "metadata");
  const std::string name = meta && member(*meta, "name") ? str((*meta)["name"]) : "";
  const std::string ns = meta && member(*meta, "namespace") ? str((*meta)["namespace"]) : kNamespace;

  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  const auto gvk = [&] {
    rapidjson::Value v(rapidjson::kObjectType);
    v.AddMember("group", string_value(group, a), a);
    v.AddMember("version", string_value(version, a), a);
    v.AddMember("kind", string_value(kind, a), a);
    return v;
  };
  const auto gvr = [&] {
    rapidjson::Value v(rapidjson::kObjectType);
    v.AddMember("group", string_value(group, a), a);
    v.AddMember("version", string_value(version, a), a);
    v.AddMember("resource", string_value(lower(kind) + "s", a), a);
    return v;
  };
  rapidjson::Value request(rapidjson::kObjectType);
  request.AddMember("uid", string_value(options.uid, a), a);
  request.AddMember("kind", gvk(), a);
  request.AddMember("resource", gvr(), a);
  if (!options.sub_resource.empty()) {
    request.AddMember("subResource", string_value(options.sub_resource, a), a);
  }
  request.AddMember("requestKind", gvk(), a);
  request.AddMember("requestResource", gvr(), a);
  request.AddMember("name", string_value(name, a), a);
  request.AddMember("namespace", string_value(ns, a), a);
  request.AddMember("operation", string_value(options.operation, a), a);
  request.AddMember("userInfo", json_value(R"({"username":"alice","groups":["system:authenticated"]})", a), a);
  request.AddMember("object", options.object_null ? rapidjson::Value() : rapidjson::Value(object, a), a);
  request.AddMember("oldObject",
                    options.with_old_object || options.object_null ? rapidjson::Value(object, a) : rapidjson::Value(),
                    a);
  request.AddMember("dryRun", false, a);
  const std::string options_kind = options.operation == "CREATE"   ? "CreateOptions"
                                   : options.operation == "UPDATE" ? "UpdateOptions"
                                                                   : "DeleteOptions";
  request.AddMember("options", json_value(R"({"kind":")" + options_kind + R"(","apiVersion":"meta.k8s.io/v1"})", a), a);
  doc.AddMember("apiVersion", "admission.k8s.io/v1", a);
  doc.AddMember("kind", "AdmissionReview", a);
  doc.AddMember("request", request, a);
  return serialize(doc);
}

// ---------------------------------------------------------------------------------------
// Running the handler and reading its answer.

// Harness: ReviewHandler with a policy and either no cluster view or a fixed snapshot.
struct Harness {
  explicit Harness(const Policy& policy = default_policy(), std::shared_ptr<const ClusterSnapshot> snapshot = nullptr)
      : policies(policy),
        cluster(snapshot ? std::unique_ptr<ClusterView>(new StaticClusterView(std::move(snapshot)))
                         : std::unique_ptr<ClusterView>(new NoClusterView())),
        handler(policies, *cluster) {}

  PolicyStore policies;
  std::unique_ptr<ClusterView> cluster;
  ReviewHandler handler;
};

struct Answer {
  ReviewResult result;
  std::vector<std::string> warnings;  // the statements, each with its fix or followed by one
  std::vector<std::string> fixes;     // "kubegap/<check>: fix: ...": a fix that did not fit its statement
  std::map<std::string, std::string> annotations;
  std::string classes;  // the `class` audit annotation
  std::size_t response_members = 0;
  std::size_t total_warning_runes = 0;

  std::vector<std::string> warnings_of(const std::string& check) const {
    std::vector<std::string> out;
    for (const auto& w : warnings) {
      if (w.rfind("kubegap/" + check + ": ", 0) == 0) out.push_back(w);
    }
    return out;
  }
};

std::string listing(const std::vector<std::string>& warnings) {
  std::string out;
  for (const auto& w : warnings) out += "\n  " + w;
  return out.empty() ? " (none)" : out;
}

// answer: handles `body` and checks what every answer must satisfy: HTTP 200, allowed,
// uid echoed, and warnings that are clean UTF-8, cited, <= 256 runes each and together
// inside the API server's 4096-rune budget.
Answer answer(const Harness& harness, const std::string& body) {
  Answer out;
  out.result = harness.handler.handle(body);
  EXPECT_EQ(out.result.status, 200) << out.result.body;
  const rapidjson::Document request = parse_json(body);
  const rapidjson::Document doc = parse_json(out.result.body);
  const auto* response = member(doc, "response");
  EXPECT_NE(response, nullptr) << out.result.body;
  if (response == nullptr) return out;
  out.response_members = response->MemberCount();
  EXPECT_EQ(str((*response)["uid"]), str(request["request"]["uid"]));
  const auto* allowed = member(*response, "allowed");
  EXPECT_TRUE(allowed != nullptr && allowed->IsBool() && allowed->GetBool()) << out.result.body;
  EXPECT_EQ(member(*response, "patch"), nullptr);
  if (const auto* warnings = member(*response, "warnings")) {
    EXPECT_TRUE(warnings->IsArray());
    if (warnings->IsArray()) {
      for (const auto& w : warnings->GetArray()) out.warnings.push_back(str(w));
    }
  }
  static const std::regex kCited(R"( \(case [a-z0-9-]+\)$)");
  static const std::regex kFixLine(R"(^kubegap/([a-z-]+): fix: )");
  std::vector<std::string> all;
  all.swap(out.warnings);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string& w = all[i];
    const Utf8Scan scan = scan_utf8(w);
    EXPECT_TRUE(scan.valid) << w;
    EXPECT_FALSE(scan.has_control) << w;
    EXPECT_LE(scan.runes, kubegap::kMaxWarningRunes) << w;
    EXPECT_EQ(w.rfind("kubegap/", 0), 0u) << w;
    out.total_warning_runes += scan.runes;
    if (std::regex_search(w, kFixLine)) {
      out.fixes.push_back(w);
      continue;
    }
    EXPECT_TRUE(std::regex_search(w, kCited)) << w;
    // Issue 29: every warning on `kubectl apply` carries its fix, in it or in the next one.
    if (w.find("; fix: ") == std::string::npos) {
      const std::string check = w.substr(0, w.find(": ") + 2);
      EXPECT_TRUE(i + 1 < all.size() && all[i + 1].rfind(check + "fix: ", 0) == 0)
          << "a warning without its fix, and no fix warning after it: " << w;
    }
    out.warnings.push_back(w);
  }
  EXPECT_LE(out.total_warning_runes, 4096u);
  if (const auto* annotations = member(*response, "auditAnnotations")) {
    EXPECT_TRUE(annotations->IsObject());
    if (annotations->IsObject()) {
      for (const auto& m : annotations->GetObject()) {
        const std::string key(m.name.GetString(), m.name.GetStringLength());
        // The class annotation says how parts were judged; tests of findings ignore it
        // and the class tests read it from `classes`.
        if (key == "class") {
          out.classes = str(m.value);
          continue;
        }
        out.annotations.emplace(key, str(m.value));
        EXPECT_LE(m.value.GetStringLength(), kubegap::kMaxAnnotationValueBytes);
      }
    }
  }
  return out;
}

// The accelerator-or-label gate alone: CPU pods that visibly train are not judged either.
Policy gpu_only_policy() { return parse_policy("judgeCpuTraining: false\n", "gpu-only.yaml"); }

Answer run(const std::string& fixture, const ReviewOptions& options = {}, const Harness& harness = Harness()) {
  return answer(harness, review_for(workload(fixture), options));
}

// Expected: one warning: its check, the parts it names ("" for a kind without parts)
// and the facts its message must state (zone, path, volume, duration, ...). The wording
// around the facts is the checks' business, not this file's.
struct Expected {
  std::string check;
  std::string parts;
  std::vector<std::string> facts;
};

// kPartWords: how every default part name starts; a kind without parts names none.
const std::regex kPartWords(R"(^(replica|replicatedJob|task|head|workerGroup|leader|worker)\b)");

void expect_warnings(const Answer& a, const std::vector<Expected>& expected, const std::string& context) {
  ASSERT_EQ(a.warnings.size(), expected.size()) << context << ": got" << listing(a.warnings);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Expected& e = expected[i];
    const std::string& w = a.warnings[i];
    const std::string prefix = "kubegap/" + e.check + ": " + (e.parts.empty() ? "" : e.parts + ": ");
    EXPECT_EQ(w.rfind(prefix, 0), 0u) << context << " warning " << i << "\n  want prefix: " << prefix
                                      << "\n  got:         " << w;
    if (e.parts.empty() && w.rfind(prefix, 0) == 0) {
      EXPECT_FALSE(std::regex_search(w.substr(prefix.size()), kPartWords))
          << context << ": a kind without parts names none: " << w;
    }
    for (const auto& fact : e.facts) {
      EXPECT_NE(w.find(fact), std::string::npos)
          << context << " warning " << i << "\n  want: " << fact << "\n  got:  " << w;
    }
  }
}

// snapshot: a cluster with these PodDisruptionBudgets and no nodes.
std::shared_ptr<const ClusterSnapshot> snapshot(std::vector<DisruptionBudget> budgets) {
  return std::make_shared<const ClusterSnapshot>(std::move(budgets), std::vector<kubegap::NodeInfo>{});
}

DisruptionBudget budget(const std::string& ns, kubegap::StringMap match_labels,
                        std::vector<Requirement> expressions = {}) {
  LabelSelector selector;
  selector.match_labels = std::move(match_labels);
  selector.match_expressions = std::move(expressions);
  return DisruptionBudget{ns, "training-pdb", selector};
}

std::string test_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// ---------------------------------------------------------------------------------------
// Every default kind, with gaps: the right checks warn, each warning names its parts.

struct GapCase {
  std::string fixture;
  std::string api_version;
  std::string kind;
  std::vector<Expected> warnings;
};

// The facts of the two commonest messages.
const std::vector<std::string> kNoDurable = {"durable"};
const std::vector<std::string> kDefault300 = {"not-ready", "unreachable", "300 s"};

// trains_by_evidence: fixtures of serving kinds whose pods run a training launcher, so
// they are judged as training (WorkloadKind::evidence_promotes) and asked for a budget.
bool trains_by_evidence(const std::string& fixture) {
  return fixture == "statefulset" || fixture == "statefulset-well-configured";
}

std::vector<GapCase> gap_cases() {
  return {
      {"job",
       "batch/v1",
       "Job",
       {{kCheckpoint, "", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "", kDefault300}}},
      {"cronjob",
       "batch/v1",
       "CronJob",
       {{kCheckpoint, "", {"/mnt/ckpt", "hostPath", "\"ckpt\""}},
        {kZone, "", {"\"europe-west4-a\"", "required node affinity"}},
        {kGpu, "", kDefault300},
        {kRestart, "", {"spec.jobTemplate.spec.backoffLimit is 2", "restartPolicy OnFailure"}}}},
      // Serving kinds (checksByClass serving: checkpoint-volume, and only for a
      // checkpoint-looking path): a GPU Deployment with no durable volume, pinned to a
      // zone, tolerating everything, is an inference server's business.
      {"deployment", "apps/v1", "Deployment", {}},
      // It runs torchrun: a serving kind that trains is judged as training (evidencePromotes).
      {"statefulset",
       "apps/v1",
       "StatefulSet",
       {{kCheckpoint, "", {"/workspace/checkpoints", "emptyDir", "\"scratch\""}},
        {kZone, "", {"\"us-west-2b\"", "nodeSelector"}},
        {kGpu, "", {"nvidia.com/gpu-xid-error", "NoExecute"}}}},
      {"replicaset", "apps/v1", "ReplicaSet", {{kCheckpoint, "", {"/ckpt", "ephemeral", "\"ckpt\""}}}},
      {"daemonset", "apps/v1", "DaemonSet", {}},
      {"rayservice", "ray.io/v1", "RayService", {}},
      {"jobset",
       "jobset.x-k8s.io/v1alpha2",
       "JobSet",
       {{kCheckpoint, "replicatedJob driver, replicatedJob workers", kNoDurable},
        {kZone, "replicatedJob workers", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replicatedJob workers", kDefault300}}},
      {"pytorchjob",
       "kubeflow.org/v1",
       "PyTorchJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      // Wrappers: the wrapped PyTorchJob's gaps, reported on the wrapper (WorkloadKind::wraps).
      {"katib-experiment",
       "kubeflow.org/v1beta1",
       "Experiment",
       {{kCheckpoint, "trial: replica Master, trial: replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "trial: replica Master, trial: replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "trial: replica Master, trial: replica Worker", kDefault300}}},
      {"appwrapper",
       "workload.codeflare.dev/v1beta2",
       "AppWrapper",
       {{kCheckpoint,
         "component 0: replica Master, component 0: replica Worker",
         {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "component 0: replica Master, component 0: replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "component 0: replica Master, component 0: replica Worker", kDefault300}}},
      {"kubedl-cron",
       "apps.kubedl.io/v1alpha1",
       "Cron",
       {{kCheckpoint, "workload: replica Master, workload: replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "workload: replica Master, workload: replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "workload: replica Master, workload: replica Worker", kDefault300}}},
      {"tfjob",
       "kubeflow.org/v1",
       "TFJob",
       {{kCheckpoint, "replica Chief", {"/tmp/checkpoint", "emptyDir", "\"train-dir\""}},
        {kCheckpoint, "replica Worker", {"/tmp/worker-checkpoint", "emptyDir", "\"scratch\""}},
        {kZone, "replica Chief", {"\"us-west1-b\"", "nodeSelector"}},
        {kGpu, "replica Chief, replica Worker", kDefault300}}},
      {"xgboostjob",
       "kubeflow.org/v1",
       "XGBoostJob",
       // The Master writes the model (--model_path); the Workers name no save path.
       {{kCheckpoint, "replica Master", {"/tmp/xgboost-model (--model_path)", "container's own filesystem"}},
        {kGpu, "replica Worker", kDefault300},
        {kRestart, "replica Master", {"restartPolicy Never", "fails the XGBoostJob"}}}},
      {"paddlejob",
       "kubeflow.org/v1",
       "PaddleJob",
       {{kCheckpoint, "replica Worker", kNoDurable},
        {kZone, "replica Worker", {"\"cn-beijing-a\"", "required node affinity"}},
        {kGpu, "replica Worker", kDefault300}}},
      {"jaxjob",
       "kubeflow.org/v1",
       "JAXJob",
       {{kCheckpoint, "replica Worker", {"/ckpt", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Worker", {"\"us-central2-b\"", "nodeSelector"}},
        {kGpu, "replica Worker", {"nvidia.com/gpu-xid-error", "for every effect"}}}},
      {"mpijob",
       "kubeflow.org/v2beta1",
       "MPIJob",
       // The Launcher coordinates (runs mpirun): only the Workers write checkpoints.
       {{kCheckpoint, "replica Worker", kNoDurable},
        {kZone, "replica Worker", {"\"eu-west-1a\"", "nodeSelector"}},
        {kGpu, "replica Worker", kDefault300}}},
      // RayJob is auto: the CPU head requests no accelerator, the entrypoint trains.
      {"rayjob",
       "ray.io/v1",
       "RayJob",
       {{kCheckpoint, "workerGroup gpu-group", kNoDurable},
        {kZone, "workerGroup gpu-group", {"\"us-east-1b\"", "nodeSelector"}},
        {kGpu, "workerGroup gpu-group", kDefault300},
        {kRestart, "workerGroup gpu-group", {"spec.backoffLimit is unset (0 by default)"}}}},
      {"volcano-job",
       "batch.volcano.sh/v1alpha1",
       "Job",
       {{kCheckpoint, "task master, task worker", kNoDurable},
        {kZone, "task worker", {"\"ap-southeast-2a\"", "nodeSelector"}},
        {kGpu, "task worker", kDefault300}}},
      {"leaderworkerset", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {}},
      // Kubeflow's replica-map shape under other groups (generated from pytorchjob.yaml).
      {"kubedl-tfjob",
       "training.kubedl.io/v1alpha1",
       "TFJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"kubedl-pytorchjob",
       "training.kubedl.io/v1alpha1",
       "PyTorchJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"kubedl-xgboostjob",
       "training.kubedl.io/v1alpha1",
       "XGBoostJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"kubedl-xdljob",
       "training.kubedl.io/v1alpha1",
       "XDLJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"kubedl-marsjob",
       "training.kubedl.io/v1alpha1",
       "MarsJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      // ElasticDL's Master dispatches shards (a coordinator): only the Workers write.
      {"kubedl-elasticdljob",
       "training.kubedl.io/v1alpha1",
       "ElasticDLJob",
       {{kCheckpoint, "replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"kubedl-mpijob",
       "training.kubedl.io/v1alpha1",
       "MPIJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"torchelastic-elasticjob",
       "elastic.pytorch.org/v1alpha1",
       "ElasticJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"dlrover-elasticjob",
       "elastic.iml.github.io/v1alpha1",
       "ElasticJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"mxjob",
       "kubeflow.org/v1",
       "MXJob",
       {{kCheckpoint, "replica Master, replica Worker", {"/checkpoints", "emptyDir", "\"ckpt\""}},
        {kZone, "replica Master, replica Worker", {"\"us-east-1a\"", "nodeSelector"}},
        {kGpu, "replica Master, replica Worker", kDefault300}}},
      {"trainingruntime",
       "trainer.kubeflow.org/v1alpha1",
       "TrainingRuntime",
       {{kCheckpoint, "replicatedJob node", {"/workspace/checkpoints", "emptyDir", "\"checkpoints\""}},
        {kZone, "replicatedJob node", {"\"us-central1-a\"", "nodeSelector"}},
        {kGpu, "replicatedJob node", kDefault300},
        {kRestart,
         "replicatedJob dataset-initializer, replicatedJob node",
         {"spec.template.spec.failurePolicy.maxRestarts is unset", "TrainJob made from it"}}}},
      {"clustertrainingruntime",
       "trainer.kubeflow.org/v1alpha1",
       "ClusterTrainingRuntime",
       {{kCheckpoint, "replicatedJob node", {"/workspace/checkpoints", "emptyDir", "\"checkpoints\""}},
        {kZone, "replicatedJob node", {"\"us-central1-a\"", "nodeSelector"}},
        {kGpu, "replicatedJob node", kDefault300},
        {kRestart,
         "replicatedJob dataset-initializer, replicatedJob node",
         {"spec.template.spec.failurePolicy.maxRestarts is unset", "TrainJob made from it"}}}},
      {"hyperpodpytorchjob",
       "sagemaker.amazonaws.com/v1",
       "HyperPodPyTorchJob",
       {{kCheckpoint, "replica pods", {"/local/checkpoints", "hostPath", "\"local\""}},
        {kGpu, "replica pods", kDefault300}}},
      {"raycronjob",
       "ray.io/v1",
       "RayCronJob",
       {{kCheckpoint, "workerGroup gpu-group", kNoDurable},
        {kGpu, "workerGroup gpu-group", kDefault300},
        {kRestart, "workerGroup gpu-group", {"spec.jobTemplate.backoffLimit is unset (0 by default)"}}}},
      {"volcano-cronjob",
       "batch.volcano.sh/v1alpha1",
       "CronJob",
       {{kCheckpoint, "task trainer", {"/ckpt", "emptyDir", "\"ckpt\""}}, {kGpu, "task trainer", kDefault300}}},
      {"volcano-jobtemplate",
       "flow.volcano.sh/v1alpha1",
       "JobTemplate",
       {{kCheckpoint, "task train", kNoDurable},
        {kZone, "task train", {"\"ap-southeast-2a\"", "nodeSelector"}},
        {kGpu, "task train", kDefault300}}},
  };
}

void PrintTo(const GapCase& c, std::ostream* os) { *os << c.fixture; }

class WorkloadGaps : public ::testing::TestWithParam<GapCase> {};

TEST_P(WorkloadGaps, EachGapIsOneCitedWarningNamingThePartsAndBudgetIsNotEvaluated) {
  const GapCase& c = GetParam();
  const rapidjson::Document object = workload(c.fixture);
  // The fixture is the kind the row is for (real-shaped: its apiVersion and kind).
  ASSERT_EQ(str(object["apiVersion"]), c.api_version) << c.fixture;
  ASSERT_EQ(str(object["kind"]), c.kind) << c.fixture;

  const Answer a = answer(Harness(), review_for(object));
  EXPECT_TRUE(a.result.evaluated) << c.fixture;
  EXPECT_EQ(a.result.error, "") << c.fixture;
  expect_warnings(a, c.warnings, c.fixture);

  std::vector<std::string_view> checks;
  for (const auto& e : c.warnings) {
    if (std::find(checks.begin(), checks.end(), e.check) == checks.end()) checks.push_back(e.check);
  }
  EXPECT_EQ(a.result.found, checks) << c.fixture;
  // One audit annotation per check that found something, plus the budget check that
  // cannot be evaluated without a cluster view, and nothing else.
  // (Serving kinds are not asked for a budget: checksByClass.)
  const auto* row = default_policy().workload_kind(api_group_version(c.api_version).first, c.kind);
  ASSERT_NE(row, nullptr) << c.fixture;
  const bool budget = default_policy().check_applies(kBudget, row->workload_class) || trains_by_evidence(c.fixture);
  std::set<std::string> keys(checks.begin(), checks.end());
  if (budget) keys.insert(kBudget);
  std::set<std::string> got;
  for (const auto& [key, value] : a.annotations) got.insert(key);
  EXPECT_EQ(got, keys) << c.fixture;
  if (budget) {
    EXPECT_EQ(a.annotations.count(kBudget) ? a.annotations.at(kBudget) : "", kNoClusterView) << c.fixture;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WorkloadGaps, ::testing::ValuesIn(gap_cases()),
                         [](const auto& info) { return test_name(info.param.fixture); });

TEST(WorkloadKinds, EveryDefaultWorkloadKindHasAGappyFixture) {
  const auto cases = gap_cases();
  for (const auto& row : kubegap::default_workload_kinds()) {
    // A TrainJob's gaps depend on its runtime: the two ATrainJob... tests cover it.
    // A RayCluster's checkpoint gap needs a driver to show (ARayCluster... test).
    if (row.kind == "Pod" || row.kind == "TrainJob" || row.kind == "RayCluster") continue;
    const bool covered = std::any_of(cases.begin(), cases.end(), [&](const GapCase& c) {
      return api_group_version(c.api_version).first == row.group && c.kind == row.kind;
    });
    EXPECT_TRUE(covered) << "no fixture for " << row.group << "/" << row.kind;
  }
}

// ---------------------------------------------------------------------------------------
// Well-configured counterparts: nothing to warn about.

class WorkloadWellConfigured : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadWellConfigured, GetsNoWarningAndOnlyTheBudgetNotEvaluatedAnnotation) {
  const Answer a = run(GetParam());
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_EQ(a.result.error, "");
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.result.found.empty());
  // Serving kinds are not asked for a budget (checksByClass).
  const rapidjson::Document object = workload(GetParam());
  const auto* row =
      default_policy().workload_kind(api_group_version(str(object["apiVersion"])).first, str(object["kind"]));
  ASSERT_NE(row, nullptr);
  if (default_policy().check_applies(kBudget, row->workload_class) || trains_by_evidence(GetParam())) {
    EXPECT_EQ(a.annotations, (std::map<std::string, std::string>{{kBudget, kNoClusterView}}));
  } else {
    EXPECT_TRUE(a.annotations.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WorkloadWellConfigured,
                         ::testing::Values("job-well-configured", "statefulset-well-configured",
                                           "jobset-well-configured", "pytorchjob-well-configured",
                                           "rayjob-well-configured", "volcano-job-well-configured",
                                           "mpijob-well-configured"),
                         [](const auto& info) { return test_name(info.param); });

// ---------------------------------------------------------------------------------------
// Grouping and the warning budget.

TEST(WorkloadWarnings, TheSameGapInSeveralPartsIsOneWarningListingEveryPart) {
  const Answer a = run("pytorchjob");
  for (const char* check : {kCheckpoint, kZone, kGpu}) {
    const auto warnings = a.warnings_of(check);
    ASSERT_EQ(warnings.size(), 1u) << check << listing(a.warnings);
    EXPECT_NE(warnings[0].find(": replica Master, replica Worker: "), std::string::npos) << warnings[0];
  }
}

TEST(WorkloadWarnings, PartsThatFailACheckDifferentlyGetOneWarningEach) {
  const Answer a = run("tfjob");
  const auto warnings = a.warnings_of(kCheckpoint);
  ASSERT_EQ(warnings.size(), 2u) << listing(a.warnings);
  EXPECT_EQ(warnings[0].find("replica Worker"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[1].find("replica Chief"), std::string::npos) << warnings[1];
}

// TensorFlow saves on the chief: Workers beside a Chief that name no save path and mount
// nothing are judged with it; without a Chief the same Workers are judged themselves.
TEST(WorkloadWarnings, WorkersBesideAChiefAreJudgedWithIt) {
  const Answer beside = run("tfjob-chief-writes");
  EXPECT_TRUE(beside.warnings_of(kCheckpoint).empty()) << listing(beside.warnings);

  rapidjson::Document alone = workload("tfjob-chief-writes");
  auto& specs = alone["spec"]["tfReplicaSpecs"];
  specs.RemoveMember("Chief");
  const Answer a = answer(Harness(), review_for(alone));
  const auto warnings = a.warnings_of(kCheckpoint);
  ASSERT_EQ(warnings.size(), 1u) << listing(a.warnings);
  EXPECT_NE(warnings[0].find("replica Worker"), std::string::npos) << warnings[0];
}

// A writer speaks for its own object only: in an AppWrapper, a TFJob's Chief does not
// make a PyTorchJob component's Workers non-writers.
TEST(WorkloadWarnings, AWriterSpeaksForItsOwnWrappedObjectOnly) {
  const Answer a = run("appwrapper-writer-scope");
  const auto warnings = a.warnings_of(kCheckpoint);
  ASSERT_EQ(warnings.size(), 1u) << listing(a.warnings);
  EXPECT_NE(warnings[0].find("component 1: replica Worker"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[0].find("component 0"), std::string::npos) << warnings[0];
}

TEST(WorkloadWarnings, AGapInOnlySomePartsNamesOnlyThoseParts) {
  const Answer a = run("jobset");
  const auto zone = a.warnings_of(kZone);
  ASSERT_EQ(zone.size(), 1u);
  EXPECT_EQ(zone[0].find("driver"), std::string::npos) << zone[0];
  const auto gpu = a.warnings_of(kGpu);
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].find("driver"), std::string::npos) << "the driver has no GPU: " << gpu[0];
}

// jobset_with_workers: the jobset fixture with its "workers" replicatedJob repeated `n`
// times as workers-00, workers-01, ..., each pinned to its own zone; `customise` may
// change each copy's pod spec further.
template <typename Customise>
rapidjson::Document jobset_with_workers(int n, Customise customise) {
  rapidjson::Document doc = workload("jobset");
  auto& a = doc.GetAllocator();
  auto& jobs = doc["spec"]["replicatedJobs"];
  const rapidjson::Value workers(jobs[1], a);
  jobs.Clear();
  for (int i = 0; i < n; ++i) {
    const std::string suffix = (i < 10 ? "0" : "") + std::to_string(i);
    rapidjson::Value job(workers, a);
    job["name"] = string_value(std::string("workers-") + suffix, a);
    auto& pod_spec = job["template"]["spec"]["template"]["spec"];
    pod_spec["nodeSelector"]["topology.kubernetes.io/zone"] = string_value(std::string("zone-") + suffix, a);
    customise(pod_spec, i, suffix, a);
    jobs.PushBack(job, a);
  }
  return doc;
}

TEST(WorkloadWarnings, FortyReplicatedJobsInFortyZonesStayFarInsideTheWarningBudget) {
  const auto doc = jobset_with_workers(40, [](rapidjson::Value&, int, const std::string&, auto&) {});
  const Answer a = answer(Harness(), review_for(doc));
  EXPECT_TRUE(a.result.evaluated);
  // 40 different zones are 40 different gaps: the first is its own warning, the other 39
  // one summary warning, so zone-spread never takes more than two warnings.
  const auto zone = a.warnings_of(kZone);
  ASSERT_EQ(zone.size(), 2u) << listing(a.warnings);
  EXPECT_EQ(zone[0].rfind("kubegap/zone-spread: replicatedJob workers-00: ", 0), 0u) << zone[0];
  EXPECT_NE(zone[0].find("\"zone-00\""), std::string::npos) << zone[0];
  EXPECT_EQ(zone[1].rfind("kubegap/zone-spread: replicatedJob workers-01, replicatedJob workers-02, "
                          "replicatedJob workers-03 and 36 more parts: ",
                          0),
            0u)
      << zone[1];
  EXPECT_EQ(zone[1].find("zone-0"), std::string::npos) << "the summary names no single zone: " << zone[1];
  // The same gap in 40 parts: one warning naming three of them and counting the rest.
  const auto checkpoint = a.warnings_of(kCheckpoint);
  ASSERT_EQ(checkpoint.size(), 1u);
  EXPECT_EQ(checkpoint[0].rfind("kubegap/checkpoint-volume: replicatedJob workers-00, replicatedJob workers-01, "
                                "replicatedJob workers-02 and 37 more parts: ",
                                0),
            0u)
      << checkpoint[0];
  EXPECT_EQ(a.warnings_of(kGpu).size(), 1u);
  EXPECT_EQ(a.warnings.size(), 4u) << listing(a.warnings);
  EXPECT_LE(a.total_warning_runes, 1536u) << "well under the API server's 4096-rune budget";
  // The annotation keeps every zone's reason, bounded.
  EXPECT_LE(a.annotations.at(kZone).size(), kubegap::kMaxAnnotationValueBytes);
}

TEST(WorkloadWarnings, EveryCheckFailingFortyPartsDifferentlyIsCappedAtTwoWarningsPerCheck) {
  // Every replicatedJob fails every check in its own way: its own checkpoint path, zone
  // and not-ready tolerationSeconds; with a cluster view that holds no budget at all.
  const auto doc = jobset_with_workers(
      40, [](rapidjson::Value& pod_spec, int i, const std::string& suffix, rapidjson::Document::AllocatorType& a) {
        pod_spec["containers"][0].AddMember(
            "volumeMounts", json_value(R"([{"name":"ckpt","mountPath":"/ckpt-)" + suffix + R"("}])", a), a);
        pod_spec.AddMember("volumes", json_value(R"([{"name":"ckpt","emptyDir":{}}])", a), a);
        pod_spec.AddMember("tolerations",
                           json_value(R"([{"key":"node.kubernetes.io/not-ready","operator":"Exists",)"
                                      R"("effect":"NoExecute","tolerationSeconds":)" +
                                          std::to_string(300 + i) + "}]",
                                      a),
                           a);
      });
  const Answer a = answer(Harness(default_policy(), snapshot({})), review_for(doc));
  for (const char* check : {kCheckpoint, kZone, kGpu}) {
    const auto warnings = a.warnings_of(check);
    ASSERT_EQ(warnings.size(), 2u) << check << listing(a.warnings);
    EXPECT_NE(warnings[1].find(" and 36 more parts: "), std::string::npos) << warnings[1];
  }
  EXPECT_EQ(a.warnings_of(kBudget).size(), 1u) << "the same budget gap everywhere is one warning";
  EXPECT_EQ(a.warnings.size(), 7u) << listing(a.warnings);
  // At most 2 statements of <= 256 runes per check, each with a fix line of <= 160.
  EXPECT_LE(a.total_warning_runes, 4u * 2u * (256u + 160u)) << "under the API server's 4096-rune budget";
  for (const auto& [key, value] : a.annotations) {
    EXPECT_LE(value.size(), kubegap::kMaxAnnotationValueBytes) << key;
  }
}

TEST(WorkloadWarnings, FourPartsListThreeAndCountOneMorePart) {
  const auto doc = jobset_with_workers(4, [](rapidjson::Value&, int, const std::string&, auto&) {});
  const Answer a = answer(Harness(), review_for(doc));
  const auto checkpoint = a.warnings_of(kCheckpoint);
  ASSERT_EQ(checkpoint.size(), 1u) << listing(a.warnings);
  EXPECT_EQ(checkpoint[0].rfind("kubegap/checkpoint-volume: replicatedJob workers-00, replicatedJob workers-01, "
                                "replicatedJob workers-02 and 1 more part: ",
                                0),
            0u)
      << checkpoint[0];
}

// ---------------------------------------------------------------------------------------
// Which kinds and operations are evaluated.

TEST(WorkloadOperations, UpdateOfAWorkloadIsEvaluatedLikeItsCreate) {
  const Answer create = run("pytorchjob");
  ReviewOptions update;
  update.operation = "UPDATE";
  update.with_old_object = true;
  const Answer a = run("pytorchjob", update);
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_EQ(a.result.operation, "UPDATE");
  EXPECT_FALSE(a.warnings.empty());
  EXPECT_EQ(a.warnings, create.warnings);
  EXPECT_EQ(a.annotations, create.annotations);
}

TEST(WorkloadOperations, PodUpdateIsNotEvaluatedWhilePodCreateIs) {
  const Answer create = run("pytorchjob-worker-pod");
  EXPECT_TRUE(create.result.evaluated);
  EXPECT_FALSE(create.annotations.empty());
  ReviewOptions update;
  update.operation = "UPDATE";
  update.with_old_object = true;
  const Answer a = run("pytorchjob-worker-pod", update);
  EXPECT_FALSE(a.result.evaluated);
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
  EXPECT_EQ(a.response_members, 2u) << "uid and allowed only";
}

TEST(WorkloadOperations, DeleteOfAWorkloadGivesNothing) {
  ReviewOptions del;
  del.operation = "DELETE";
  del.object_null = true;
  for (const char* fixture : {"pytorchjob", "jobset", "job"}) {
    const Answer a = run(fixture, del);
    EXPECT_FALSE(a.result.evaluated) << fixture;
    EXPECT_EQ(a.result.error, "") << fixture;
    EXPECT_TRUE(a.warnings.empty()) << fixture << listing(a.warnings);
    EXPECT_TRUE(a.annotations.empty()) << fixture;
    EXPECT_EQ(a.response_members, 2u) << fixture;
  }
}

TEST(WorkloadOperations, StatusSubresourceUpdateOfAWorkloadIsNotEvaluated) {
  ReviewOptions status;
  status.operation = "UPDATE";
  status.sub_resource = "status";
  status.with_old_object = true;
  const Answer a = run("pytorchjob", status);
  EXPECT_FALSE(a.result.evaluated);
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
}

TEST(WorkloadKinds, NonTrainingDeploymentWithoutGpusGivesNothing) {
  const Answer a = run("deployment-nginx");
  EXPECT_EQ(a.result.error, "");
  EXPECT_TRUE(a.result.found.empty());
  EXPECT_TRUE(a.warnings.empty()) << "even its zone pin is none of our business" << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
  EXPECT_EQ(a.response_members, 2u);
}

TEST(WorkloadKinds, TrainingKindWithoutGpusStillGetsCheckpointVolume) {
  const Answer a = run("pytorchjob-cpu");
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_EQ(a.result.found, std::vector<std::string_view>{kCheckpoint});
  expect_warnings(a, {{kCheckpoint, "replica Master, replica Worker", kNoDurable}}, "pytorchjob-cpu");
  EXPECT_FALSE(a.annotations.contains(kGpu)) << "no accelerator: no GPU health check";
  EXPECT_EQ(a.annotations.at(kBudget), kNoClusterView);
}

TEST(WorkloadKinds, NonTrainingKindWithoutGpusIsSilentWhereATrainingKindIsNot) {
  // The same CPU Job shape: a batch/v1 Job is judged by its template (no GPU and a
  // command that does not train: nothing), a Volcano Job (also kind "Job", group
  // batch.volcano.sh) is a training kind.
  rapidjson::Document job = workload("job");
  auto& container = job["spec"]["template"]["spec"]["containers"][0];
  container["resources"]["limits"].RemoveMember("nvidia.com/gpu");
  container.RemoveMember("command");
  const Answer plain = answer(Harness(), review_for(job));
  EXPECT_TRUE(plain.warnings.empty()) << listing(plain.warnings);
  EXPECT_TRUE(plain.annotations.empty());

  rapidjson::Document volcano = workload("volcano-job");
  volcano["spec"]["tasks"][1]["template"]["spec"]["containers"][0].RemoveMember("resources");
  const Answer training = answer(Harness(), review_for(volcano));
  EXPECT_EQ(training.result.found, (std::vector<std::string_view>{kCheckpoint, kZone}));
  EXPECT_FALSE(training.warnings_of(kCheckpoint).empty());
}

// A CPU Job that runs torchrun loses its checkpoints on an emptyDir like a GPU one: it is
// judged as training (policy judgeCpuTraining) without the GPU health check; with the
// policy off it is not, nor beside a part that requests a GPU (the rayjob fixture's CPU
// head in WorkloadGaps).
TEST(WorkloadKinds, ACpuJobThatVisiblyTrainsIsJudgedUnlessThePolicySaysNot) {
  rapidjson::Document job = workload("job");
  job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].RemoveMember("nvidia.com/gpu");
  const Answer cpu = answer(Harness(), review_for(job));
  EXPECT_FALSE(cpu.warnings_of(kCheckpoint).empty()) << listing(cpu.warnings);
  EXPECT_TRUE(cpu.warnings_of(kGpu).empty()) << listing(cpu.warnings);
  EXPECT_NE(cpu.classes.find("launcher torchrun (no accelerator: policy judgeCpuTraining)"), std::string::npos)
      << cpu.classes;

  const Answer silent = answer(Harness(gpu_only_policy()), review_for(job));
  EXPECT_TRUE(silent.warnings.empty()) << listing(silent.warnings);
  EXPECT_TRUE(silent.annotations.empty());
}

TEST(WorkloadKinds, StatefulSetVolumeClaimTemplatesAreDurableVolumesOfItsPods) {
  // The template mounts "ckpt", which only volumeClaimTemplates declares: durable.
  EXPECT_TRUE(run("statefulset-well-configured").warnings_of(kCheckpoint).empty());
  // Without the claim template the mount names a volume nothing declares: not evaluated
  // (a controller we do not know may add it), never "not durable".
  rapidjson::Document without = workload("statefulset-well-configured");
  without["spec"].RemoveMember("volumeClaimTemplates");
  const Answer undeclared = answer(Harness(), review_for(without));
  EXPECT_TRUE(undeclared.warnings_of(kCheckpoint).empty()) << listing(undeclared.warnings);
  ASSERT_TRUE(undeclared.annotations.contains(kCheckpoint));
  EXPECT_NE(undeclared.annotations.at(kCheckpoint).find("is not declared"), std::string::npos)
      << undeclared.annotations.at(kCheckpoint);
  // A claim template replaces the template's own volume of the same name, as the
  // StatefulSet controller does: the emptyDir "scratch" becomes a PVC.
  rapidjson::Document gappy = workload("statefulset");
  auto& a = gappy.GetAllocator();
  gappy["spec"].AddMember("volumeClaimTemplates",
                          json_value(R"([{"metadata":{"name":"scratch"},"spec":{"accessModes":["ReadWriteOnce"],)"
                                     R"("resources":{"requests":{"storage":"500Gi"}}}}])",
                                     a),
                          a);
  EXPECT_EQ(run("statefulset").warnings_of(kCheckpoint).size(), 1u) << "emptyDir at a checkpoint path";
  const Answer fixed = answer(Harness(), review_for(gappy));
  EXPECT_TRUE(fixed.warnings_of(kCheckpoint).empty()) << listing(fixed.warnings);
}

TEST(WorkloadKinds, ExemptionOnTheWorkloadCoversEveryPartAndOnATemplateOnlyThatPart) {
  rapidjson::Document whole = workload("pytorchjob");
  auto& a = whole.GetAllocator();
  whole["metadata"].AddMember(
      "annotations",
      json_value(R"({"kubegap.io/exempt":"checkpoint-volume","kubegap.io/exempt-reason":"saves to s3 via the SDK"})",
                 a),
      a);
  const Answer exempt = answer(Harness(), review_for(whole));
  EXPECT_TRUE(exempt.warnings_of(kCheckpoint).empty()) << listing(exempt.warnings);
  EXPECT_EQ(exempt.annotations.at(kCheckpoint).rfind("exempt: saves to s3 via the SDK", 0), 0u)
      << exempt.annotations.at(kCheckpoint);
  EXPECT_EQ(exempt.warnings_of(kZone).size(), 1u);

  rapidjson::Document one = workload("pytorchjob");
  auto& b = one.GetAllocator();
  one["spec"]["pytorchReplicaSpecs"]["Master"]["template"].AddMember(
      "metadata", json_value(R"({"annotations":{"kubegap.io/exempt":"checkpoint-volume"}})", b), b);
  const Answer partly = answer(Harness(), review_for(one));
  expect_warnings(Answer{{}, partly.warnings_of(kCheckpoint), {}, {}, "", 0, 0},
                  {{kCheckpoint, "replica Worker", {"/checkpoints"}}}, "Master exempted");
}

TEST(WorkloadKinds, WorkloadInAnExcludedNamespaceGivesNothing) {
  rapidjson::Document job = workload("pytorchjob");
  job["metadata"]["namespace"] = "kube-system";
  const Answer a = answer(Harness(), review_for(job));
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
}

// A RayCluster runs no workload of its own: without a driver that trains (its head's
// command) its checkpoint volume is not judged (auto class); the GPU group still gets the
// health check. With a training driver on the head, the workers are judged as training.
TEST(WorkloadKinds, ARayClusterIsJudgedAsTrainingOnlyWhenItsHeadRunsTraining) {
  const Answer idle = run("raycluster");
  EXPECT_TRUE(idle.warnings_of(kCheckpoint).empty()) << listing(idle.warnings);
  EXPECT_EQ(idle.annotations.at(kCheckpoint).rfind("not evaluated: no sign that this pod trains", 0), 0u);
  EXPECT_EQ(idle.warnings_of(kGpu).size(), 1u) << listing(idle.warnings);

  rapidjson::Document driver = workload("raycluster");
  auto& head = driver["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0];
  head.AddMember("command", json_value(R"(["python", "train_llm.py", "--num-epochs", "3"])", driver.GetAllocator()),
                 driver.GetAllocator());
  const Answer trains = answer(Harness(), review_for(driver));
  ASSERT_EQ(trains.warnings_of(kCheckpoint).size(), 1u) << listing(trains.warnings);
  EXPECT_NE(trains.warnings_of(kCheckpoint)[0].find("workerGroup gpu-group"), std::string::npos);
}

// A Katib trial on CPU (withoutAccelerator on the Experiment's wraps entry) is judged when
// its command trains, and reported on the Experiment; one that does not train says nothing.
TEST(WorkloadKinds, AKatibTrialOnCpuIsJudgedWhenItsCommandTrains) {
  const auto experiment = [](const std::string& args) {
    return parse_json(R"({"apiVersion":"kubeflow.org/v1beta1","kind":"Experiment","metadata":{"name":"hpo",
      "namespace":"ml"},"spec":{"trialTemplate":{"primaryContainerName":"t","trialSpec":{"apiVersion":"batch/v1",
      "kind":"Job","spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"t","image":"t",
      "args":)" + args +
                      R"(,"volumeMounts":[{"name":"m","mountPath":"/app/models"}]}],
      "volumes":[{"name":"m","emptyDir":{}}]}}}}}}})");
  };
  const Answer trains =
      answer(Harness(), review_for(experiment(R"(["--lr","${trialParameters.lr}","--model-dir","/app/models/x"])")));
  ASSERT_EQ(trains.warnings_of(kCheckpoint).size(), 1u) << listing(trains.warnings);
  EXPECT_NE(trains.warnings_of(kCheckpoint)[0].find("trial"), std::string::npos) << trains.warnings_of(kCheckpoint)[0];
  const Answer evaluates = answer(Harness(), review_for(experiment(R"(["--threshold","0.4"])")));
  EXPECT_TRUE(evaluates.warnings.empty()) << listing(evaluates.warnings);
}

// A Katib v1alpha3 Experiment, as the API server sends it: its trial is Go template text.
// The webhook reads it; a v1beta1 trial template in a ConfigMap it cannot see is noted.
TEST(WorkloadKinds, AKatibV1alpha3TrialInGoTemplateTextIsJudgedInTheReview) {
  const auto v1alpha3 = parse_json(R"({"apiVersion":"kubeflow.org/v1alpha3","kind":"Experiment",
    "metadata":{"name":"hpo","namespace":"ml"},"spec":{"trialTemplate":{"goTemplate":{"rawTemplate":
    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{.Trial}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: {{.Trial}}\n        image: example/train\n        command:\n        - python3\n        - /opt/train.py\n        - --model-dir=/tmp/model\n        {{- with .HyperParameters}}\n        {{- range .}}\n        - \"{{.Name}}={{.Value}}\"\n        {{- end}}\n        {{- end}}\n        resources:\n          limits: {nvidia.com/gpu: 1}\n      restartPolicy: Never\n"}}}})");
  const Answer text = answer(Harness(), review_for(v1alpha3));
  ASSERT_EQ(text.warnings_of(kCheckpoint).size(), 1u) << listing(text.warnings);
  EXPECT_NE(text.warnings_of(kCheckpoint)[0].find("trial"), std::string::npos) << text.warnings_of(kCheckpoint)[0];

  const auto in_config_map = parse_json(R"({"apiVersion":"kubeflow.org/v1beta1","kind":"Experiment",
    "metadata":{"name":"hpo","namespace":"ml"},"spec":{"trialTemplate":{"configMap":
    {"configMapName":"trial-templates","configMapNamespace":"ml","templatePath":"train.yaml"}}}})");
  const Answer unseen = answer(Harness(), review_for(in_config_map));
  EXPECT_TRUE(unseen.warnings.empty()) << listing(unseen.warnings);
  std::string notes;
  for (const auto& [key, value] : unseen.annotations) notes += key + "=" + value + "\n";
  EXPECT_NE(notes.find("trial: not evaluated: its template is entry train.yaml of ConfigMap ml/trial-templates, "
                       "which is not in view"),
            std::string::npos)
      << notes;
}

// A runtime reviewed on its own is a template: mounting nothing for its trainer is a note
// (each TrainJob is judged with what it patches in); mounting a volume that dies with the
// pod is a warning (every TrainJob inherits it).
TEST(WorkloadKinds, ARuntimeThatMountsNothingIsANoteOneThatMountsScratchWarns) {
  const std::string bare = R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime",
    "metadata":{"name":"torch"},"spec":{"template":{"spec":{"replicatedJobs":[{"name":"node","template":{"spec":
    {"template":{"spec":{"containers":[{"name":"node","image":"pytorch/pytorch","command":["torchrun","train.py"],
    "resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}}]}}}})";
  const Answer note = answer(Harness(), review_for(parse_json(bare)));
  EXPECT_TRUE(note.warnings_of(kCheckpoint).empty()) << listing(note.warnings);
  EXPECT_EQ(note.annotations.at(kCheckpoint).rfind("note: a runtime is a template", 0), 0u)
      << note.annotations.at(kCheckpoint);

  rapidjson::Document scratch = parse_json(bare);
  auto& alloc = scratch.GetAllocator();
  auto& pod = scratch["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  pod.AddMember("volumes", json_value(R"([{"name":"out","emptyDir":{}}])", alloc), alloc);
  pod["containers"][0].AddMember("volumeMounts", json_value(R"([{"name":"out","mountPath":"/out"}])", alloc), alloc);
  const Answer warns = answer(Harness(), review_for(scratch));
  EXPECT_EQ(warns.warnings_of(kCheckpoint).size(), 1u) << listing(warns.warnings);
}

// The JobSet and pods Kubeflow Trainer makes from a TrainJob carry the TrainJob's name in
// their audit annotations, so a reviewer can trace them to what a person applied.
TEST(WorkloadKinds, TheJobSetAndPodsOfATrainJobNameIt) {
  rapidjson::Document jobset = workload("jobset");
  auto& alloc = jobset.GetAllocator();
  jobset["metadata"].AddMember(
      "ownerReferences",
      json_value(R"([{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","name":"llama-sft",
                      "uid":"u","controller":true}])",
                 alloc),
      alloc);
  const Answer made = answer(Harness(), review_for(jobset));
  const std::string ns = str(jobset["metadata"]["namespace"]);
  ASSERT_EQ(made.annotations.count("input"), 1u);
  EXPECT_EQ(made.annotations.at("input"), "note: made by Kubeflow Trainer for TrainJob " + ns + "/llama-sft");

  const Answer plain = run("jobset");
  EXPECT_EQ(plain.annotations.count("input"), 0u);  // a JobSet nobody's TrainJob made

  const rapidjson::Document pod = parse_json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"llama-sft-node-0-0",
    "namespace":"ml","labels":{"jobset.sigs.k8s.io/jobset-name":"llama-sft",
    "trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},
    "spec":{"containers":[{"name":"node","image":"pytorch/pytorch","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})");
  const Answer pod_answer = answer(Harness(), review_for(pod));
  ASSERT_EQ(pod_answer.annotations.count("input"), 1u);
  EXPECT_EQ(pod_answer.annotations.at("input"), "note: made by Kubeflow Trainer for TrainJob ml/llama-sft");
}

// A TrainJob is judged as the JobSet its runtime and its own fields make. Without its
// runtime, what the runtime decides (volumes, tolerations) is not evaluated, and what the
// TrainJob alone sets (its patch's zone pin) is still judged.
TEST(WorkloadKinds, ATrainJobWithoutItsRuntimeIsJudgedOnWhatItSetsAlone) {
  const Answer a = run("trainjob");
  EXPECT_TRUE(a.result.evaluated);
  ASSERT_EQ(a.warnings.size(), 1u) << listing(a.warnings);
  EXPECT_EQ(a.warnings_of(kZone).size(), 1u) << listing(a.warnings);
  const std::string missing =
      "not evaluated: runtime ClusterTrainingRuntime/torch-distributed not found (no cluster view)";
  EXPECT_EQ(a.annotations.at(kCheckpoint), missing);
  EXPECT_EQ(a.annotations.at(kGpu), missing);
  EXPECT_NE(a.annotations.at("input").find("judged on what the TrainJob alone sets"), std::string::npos);
}

// The cluster view's runtime gives the TrainJob its pod template: a trainer with no
// durable volume gets the checkpoint warning; the same TrainJob with a PVC patched in
// gets none.
TEST(WorkloadKinds, ATrainJobIsJudgedWithTheRuntimeOfTheClusterView) {
  const std::string runtime = R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime",
    "metadata":{"name":"torch-distributed"},"spec":{"template":{"spec":{"replicatedJobs":[{"name":"node",
    "template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},
    "spec":{"template":{"spec":{"containers":[{"name":"node","image":"pytorch/pytorch"}]}}}}}]}}}})";
  auto runtimes = std::make_shared<const kubegap::RuntimeSet>(
      std::vector<kubegap::TrainingRuntimeInfo>{{"ClusterTrainingRuntime", "", "torch-distributed", runtime}}, true);
  const Harness harness(default_policy(), std::make_shared<const ClusterSnapshot>(nullptr, nullptr, runtimes));
  const Answer bare = run("trainjob", {}, harness);
  ASSERT_EQ(bare.warnings_of(kCheckpoint).size(), 1u) << listing(bare.warnings);
  EXPECT_NE(bare.warnings_of(kCheckpoint)[0].find("replicatedJob node"), std::string::npos);
  EXPECT_NE(bare.annotations.at("input").find("runtime ClusterTrainingRuntime/torch-distributed"), std::string::npos);

  rapidjson::Document patched = workload("trainjob");
  auto& alloc = patched.GetAllocator();
  auto& pod = patched["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
                     ["template"]["spec"]["template"]["spec"];
  pod.AddMember("volumes", json_value(R"([{"name":"ckpt","persistentVolumeClaim":{"claimName":"runs"}}])", alloc),
                alloc);
  pod.AddMember("containers",
                json_value(R"([{"name":"node","volumeMounts":[{"name":"ckpt","mountPath":"/checkpoints"}]}])", alloc),
                alloc);
  const Answer with_pvc = answer(harness, review_for(patched));
  EXPECT_TRUE(with_pvc.warnings_of(kCheckpoint).empty()) << listing(with_pvc.warnings);
  EXPECT_EQ(with_pvc.annotations.count(kCheckpoint), 0u);

  // A Katib trial that is this TrainJob is resolved the same way (Katib over Trainer v2).
  rapidjson::Document experiment = workload("katib-experiment");
  auto& ea = experiment.GetAllocator();
  rapidjson::Value trial(rapidjson::kObjectType);
  const rapidjson::Document trainjob = workload("trainjob");
  trial.CopyFrom(trainjob, ea);
  experiment["spec"]["trialTemplate"]["trialSpec"] = trial;
  const Answer wrapped = answer(harness, review_for(experiment));
  ASSERT_EQ(wrapped.warnings_of(kCheckpoint).size(), 1u) << listing(wrapped.warnings);
  EXPECT_NE(wrapped.warnings_of(kCheckpoint)[0].find("trial: replicatedJob node"), std::string::npos);
  const Answer wrapped_alone = answer(Harness(), review_for(experiment));  // no view: no runtime
  EXPECT_TRUE(wrapped_alone.warnings_of(kCheckpoint).empty()) << listing(wrapped_alone.warnings);
  EXPECT_NE(wrapped_alone.annotations.at("input").find("trial: runtime ClusterTrainingRuntime/torch-distributed not "
                                                       "found (no cluster view)"),
            std::string::npos);

  // Another runtime name is not the one in the view: not found.
  rapidjson::Document other = workload("trainjob");
  other["spec"]["runtimeRef"]["name"] = "deepspeed-distributed";
  const Answer missing = answer(harness, review_for(other));
  EXPECT_EQ(missing.annotations.at(kCheckpoint),
            "not evaluated: runtime ClusterTrainingRuntime/deepspeed-distributed not found (not in the known "
            "runtimes)");
}

TEST(WorkloadKinds, AWrongTypeInsideATemplateIsAnErrorAnnotationNamingItsJsonPath) {
  rapidjson::Document pytorch = workload("pytorchjob");
  pytorch["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].SetObject();
  const Answer a = answer(Harness(), review_for(pytorch));
  EXPECT_FALSE(a.result.evaluated);
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_EQ(a.annotations,
            (std::map<std::string, std::string>{
                {"error",
                 "not evaluated: request.object.spec.pytorchReplicaSpecs.Worker.template.spec.containers: "
                 "expected an array"}}));

  rapidjson::Document volcano = workload("volcano-job");
  volcano["spec"]["tasks"][1]["template"]["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] = 7;
  const Answer b = answer(Harness(), review_for(volcano));
  EXPECT_TRUE(b.warnings.empty()) << listing(b.warnings);
  EXPECT_EQ(
      b.annotations,
      (std::map<std::string, std::string>{{"error",
                                           "not evaluated: request.object.spec.tasks[1].template.spec.nodeSelector."
                                           "topology.kubernetes.io/zone: expected a string"}}));
}

// ---------------------------------------------------------------------------------------
// PodDisruptionBudgets that select the labels the controller adds.

struct PdbCase {
  std::string name;
  std::string fixture;
  std::string pdb_namespace;
  kubegap::StringMap selector;
  // The parts the budget leaves unprotected: nullopt when it protects every part; ""
  // for a kind without parts.
  std::optional<std::string> unprotected;
};

void PrintTo(const PdbCase& c, std::ostream* os) { *os << c.name; }

class WorkloadPdb : public ::testing::TestWithParam<PdbCase> {};

TEST_P(WorkloadPdb, SelectsThePodsByTheLabelsTheirControllerAdds) {
  const PdbCase& c = GetParam();
  // Every check for every class, as a team that asks budgets of its serving kinds
  // (LeaderWorkerSet) would configure: the labels are what is under test here.
  Policy policy = default_policy();
  policy.checks_by_class[kubegap::WorkloadClass::kServing] = policy.enabled_checks;
  const Answer a = run(c.fixture, {}, Harness(policy, snapshot({budget(c.pdb_namespace, c.selector)})));
  EXPECT_TRUE(a.result.evaluated);
  const auto warnings = a.warnings_of(kBudget);
  if (!c.unprotected) {
    EXPECT_TRUE(warnings.empty()) << listing(warnings);
    EXPECT_FALSE(a.annotations.contains(kBudget)) << a.annotations.at(kBudget);
    EXPECT_FALSE(a.warnings.empty()) << "the other gaps of the fixture still warn";
    return;
  }
  ASSERT_EQ(warnings.size(), 1u) << listing(a.warnings);
  const Expected expected{kBudget, *c.unprotected, {"PodDisruptionBudget"}};
  expect_warnings(Answer{{}, warnings, {}, {}, "", 0, 0}, {expected}, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Labels, WorkloadPdb,
    ::testing::Values(
        // Kubeflow training-operator: job-name, replica-type in lower case.
        PdbCase{"pytorchjob_by_job_name",
                "pytorchjob",
                kNamespace,
                {{"training.kubeflow.org/job-name", "pytorch-simple"}},
                std::nullopt},
        PdbCase{"pytorchjob_other_job_name",
                "pytorchjob",
                kNamespace,
                {{"training.kubeflow.org/job-name", "pytorch-other"}},
                "replica Master, replica Worker"},
        PdbCase{"pytorchjob_same_name_other_namespace",
                "pytorchjob",
                "team-b",
                {{"training.kubeflow.org/job-name", "pytorch-simple"}},
                "replica Master, replica Worker"},
        PdbCase{
            "pytorchjob_workers_only",
            "pytorchjob",
            kNamespace,
            {{"training.kubeflow.org/job-name", "pytorch-simple"}, {"training.kubeflow.org/replica-type", "worker"}},
            "replica Master"},
        PdbCase{"tfjob_chief_only",
                "tfjob",
                kNamespace,
                {{"training.kubeflow.org/job-name", "dist-mnist-for-e2e-test"},
                 {"training.kubeflow.org/replica-type", "chief"}},
                "replica Worker"},
        // mpi-operator v2beta1: job-name and job-role (launcher, worker).
        PdbCase{
            "mpijob_workers_only",
            "mpijob",
            kNamespace,
            {{"training.kubeflow.org/job-name", "tensorflow-benchmarks"}, {"training.kubeflow.org/job-role", "worker"}},
            "replica Launcher"},
        // JobSet: jobset-name, replicatedjob-name.
        PdbCase{"jobset_by_jobset_name",
                "jobset",
                kNamespace,
                {{"jobset.sigs.k8s.io/jobset-name", "pytorch-resnet"}},
                std::nullopt},
        PdbCase{"jobset_other_jobset_name",
                "jobset",
                kNamespace,
                {{"jobset.sigs.k8s.io/jobset-name", "other"}},
                "replicatedJob driver, replicatedJob workers"},
        PdbCase{"jobset_workers_only",
                "jobset",
                kNamespace,
                {{"jobset.sigs.k8s.io/replicatedjob-name", "workers"}},
                "replicatedJob driver"},
        // batch/v1 Job: batch.kubernetes.io/job-name and the legacy job-name.
        PdbCase{"job_by_job_name", "job", kNamespace, {{"batch.kubernetes.io/job-name", "llm-finetune"}}, std::nullopt},
        PdbCase{"job_by_legacy_job_name", "job", kNamespace, {{"job-name", "llm-finetune"}}, std::nullopt},
        PdbCase{"job_other_job_name", "job", kNamespace, {{"batch.kubernetes.io/job-name", "other"}}, ""},
        // Volcano: job-name, task-spec.
        PdbCase{
            "volcano_by_job_name", "volcano-job", kNamespace, {{"volcano.sh/job-name", "pytorch-job"}}, std::nullopt},
        PdbCase{"volcano_other_job_name",
                "volcano-job",
                kNamespace,
                {{"volcano.sh/job-name", "other"}},
                "task master, task worker"},
        PdbCase{"volcano_worker_task_only",
                "volcano-job",
                kNamespace,
                {{"volcano.sh/job-name", "pytorch-job"}, {"volcano.sh/task-spec", "worker"}},
                "task master"},
        // KubeRay: a RayCluster's name is known, a RayJob's generated cluster name is not.
        PdbCase{"raycluster_by_cluster",
                "raycluster",
                kNamespace,
                {{"ray.io/cluster", "raycluster-complete"}},
                std::nullopt},
        PdbCase{"rayjob_by_its_own_name_is_not_its_cluster",
                "rayjob",
                kNamespace,
                {{"ray.io/cluster", "rayjob-sample"}},
                "workerGroup gpu-group"},
        // The CPU head of an (auto) RayJob is not evaluated: workers are all there is.
        PdbCase{"rayjob_worker_nodes_only", "rayjob", kNamespace, {{"ray.io/node-type", "worker"}}, std::nullopt},
        // LeaderWorkerSet: name; template labels count too.
        PdbCase{"leaderworkerset_by_name",
                "leaderworkerset",
                kNamespace,
                {{"leaderworkerset.sigs.k8s.io/name", "vllm"}},
                std::nullopt},
        PdbCase{
            "leaderworkerset_leader_template_label", "leaderworkerset", kNamespace, {{"role", "leader"}}, "worker"}),
    [](const auto& info) { return info.param.name; });

TEST(WorkloadBudget, GenerateNamedJobDoesNotGetTheNameBasedLabel) {
  // Its name is unknown at admission: no PDB on a job-name value can be known to match.
  for (const char* value : {"llm-sweep-", "llm-sweep-*", ""}) {
    for (const char* key : {"batch.kubernetes.io/job-name", "job-name"}) {
      const Answer a =
          run("job-generate-name", {}, Harness(default_policy(), snapshot({budget(kNamespace, {{key, value}})})));
      EXPECT_EQ(a.warnings_of(kBudget).size(), 1u) << key << "=" << value << listing(a.warnings);
    }
  }
  // The label is left out, not given a made-up value: a budget requiring it to exist
  // selects the named Job's pods but not the generateName'd Job's.
  const std::vector<Requirement> exists = {{"batch.kubernetes.io/job-name", "Exists", {}}};
  const Harness with_exists(default_policy(), snapshot({budget(kNamespace, {}, exists)}));
  EXPECT_TRUE(run("job", {}, with_exists).warnings_of(kBudget).empty());
  EXPECT_EQ(run("job-generate-name", {}, with_exists).warnings_of(kBudget).size(), 1u);
  // Its template labels still count.
  const Answer by_app =
      run("job-generate-name", {}, Harness(default_policy(), snapshot({budget(kNamespace, {{"app", "llm-sweep"}})})));
  EXPECT_TRUE(by_app.result.evaluated);
  EXPECT_EQ(by_app.result.name, "llm-sweep-*");
  EXPECT_TRUE(by_app.warnings_of(kBudget).empty()) << listing(by_app.warnings);
  EXPECT_FALSE(by_app.annotations.contains(kBudget));
}

TEST(WorkloadBudget, WellConfiguredWorkloadsWithTheirBudgetGetNoWarningAndNoAnnotation) {
  const struct {
    const char* fixture;
    const char* key;
    const char* value;
  } cases[] = {{"pytorchjob-well-configured", "training.kubeflow.org/job-name", "pytorch-simple"},
               {"jobset-well-configured", "jobset.sigs.k8s.io/jobset-name", "pytorch-resnet"},
               {"volcano-job-well-configured", "volcano.sh/job-name", "pytorch-job"},
               {"mpijob-well-configured", "training.kubeflow.org/job-name", "tensorflow-benchmarks"},
               {"job-well-configured", "batch.kubernetes.io/job-name", "llm-finetune"},
               {"job-well-configured", "job-name", "llm-finetune"}};
  for (const auto& c : cases) {
    const Harness harness(default_policy(), snapshot({budget(kNamespace, {{c.key, c.value}})}));
    const Answer a = run(c.fixture, {}, harness);
    EXPECT_TRUE(a.result.evaluated) << c.fixture;
    EXPECT_TRUE(a.warnings.empty()) << c.fixture << listing(a.warnings);
    EXPECT_TRUE(a.annotations.empty()) << c.fixture << ": nothing to say but the class: " << a.result.body;
    EXPECT_FALSE(a.classes.empty()) << c.fixture;
  }
  // A RayJob's cluster name is generated: its budget selects on the node labels KubeRay
  // adds to the head and to every worker.
  const std::vector<Requirement> ray_node = {{"ray.io/node-type", "Exists", {}}};
  const Answer ray =
      run("rayjob-well-configured", {}, Harness(default_policy(), snapshot({budget(kNamespace, {}, ray_node)})));
  EXPECT_TRUE(ray.warnings.empty()) << listing(ray.warnings);
  EXPECT_TRUE(ray.annotations.empty()) << ray.result.body;
}

TEST(WorkloadBudget, EmptySelectorProtectsEveryPartOfEveryWorkloadInTheNamespace) {
  const Harness harness(default_policy(), snapshot({budget(kNamespace, {})}));
  for (const char* fixture :
       {"pytorchjob", "jobset", "rayjob", "volcano-job", "leaderworkerset", "job-generate-name"}) {
    EXPECT_TRUE(run(fixture, {}, harness).warnings_of(kBudget).empty()) << fixture;
  }
}

// ---------------------------------------------------------------------------------------
// The table is data: the policy file extends, replaces and removes rows.

constexpr const char* kTrainingRunPolicy = R"(apiVersion: kubegap.io/v1alpha1
kind: Policy
workloadKinds:
  - group: example.com
    kind: TrainingRun
    training: true
    templates:
      - path: spec.workers[name].template
        part: "worker {}"
    podLabels:
      example.com/run-name: "{name}"
)";

constexpr const char* kTrainingRun = R"(apiVersion: example.com/v1
kind: TrainingRun
metadata:
  name: run-42
  namespace: ml-research
spec:
  workers:
    - name: trainer
      replicas: 4
      template:
        spec:
          containers:
            - name: trainer
              image: ghcr.io/example/trainer:3.0
              resources:
                limits:
                  nvidia.com/gpu: 8
    - name: evaluator
      replicas: 1
      template:
        spec:
          containers:
            - name: evaluator
              image: ghcr.io/example/trainer:3.0
)";

TEST(WorkloadPolicy, ANewCrdRowInThePolicyFileMakesItsKindEvaluatedWithoutCode) {
  const rapidjson::Document run_object = yaml_object(kTrainingRun, "trainingrun.yaml");
  const std::string body = review_for(run_object);

  const Answer by_default = answer(Harness(), body);
  EXPECT_FALSE(by_default.result.evaluated) << "not in the default table";
  EXPECT_TRUE(by_default.annotations.empty());

  const Policy policy = parse_policy(kTrainingRunPolicy, "team-policy.yaml");
  ASSERT_NE(policy.workload_kind("example.com", "TrainingRun"), nullptr);
  const Answer a = answer(Harness(policy), body);
  EXPECT_TRUE(a.result.evaluated);
  expect_warnings(
      a, {{kCheckpoint, "worker trainer, worker evaluator", kNoDurable}, {kGpu, "worker trainer", kDefault300}},
      "TrainingRun");
  EXPECT_EQ(a.annotations.at(kBudget), kNoClusterView);

  // Its podLabels are data too: a budget on them protects the run.
  const Answer protected_run =
      answer(Harness(policy, snapshot({budget(kNamespace, {{"example.com/run-name", "run-42"}})})), body);
  EXPECT_FALSE(protected_run.annotations.contains(kBudget));
  EXPECT_TRUE(protected_run.warnings_of(kBudget).empty());

  // Adding a row keeps the default rows.
  EXPECT_EQ(run("pytorchjob", {}, Harness(policy)).warnings, run("pytorchjob").warnings);
}

TEST(WorkloadPolicy, ARowForAnExistingKindReplacesTheDefaultRow) {
  const Policy policy = parse_policy(R"(workloadKinds:
  - group: kubeflow.org
    kind: PyTorchJob
    training: true
    templates:
      - path: spec.pytorchReplicaSpecs.*.template
        part: "rank group {}"
)",
                                     "team-policy.yaml");
  const Answer a = run("pytorchjob", {}, Harness(policy));
  const auto checkpoint = a.warnings_of(kCheckpoint);
  ASSERT_EQ(checkpoint.size(), 1u) << listing(a.warnings);
  EXPECT_EQ(checkpoint[0].rfind("kubegap/checkpoint-volume: rank group Master, rank group Worker: ", 0), 0u)
      << checkpoint[0];
  // The replacing row has no podLabels: a budget on the operator's job-name no longer
  // counts, because the row no longer says the pods carry it.
  const Answer b =
      run("pytorchjob", {},
          Harness(policy, snapshot({budget(kNamespace, {{"training.kubeflow.org/job-name", "pytorch-simple"}})})));
  EXPECT_EQ(b.warnings_of(kBudget).size(), 1u) << listing(b.warnings);
}

TEST(WorkloadPolicy, EnabledFalseOnThePyTorchJobRowStopsEvaluatingPyTorchJobsOnly) {
  const Policy policy = parse_policy(R"(workloadKinds:
  - group: kubeflow.org
    kind: PyTorchJob
    enabled: false
)",
                                     "team-policy.yaml");
  EXPECT_EQ(policy.workload_kind("kubeflow.org", "PyTorchJob"), nullptr);
  const Harness harness(policy);
  const Answer a = run("pytorchjob", {}, harness);
  EXPECT_FALSE(a.result.evaluated);
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
  EXPECT_EQ(a.response_members, 2u);
  EXPECT_FALSE(run("tfjob", {}, harness).warnings.empty()) << "other kubeflow kinds stay evaluated";
}

// config_error: the message of the ConfigError that parsing `yaml` throws ("" if none).
std::string config_error(const std::string& yaml) {
  try {
    parse_policy(yaml, "team-policy.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(WorkloadPolicy, AMalformedTemplatePathIsRejectedWithFileLineAndKey) {
  for (const char* path :
       {"spec..template", "spec.a[b", "spec.workers[na me].template", ".spec.template", "spec.template.",
        "spec.[name].template", "spec.workers[name]x.template", "spec.work ers.template"}) {
    const std::string yaml = std::string(R"(apiVersion: kubegap.io/v1alpha1
kind: Policy
workloadKinds:
  - group: example.com
    kind: TrainingRun
    training: true
    templates:
      - path: ")") + path + R"("
        part: "worker {}"
)";
    const std::string error = config_error(yaml);
    EXPECT_EQ(error.rfind("team-policy.yaml:8: workloadKinds.templates.path: ", 0), 0u)
        << path << " -> " << (error.empty() ? "(accepted)" : error);
  }
  // Well-formed paths are accepted.
  for (const char* path : {"", "spec.template", "spec.workers[name].template", "spec.*.template", "spec.a_b-c.t"}) {
    const std::string yaml =
        std::string("workloadKinds:\n  - {group: example.com, kind: TrainingRun, templates: [{path: \"") + path +
        "\", part: x}]}\n";
    EXPECT_EQ(config_error(yaml), "") << path;
  }
}

TEST(WorkloadPolicy, AnUnknownKeyInARowOrATemplateIsRejectedWithFileLineAndKey) {
  const std::string in_row = config_error(R"(workloadKinds:
  - group: example.com
    kind: TrainingRun
    replicaSpecs: spec.workers
    templates:
      - path: spec.template
        part: ""
)");
  EXPECT_EQ(in_row.rfind("team-policy.yaml:4: workloadKinds.replicaSpecs: unknown key", 0), 0u) << in_row;

  const std::string in_template = config_error(R"(workloadKinds:
  - group: example.com
    kind: TrainingRun
    templates:
      - paht: spec.template
        part: ""
)");
  EXPECT_EQ(in_template.rfind("team-policy.yaml:5: workloadKinds.templates.paht: unknown key", 0), 0u) << in_template;

  const std::string no_template = config_error(R"(workloadKinds:
  - group: example.com
    kind: TrainingRun
    training: true
)");
  EXPECT_EQ(no_template.rfind("team-policy.yaml:2: workloadKinds: kind TrainingRun needs at least one template", 0), 0u)
      << no_template;
}

// ---------------------------------------------------------------------------------------
// Pods created by a workload's controller.

TEST(WorkloadOwnedPods, PodOwnedByAPyTorchJobKeepsItsAuditAnnotations) {
  const Answer a = run("pytorchjob-worker-pod");
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_EQ(a.result.kind, "Pod");
  std::set<std::string> keys;
  for (const auto& [key, value] : a.annotations) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{kCheckpoint, kBudget, kZone, kGpu}));
  EXPECT_NE(a.annotations.at(kCheckpoint).find("/checkpoints"), std::string::npos) << a.annotations.at(kCheckpoint);
  EXPECT_NE(a.annotations.at(kZone).find("us-east-1a"), std::string::npos) << a.annotations.at(kZone);
  EXPECT_EQ(a.annotations.at(kBudget), kNoClusterView);

  // The operator's labels are on the Pod itself: the job's budget protects it.
  const Answer covered =
      run("pytorchjob-worker-pod", {},
          Harness(default_policy(),
                  snapshot({budget(kNamespace, {{"training.kubeflow.org/job-name", "pytorch-simple"}})})));
  EXPECT_FALSE(covered.annotations.contains(kBudget));
  EXPECT_TRUE(covered.annotations.contains(kCheckpoint));
}

TEST(WorkloadOwnedPods, CpuPodOfATrainingJobIsATrainingPodByItsFrameworkLabel) {
  rapidjson::Document pod = workload("pytorchjob-worker-pod");
  pod["spec"]["containers"][0].RemoveMember("resources");
  const Answer a = answer(Harness(), review_for(pod));
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_TRUE(a.annotations.contains(kCheckpoint));
  EXPECT_FALSE(a.annotations.contains(kGpu)) << "no accelerator";

  // Owned by a PyTorchJob (its controller), it is a training pod by its owner's class.
  pod["metadata"].RemoveMember("labels");
  const Answer unlabelled = answer(Harness(), review_for(pod));
  EXPECT_TRUE(unlabelled.annotations.contains(kCheckpoint)) << "owner PyTorchJob: training";

  // Without labels or owner, a CPU pod is a training pod only by what its command runs
  // (policy judgeCpuTraining); with that off, it is not judged.
  pod["metadata"].RemoveMember("ownerReferences");
  const Answer orphan = answer(Harness(), review_for(pod));
  EXPECT_NE(orphan.classes.find("judgeCpuTraining"), std::string::npos) << orphan.classes;
  const Answer gpu_only = answer(Harness(gpu_only_policy()), review_for(pod));
  EXPECT_TRUE(gpu_only.annotations.empty()) << "a CPU pod without framework labels or owner is not a training pod";
}

// ---------------------------------------------------------------------------------------
// Issue 10: training vs serving, controller-added volumes, owners, accelerators.

std::shared_ptr<const ClusterSnapshot> claims_snapshot(std::vector<kubegap::ResourceClaimInfo> claims) {
  return std::make_shared<const ClusterSnapshot>(std::vector<DisruptionBudget>{}, std::vector<kubegap::NodeInfo>{},
                                                 std::move(claims));
}

TEST(WorkloadClasses, JobSetVolumeClaimPoliciesAreDurableVolumesOfThePodsThatMountThem) {
  const Answer a = run("jobset-volume-claim-policy");
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_TRUE(a.warnings_of(kCheckpoint).empty()) << listing(a.warnings);
  EXPECT_FALSE(a.annotations.contains(kCheckpoint)) << a.annotations.at(kCheckpoint);
  // Without the policy the mount names nothing the pod declares: not evaluated, not a
  // claim that it is not durable.
  rapidjson::Document without = workload("jobset-volume-claim-policy");
  without["spec"].RemoveMember("volumeClaimPolicies");
  const Answer b = answer(Harness(), review_for(without));
  EXPECT_TRUE(b.warnings_of(kCheckpoint).empty()) << listing(b.warnings);
  ASSERT_TRUE(b.annotations.contains(kCheckpoint));
  EXPECT_NE(b.annotations.at(kCheckpoint).find("not evaluated: volume \"checkpoints\""), std::string::npos)
      << b.annotations.at(kCheckpoint);
}

TEST(WorkloadClasses, VolcanoJobLevelVolumesAreMountedInEveryTask) {
  const Answer a = run("volcano-job-volumes");
  EXPECT_TRUE(a.warnings_of(kCheckpoint).empty()) << listing(a.warnings);
  rapidjson::Document without = workload("volcano-job-volumes");
  without["spec"].RemoveMember("volumes");
  const Answer b = answer(Harness(), review_for(without));
  EXPECT_EQ(b.warnings_of(kCheckpoint).size(), 1u) << "only emptyDir scratch left" << listing(b.warnings);
}

TEST(WorkloadClasses, DaemonSetPodIsJudgedLikeItsDaemonSet) {
  const Answer a = run("daemonset-pod");
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty()) << "controller tolerations and node affinity are not the user's gaps";
  // The same pod without its owner is a bare GPU pod with every one of those gaps.
  rapidjson::Document orphan = workload("daemonset-pod");
  orphan["metadata"].RemoveMember("ownerReferences");
  const Answer b = answer(Harness(), review_for(orphan));
  EXPECT_EQ(b.warnings_of(kGpu).size(), 1u) << listing(b.warnings);
  // It runs an exporter, not training: checkpoints are not its business.
  EXPECT_TRUE(b.warnings_of(kCheckpoint).empty()) << listing(b.warnings);
  EXPECT_NE(b.annotations.at(kCheckpoint).find("no sign that this pod trains"), std::string::npos);
}

TEST(WorkloadClasses, PodOwnedByAReplicaSetIsServing) {
  const Answer a = run("replicaset-pod");
  EXPECT_TRUE(a.result.evaluated);
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_TRUE(a.annotations.empty());
  // Labelled as training, the same pod is held to every check.
  rapidjson::Document labelled = workload("replicaset-pod");
  auto& alloc = labelled.GetAllocator();
  labelled["metadata"].AddMember("annotations", json_value(R"({"kubegap.io/training-job": "true"})", alloc), alloc);
  const Answer b = answer(Harness(), review_for(labelled));
  EXPECT_EQ(b.warnings_of(kCheckpoint).size(), 1u) << listing(b.warnings);
  EXPECT_EQ(b.warnings_of(kZone).size(), 1u) << listing(b.warnings);
  EXPECT_EQ(b.warnings_of(kGpu).size(), 1u) << listing(b.warnings);
}

TEST(WorkloadClasses, ChecksByClassCanHoldServingToTheTrainingBar) {
  Policy policy = default_policy();
  policy.checks_by_class[kubegap::WorkloadClass::kServing] = {kZone, kGpu};
  const Answer a = run("replicaset-pod", {}, Harness(policy));
  EXPECT_EQ(a.warnings_of(kZone).size(), 1u) << listing(a.warnings);
  EXPECT_EQ(a.warnings_of(kGpu).size(), 1u) << listing(a.warnings);
  EXPECT_TRUE(a.warnings_of(kCheckpoint).empty()) << listing(a.warnings);
}

TEST(WorkloadClasses, AuditActionKeepsTheAnnotationAndDropsTheWarning) {
  const auto policy = parse_policy("checkActions:\n  zone-spread: audit\n", "team-policy.yaml");
  const Answer a = run("pytorchjob", {}, Harness(policy));
  EXPECT_TRUE(a.warnings_of(kZone).empty()) << listing(a.warnings);
  EXPECT_FALSE(a.warnings_of(kCheckpoint).empty()) << "other checks still warn";
  ASSERT_TRUE(a.annotations.contains(kZone));
  EXPECT_NE(a.annotations.at(kZone).find("us-east-1a"), std::string::npos) << a.annotations.at(kZone);
  EXPECT_EQ(std::count(a.result.found.begin(), a.result.found.end(), kZone), 0) << "found lists warnings only";
}

TEST(WorkloadClasses, DraClaimOfAnAcceleratorDeviceClassMakesAnAcceleratorPod) {
  // Unresolved (no cluster view): counts as an accelerator.
  const Answer unresolved = run("dra-pod");
  EXPECT_EQ(unresolved.warnings_of(kCheckpoint).size(), 1u) << listing(unresolved.warnings);
  EXPECT_EQ(unresolved.warnings_of(kGpu).size(), 1u) << listing(unresolved.warnings);
  // Resolved to a GPU device class: the same.
  const Answer gpu =
      run("dra-pod", {},
          Harness(default_policy(), claims_snapshot({{kNamespace, "single-gpu", true, {"gpu.nvidia.com"}}})));
  EXPECT_EQ(gpu.warnings_of(kGpu).size(), 1u) << listing(gpu.warnings);
  // Resolved to a device class that is not an accelerator (a NIC): not a training pod
  // (the pod's torchrun would make it one on CPU: that policy is off here).
  const Answer nic =
      run("dra-pod", {},
          Harness(gpu_only_policy(), claims_snapshot({{kNamespace, "single-gpu", true, {"nic.example.com"}}})));
  EXPECT_TRUE(nic.warnings.empty()) << listing(nic.warnings);
}

TEST(WorkloadClasses, FractionalGpuAnnotationMakesAnAcceleratorPod) {
  rapidjson::Document pod = workload("dra-pod");
  pod["spec"].RemoveMember("resourceClaims");
  pod["spec"]["containers"][0].RemoveMember("resources");
  EXPECT_TRUE(answer(Harness(gpu_only_policy()), review_for(pod)).warnings.empty())
      << "no accelerator, no label: not evaluated";
  auto& alloc = pod.GetAllocator();
  pod["metadata"].AddMember("annotations", json_value(R"({"gpu-fraction": "0.5"})", alloc), alloc);
  const Answer a = answer(Harness(gpu_only_policy()), review_for(pod));
  EXPECT_EQ(a.warnings_of(kGpu).size(), 1u) << listing(a.warnings);
}

TEST(WorkloadClasses, LeaderWorkerSetIsServingUnlessLabelledTraining) {
  EXPECT_TRUE(run("leaderworkerset").warnings.empty());
  rapidjson::Document lws = workload("leaderworkerset");
  auto& alloc = lws.GetAllocator();
  lws["metadata"].AddMember("annotations", json_value(R"({"kubegap.io/training-job": "true"})", alloc), alloc);
  const Answer a = answer(Harness(), review_for(lws));
  EXPECT_EQ(a.warnings_of(kCheckpoint).size(), 1u) << listing(a.warnings);
}

TEST(WorkloadClasses, PolicyFileSetsClassesAndRejectsUnknownOnes) {
  const Policy p = parse_policy(
      "checksByClass:\n  serving: [zone-spread]\nworkloadKinds:\n  - {group: apps, kind: Deployment, class: training, "
      "templates: [{path: spec.template, part: \"\"}]}\n",
      "team-policy.yaml");
  EXPECT_EQ(p.checks_by_class.at(kubegap::WorkloadClass::kServing), std::vector<std::string>{kZone});
  EXPECT_EQ(p.checks_by_class.at(kubegap::WorkloadClass::kTraining), default_policy().enabled_checks);
  EXPECT_EQ(p.workload_kind("apps", "Deployment")->workload_class, kubegap::WorkloadClass::kTraining);
  EXPECT_NE(
      config_error("checksByClass:\n  batch: []\n").find("team-policy.yaml:2: checksByClass: unknown class \"batch\""),
      std::string::npos)
      << config_error("checksByClass:\n  batch: []\n");
  EXPECT_NE(config_error("checksByClass:\n  serving: [frob]\n").find("unknown check \"frob\""), std::string::npos);
  EXPECT_NE(config_error("workloadKinds:\n  - {kind: X, class: web, templates: [{path: spec, part: x}]}\n")
                .find("unknown class \"web\""),
            std::string::npos);
  EXPECT_NE(
      config_error("workloadKinds:\n  - {kind: X, templates: [{path: spec, part: x}], claimTemplates: [\"a..b\"]}\n")
          .find("empty segment"),
      std::string::npos);
}

TEST(WorkloadClasses, ACoordinatorRunningDiagnosticsOutranksAWorkersCheckpointMount) {
  rapidjson::Document job = workload("mpijob");
  auto& alloc = job.GetAllocator();
  auto& launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
  launcher.RemoveMember("args");
  launcher["command"] =
      json_value(R"(["mpirun", "-np", "16", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8"])", alloc);
  auto& worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"];
  worker["containers"][0].AddMember("volumeMounts",
                                    json_value(R"([{"name": "ckpt", "mountPath": "/checkpoints"}])", alloc), alloc);
  worker.AddMember("volumes", json_value(R"([{"name": "ckpt", "emptyDir": {}}])", alloc), alloc);
  const Answer a = answer(Harness(), review_for(job));
  EXPECT_TRUE(a.warnings.empty()) << listing(a.warnings);
  EXPECT_NE(a.classes.find("replica Worker: diagnostic (diagnostic all_reduce_perf)"), std::string::npos) << a.classes;
  // With a training launcher the same worker mount is judged.
  launcher["command"] = json_value(R"(["mpirun", "-np", "16", "python", "train.py"])", alloc);
  EXPECT_EQ(answer(Harness(), review_for(job)).warnings_of(kCheckpoint).size(), 1u);
}

TEST(WorkloadClasses, ALauncherThatRunsAsAWorkerIsJudgedAsAWriter) {
  rapidjson::Document job = workload("mpijob");
  EXPECT_EQ(answer(Harness(), review_for(job)).warnings_of(kCheckpoint).front().find("replica Launcher"),
            std::string::npos);
  auto& alloc = job.GetAllocator();
  job["spec"].AddMember("runLauncherAsWorker", true, alloc);
  const Answer a = answer(Harness(), review_for(job));
  ASSERT_EQ(a.warnings_of(kCheckpoint).size(), 1u) << listing(a.warnings);
  EXPECT_NE(a.warnings_of(kCheckpoint).front().find("replica Launcher, replica Worker"), std::string::npos)
      << listing(a.warnings);
}

// mpi-operator v1alpha1 had one spec.template for the launcher and the workers (still in
// tutorials and old repositories): it is judged like the v2 replicas.
TEST(WorkloadClasses, AnMPIJobV1alpha1TemplateIsJudged) {
  const std::string job = R"({"apiVersion": "kubeflow.org/v1alpha1", "kind": "MPIJob",
    "metadata": {"name": "hvd", "namespace": "ml"},
    "spec": {"gpus": 8, "template": {"spec": {"containers": [{"name": "t", "image": "hvd",
      "command": ["mpirun", "python3", "train.py", "--logdir", "/ebs/log"],
      "resources": {"limits": {"nvidia.com/gpu": "8"}},
      "volumeMounts": [{"name": "ebs", "mountPath": "/ebs"}]}],
      "volumes": [{"name": "ebs", "hostPath": {"path": "/ebs"}}]}}}})";
  const Answer a = answer(Harness(), review_for(parse_json(job)));
  ASSERT_EQ(a.warnings_of(kCheckpoint).size(), 1u) << listing(a.warnings);
  EXPECT_NE(a.warnings_of(kCheckpoint).front().find("template"), std::string::npos) << listing(a.warnings);
}

// An MXJob's Scheduler and Servers hold no checkpoints (MXNet's KVStore keeps parameters
// in memory); only the Workers, which run the script that saves, are judged for them.
TEST(WorkloadClasses, AnMXJobsSchedulerAndServersAreCoordinators) {
  const std::string job = R"({"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
    "metadata": {"name": "mx", "namespace": "ml"},
    "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {
      "Scheduler": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "mx"}]}}},
      "Server": {"replicas": 2, "template": {"spec": {"containers": [{"name": "m", "image": "mx"}]}}},
      "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "m", "image": "mx",
        "command": ["python", "train_mnist.py", "--num-epochs", "30", "--model-prefix", "/ckpt/mnist"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}]}],
        "volumes": [{"name": "ckpt", "PLACEHOLDER": {}}]}}}}}})";
  const auto warnings = [&](const std::string& source) {
    std::string text = job;
    text.replace(text.find("\"PLACEHOLDER\": {}"), 17, source);
    return answer(Harness(), review_for(parse_json(text))).warnings_of(kCheckpoint);
  };
  EXPECT_TRUE(warnings(R"("persistentVolumeClaim": {"claimName": "ws"})").empty());
  const auto lost = warnings(R"("emptyDir": {})");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_NE(lost.front().find("replica Worker"), std::string::npos) << lost.front();
  EXPECT_EQ(lost.front().find("Scheduler"), std::string::npos) << lost.front();
}

// An MXJob in MXTune mode runs autotvm kernel tuning: its TunerTracker, TunerServer and
// Tuner replicas train no model, so nothing of it is judged for checkpoints.
TEST(WorkloadClasses, AnMXJobsTunersWriteNoCheckpoints) {
  const std::string job = R"({"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
    "metadata": {"name": "tune", "namespace": "ml"},
    "spec": {"jobMode": "MXTune", "mxReplicaSpecs": {
      "TunerTracker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "at",
        "command": ["python3", "/home/scripts/start-job.py"]}]}}},
      "TunerServer": {"replicas": 2, "template": {"spec": {"containers": [{"name": "m", "image": "at",
        "command": ["python3", "/home/scripts/start-job.py"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
      "Tuner": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "at",
        "command": ["python3", "/home/scripts/start-job.py"]}]}}}}}})";
  const Answer a = answer(Harness(), review_for(parse_json(job)));
  EXPECT_TRUE(a.warnings_of(kCheckpoint).empty()) << listing(a.warnings);
  EXPECT_FALSE(a.warnings.empty());  // judged: the GPU replica still gets its other checks
}

// A volume source's own readOnly (nfs, csi, azureFile, a claim, ...) makes every mount of
// it read-only, whatever the volumeMount says: it cannot hold checkpoints.
TEST(WorkloadClasses, AReadOnlyVolumeSourceHoldsNoCheckpoints) {
  const std::string job = R"({"apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "trial", "namespace": "ml"},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "seg",
      "command": ["python3", "app.py", "--epochs=20"],
      "resources": {"limits": {"nvidia.com/gpu": "1"}},
      "volumeMounts": [{"name": "exp", "mountPath": "/experiments"}]}],
      "volumes": [{"name": "exp", "SOURCE"}]}}}})";
  const auto warnings = [&](const std::string& source) {
    std::string text = job;
    text.replace(text.find("\"SOURCE\""), 8, source);
    return answer(Harness(), review_for(parse_json(text))).warnings_of(kCheckpoint).size();
  };
  EXPECT_EQ(warnings(R"("nfs": {"server": "10.0.0.2", "path": "/export"})"), 0u);
  EXPECT_EQ(warnings(R"("nfs": {"server": "10.0.0.2", "path": "/export", "readOnly": true})"), 1u);
  EXPECT_EQ(warnings(R"("persistentVolumeClaim": {"claimName": "exp", "readOnly": true})"), 1u);
  EXPECT_EQ(warnings(R"("csi": {"driver": "gcsfuse.csi.storage.gke.io", "readOnly": true})"), 1u);
  EXPECT_EQ(warnings(R"("azureFile": {"secretName": "s", "shareName": "x", "readOnly": false})"), 0u);
}

// The ValidatingWebhookConfiguration must route every kind of the default table to the
// webhook, or its row is dead code in a real cluster.
TEST(WorkloadClasses, TheWebhookConfigurationRoutesEveryDefaultKind) {
  const YAML::Node config = YAML::LoadFile(source_path("manifests/base/validatingwebhookconfiguration.yaml"));
  std::set<std::pair<std::string, std::string>> routed;
  for (const auto& webhook : config["webhooks"]) {
    for (const auto& rule : webhook["rules"]) {
      for (const auto& group : rule["apiGroups"]) {
        for (const auto& resource : rule["resources"])
          routed.emplace(group.as<std::string>(), resource.as<std::string>());
      }
    }
  }
  for (const auto& row : kubegap::default_workload_kinds()) {
    EXPECT_TRUE(routed.contains({row.group, lower(row.kind) + "s"}))
        << row.group << "/" << row.kind << " is not routed";
  }
}

}  // namespace
}  // namespace kgtest

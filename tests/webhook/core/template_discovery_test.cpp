// Kinds with no row: pod templates found by their shape (webhook/core/template_discovery.h),
// alone and through `check`.
#include "webhook/core/template_discovery.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <string>
#include <vector>

#include "webhook/core/policy_loader.h"
#include "webhook/report/offline_check.h"

namespace kgtest {
namespace {

using kubegap::discover_kind;
using kubegap::WorkloadKind;

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  EXPECT_FALSE(doc.HasParseError()) << json;
  return doc;
}

std::vector<std::string> paths_of(const WorkloadKind& row) {
  std::vector<std::string> out;
  for (const auto& t : row.templates) out.push_back(t.path);
  return out;
}

std::vector<std::string> parts_of(const WorkloadKind& row) {
  std::vector<std::string> out;
  for (const auto& t : row.templates) out.push_back(t.part);
  return out;
}

constexpr const char* kPod = R"({"spec": {"containers": [{"name": "c", "image": "i"}]}})";

TEST(DiscoverKind, FindsEveryPodTemplateUnderSpecAndNamesEachPartByWhereItIs) {
  const auto doc = parse(std::string(R"({"spec": {"etReplicaSpecs": {"launcher": {"replicas": 1, "template": )") +
                         kPod + R"(}, "worker": {"template": )" + kPod + R"(}},
      "tasks": [{"name": "a", "template": )" +
                         kPod + R"(}, {"name": "b", "template": )" + kPod + R"(}],
      "steps": [{"template": )" +
                         kPod + R"(}]}})");
  const auto row = discover_kind(doc, "kai.alibabacloud.com", "TrainingJob");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->group, "kai.alibabacloud.com");
  EXPECT_EQ(row->kind, "TrainingJob");
  EXPECT_EQ(row->workload_class, kubegap::WorkloadClass::kAuto) << "judged like a Job: per pod, on evidence";
  EXPECT_TRUE(row->roles.empty());
  EXPECT_TRUE(row->restart.model.empty());
  EXPECT_EQ(paths_of(*row),
            (std::vector<std::string>{"spec.etReplicaSpecs.launcher.template", "spec.etReplicaSpecs.worker.template",
                                      "spec.tasks[name].template", "spec.steps[].template"}));
  EXPECT_EQ(parts_of(*row), (std::vector<std::string>{"launcher", "worker", "tasks {}", "steps {}"}));
}

TEST(DiscoverKind, AJobLikeTemplateIsOnePartWithoutAName) {
  const auto doc = parse(std::string(R"({"spec": {"replicas": 2, "template": )") + kPod + "}}");
  const auto row = discover_kind(doc, "adaptdl.petuum.com", "AdaptDLJob");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(paths_of(*row), std::vector<std::string>{"spec.template"});
  EXPECT_EQ(parts_of(*row), std::vector<std::string>{""});
  EXPECT_NE(kubegap::discovery_note(*row).find("AdaptDLJob (adaptdl.petuum.com) has no row"), std::string::npos);
  EXPECT_NE(kubegap::discovery_note(*row).find("spec.template"), std::string::npos);
}

TEST(DiscoverKind, PartsThatWouldShareANameAreNamedByTheirWholePath) {
  const auto doc = parse(std::string(R"({"spec": {"a": {"worker": {"template": )") + kPod +
                         R"(}}, "b": {"worker": {"template": )" + kPod + "}}}}");
  const auto row = discover_kind(doc, "x.io", "Two");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(parts_of(*row), (std::vector<std::string>{"a.worker", "b.worker"}));
}

TEST(DiscoverKind, WhatHoldsNoPodTemplateIsNotAWorkload) {
  for (const std::string json : {
           R"({"data": {"a": "b"}})",                                                // no spec (ConfigMap)
           R"({"spec": {"ports": [{"port": 80}]}})",                                 // a Service
           R"({"spec": {"template": {"spec": {"containers": []}}}})",                // no container
           R"({"spec": {"template": {"spec": {"containers": "c"}}}})",               // not a list
           R"({"spec": {"template": {"spec": {"containers": ["c"]}}}})",             // not objects
           R"({"spec": {"predictor": {"containers": [{"name": "c"}]}}})",            // a pod spec, not a template
           R"({"template": {"spec": {"containers": [{"name": "c"}]}}})",             // not under spec (PodTemplate)
           R"({"spec": {"a.b": {"template": {"spec": {"containers": [{}]}}}}})",     // a name no path can spell
           R"({"spec": [{"template": {"spec": {"containers": [{"name": "c"}]}}}]})"  // spec not an object
       }) {
    EXPECT_FALSE(discover_kind(parse(json), "x.io", "X").has_value()) << json;
  }
}

TEST(DiscoverKind, LooksNoDeeperThanItsBound) {
  std::string shallow = kPod, deep = kPod;
  for (int i = 0; i < kubegap::kMaxDiscoveryDepth - 1; ++i) shallow = R"({"n": )" + shallow + "}";
  for (int i = 0; i < kubegap::kMaxDiscoveryDepth; ++i) deep = R"({"n": )" + deep + "}";
  EXPECT_TRUE(discover_kind(parse(R"({"spec": )" + shallow + "}"), "x.io", "X").has_value());
  EXPECT_FALSE(discover_kind(parse(R"({"spec": )" + deep + "}"), "x.io", "X").has_value());
}

TEST(DiscoverKind, LooksAtNoMoreValuesThanItsBound) {
  // A template after kMaxDiscoveryVisits other objects is not found: the walk stops.
  std::string json = R"({"spec": {"many": [)";
  for (std::size_t i = 0; i < kubegap::kMaxDiscoveryVisits + 10; ++i) json += "{},";
  json += std::string(R"({"template": )") + kPod + "}]}}";
  EXPECT_FALSE(discover_kind(parse(json), "x.io", "X").has_value());
  std::string few = R"({"spec": {"many": [{}, {}, {"template": )" + std::string(kPod) + "}]}}";
  EXPECT_TRUE(discover_kind(parse(few), "x.io", "X").has_value());
}

// Lists of strings outside the pod templates named like a command, or like the program
// that runs it, are the job's entrypoints; other lists, and those inside a template, are not.
TEST(DiscoverKind, CommandListsOutsideThePodTemplatesAreItsEntrypoints) {
  const auto doc = parse(std::string(R"({"spec": {"config": {"run": {"python": ["train.py", "--lr", "1e-4"]}},
      "worker": {"cmd": ["python", "loop.py"], "hosts": ["a", "b"], "command": [], "args": [1, 2],
                 "template": )") +
                         R"({"spec": {"containers": [{"name": "c", "command": ["python", "in.py"]}]}}}}})");
  const auto row = discover_kind(doc, "batch.tensorstack.dev", "DeepSpeedJob");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->entrypoints, (std::vector<std::string>{"spec.config.run.python", "spec.worker.cmd"}));
  EXPECT_EQ(kubegap::command_program("spec.config.run.python"), "python");
  EXPECT_EQ(kubegap::command_program("spec.worker.cmd"), "");
}

// ---------------------------------------------------------------------------------------
// Through `check`.

constexpr const char* kAdaptDLJob = R"(apiVersion: adaptdl.petuum.com/v1
kind: AdaptDLJob
metadata:
  name: yolo
spec:
  template:
    spec:
      containers:
      - name: main
        command: [python3, train.py]
        env:
        - {name: ADAPTDL_CHECKPOINT_PATH, value: /adaptdl/checkpoint}
        resources:
          limits: {nvidia.com/gpu: 1}
        volumeMounts:
        - {name: scratch, mountPath: /adaptdl/checkpoint}
      volumes:
      - {name: scratch, emptyDir: {}}
)";

const kubegap::Finding* finding_of(const kubegap::CheckedObject& object, const std::string& check) {
  const auto it = std::find_if(object.findings.begin(), object.findings.end(),
                               [&](const kubegap::Finding& f) { return f.check == check; });
  return it == object.findings.end() ? nullptr : &*it;
}

// Kubeflow's v1alpha1 operators keep a list of replicas, each naming its type.
TEST(DiscoverKind, ListElementsAreNamedByTheirReplicaTypeWhenEveryOneHasIt) {
  const auto typed = parse(std::string(R"({"spec": {"replicaSpecs": [{"tfReplicaType": "MASTER", "template": )") +
                           kPod + R"(}, {"tfReplicaType": "PS", "template": )" + kPod + R"(}]}})");
  const auto row = discover_kind(typed, "kubeflow.org", "TFJob");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(paths_of(*row), (std::vector<std::string>{"spec.replicaSpecs[tfReplicaType].template"}));
  // One element without it: by index.
  const auto mixed = parse(std::string(R"({"spec": {"replicaSpecs": [{"replicaType": "MASTER", "template": )") + kPod +
                           R"(}, {"template": )" + kPod + R"(}]}})");
  const auto by_index = discover_kind(mixed, "kubeflow.org", "PyTorchJob");
  ASSERT_TRUE(by_index.has_value());
  EXPECT_EQ(paths_of(*by_index), (std::vector<std::string>{"spec.replicaSpecs[].template"}));
  // Only the known names label: any other member (here one a path could not name) does not.
  const auto dotted =
      parse(std::string(R"({"spec": {"replicaSpecs": [{"a.mxReplicaType": "WORKER", "template": )") + kPod + R"(}]}})");
  const auto unnamed = discover_kind(dotted, "kubeflow.org", "MXJob");
  ASSERT_TRUE(unnamed.has_value());
  EXPECT_EQ(paths_of(*unnamed), (std::vector<std::string>{"spec.replicaSpecs[].template"}));
}

TEST(CheckUnlistedKind, ATrainingRunInAKindWithNoRowIsJudgedAndSaysHow) {
  const auto report = kubegap::check_text(kAdaptDLJob, "adaptdl.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  EXPECT_TRUE(report.skipped.empty());
  const auto& object = report.objects[0];
  EXPECT_EQ(object.kind, "AdaptDLJob");
  const auto* checkpoint = finding_of(object, "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  EXPECT_NE(checkpoint->message.find("/adaptdl/checkpoint"), std::string::npos) << checkpoint->message;
  const auto* note = finding_of(object, "input");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("judged like a Job at the pod templates found at spec.template"), std::string::npos)
      << note->reason;
}

// TensorStack's jobs give the command outside the pod template; the worker containers run
// their image's entrypoint. The command is what the job trains with and where it saves.
TEST(CheckUnlistedKind, TheCommandAKindGivesOutsideItsTemplatesIsWhatItsPartsRun) {
  constexpr const char* kDeepSpeedJob = R"(apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata:
  name: neox
spec:
  config:
    run:
      python: [train.py, configs/410M.yml, --checkpoint_dir, /tmp/neox-ckpt]
  worker:
    replicas: 1
    template:
      spec:
        containers:
        - name: worker
          image: deepspeed-neox
          resources:
            limits: {nvidia.com/gpu: 8}
          volumeMounts:
          - {name: data, mountPath: /data, readOnly: true}
        volumes:
        - {name: data, persistentVolumeClaim: {claimName: neox-data}}
)";
  const auto report = kubegap::check_text(kDeepSpeedJob, "neox.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  EXPECT_NE(checkpoint->message.find("checkpoints at /tmp/neox-ckpt (--checkpoint_dir)"), std::string::npos)
      << checkpoint->message;
  const auto* note = finding_of(report.objects[0], "input");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("running the command at spec.config.run.python"), std::string::npos) << note->reason;
  // Without that list, nothing says the worker trains.
  std::string bare = kDeepSpeedJob;
  bare.erase(bare.find("  config:"), bare.find("  worker:") - bare.find("  config:"));
  const auto quiet = kubegap::check_text(bare, "bare.yaml", kubegap::default_policy());
  ASSERT_EQ(quiet.objects.size(), 1u);
  const auto* unjudged = finding_of(quiet.objects[0], "checkpoint-volume");
  ASSERT_NE(unjudged, nullptr);
  EXPECT_EQ(unjudged->outcome, kubegap::Outcome::kNotEvaluated);
}

TEST(CheckUnlistedKind, AKindWithNoRowAndNoSignOfTrainingIsNotJudged) {
  // Like a Job: a GPU pod whose command shows no training is left alone, and says why.
  std::string other = kAdaptDLJob;
  other.replace(other.find("[python3, train.py]"), 19, "[python3, app.py]");
  other.replace(other.find("ADAPTDL_CHECKPOINT_PATH"), 23, "APP_CACHE");
  for (auto at = other.find("/adaptdl/checkpoint"); at != std::string::npos; at = other.find("/adaptdl/checkpoint"))
    other.replace(at, 19, "/cache");
  const auto report = kubegap::check_text(other, "other.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kNotEvaluated);
  EXPECT_NE(checkpoint->reason.find("no sign that this pod trains"), std::string::npos) << checkpoint->reason;
}

TEST(CheckUnlistedKind, ThePolicyCanTurnItOffAndADroppedKindStaysSkipped) {
  const auto off = kubegap::parse_policy("judgeUnlistedKinds: false\n", "p.yaml");
  EXPECT_FALSE(off.judge_unlisted_kinds);
  auto report = kubegap::check_text(kAdaptDLJob, "adaptdl.yaml", off);
  EXPECT_TRUE(report.objects.empty());
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].kind, "AdaptDLJob");

  // A kind dropped from the table is not brought back by its shape.
  const auto dropped = kubegap::parse_policy(
      "workloadKinds:\n  - {group: adaptdl.petuum.com, kind: AdaptDLJob, enabled: false}\n", "p.yaml");
  EXPECT_EQ(dropped.dropped_kinds,
            (std::vector<std::pair<std::string, std::string>>{{"adaptdl.petuum.com", "AdaptDLJob"}}));
  report = kubegap::check_text(kAdaptDLJob, "adaptdl.yaml", dropped);
  EXPECT_TRUE(report.objects.empty());
  EXPECT_EQ(report.skipped.size(), 1u);
}

TEST(CheckUnlistedKind, AWrapperJudgesAWrappedKindWithNoRowByItsTemplates) {
  std::string inner = kAdaptDLJob;
  std::string indented;
  for (std::size_t start = 0; start < inner.size();) {
    const auto end = inner.find('\n', start);
    indented += "        " + inner.substr(start, end - start) + "\n";
    start = end + 1;
  }
  const std::string wrapper =
      "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata:\n  name: "
      "aw\nspec:\n  components:\n    - template:\n" +
      indented;
  const auto report = kubegap::check_text(wrapper, "aw.yaml", kubegap::default_policy());
  ASSERT_EQ(report.objects.size(), 1u);
  const auto* checkpoint = finding_of(report.objects[0], "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, kubegap::Outcome::kFinding);
  const auto* note = finding_of(report.objects[0], "input");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("AdaptDLJob (adaptdl.petuum.com) has no row"), std::string::npos) << note->reason;
}

}  // namespace
}  // namespace kgtest

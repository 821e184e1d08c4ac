// TrainJob resolution (webhook/core/trainjob_resolver.h): a Kubeflow Trainer TrainJob and
// its runtime become the JobSet the Trainer controller would build (rules and upstream
// files in docs/trainjob-resolution.md).
#include "webhook/core/trainjob_resolver.h"

#include <gtest/gtest.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tests/webhook/test_util.h"

namespace kgtest {
namespace {

using kubegap::resolve_trainjob;
using kubegap::resolve_trainjob_without_runtime;
using kubegap::runtime_ref;
using kubegap::TrainJobResolution;

// The shipped torch-distributed runtime's shape (manifests/base/runtimes), plus a sidecar,
// runtime volumes, tolerations and a claim template, so that keeping them shows.
constexpr const char* kTorchRuntime = R"({
  "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
  "metadata": {"name": "torch-distributed"},
  "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
    "template": {"spec": {
      "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "initializer"},
                                              "spec": {"accessModes": ["ReadWriteOnce"]}}]}],
      "replicatedJobs": [
        {"name": "dataset-initializer",
         "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
           "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "init",
             "env": [{"name": "STORAGE_URI", "value": "hf://old"}]}]}}}}},
        {"name": "node",
         "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
           "spec": {"template": {"spec": {
             "nodeSelector": {"pool": "gpu"},
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
             "volumes": [{"name": "scratch", "emptyDir": {}}],
             "containers": [
               {"name": "node", "image": "pytorch/pytorch", "command": ["torchrun"],
                "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "KEEP", "value": "1"}],
                "resources": {"requests": {"cpu": "4", "memory": "16Gi"}},
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]},
               {"name": "sidecar", "image": "busybox"}]}}}}}]}}}})";

// The shipped deepspeed-distributed runtime's shape: MPI with the launcher as a node.
constexpr const char* kMpiRuntime = R"({
  "kind": "ClusterTrainingRuntime", "metadata": {"name": "deepspeed-distributed"},
  "spec": {"mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "runLauncherAsNode": true}},
    "template": {"spec": {"replicatedJobs": [
      {"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "image": "ds", "command": ["/usr/sbin/sshd"]}]}}}}},
      {"name": "launcher",
       "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
         "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "ds"}]}}}}}]}}}})";

// trainjob: a TrainJob named "llm" in namespace "team" with `spec` (JSON text).
std::string trainjob(const std::string& spec) {
  return R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": "llm", "namespace": "team", "annotations": {"a": "b"}}, "spec": )" +
         spec + "}";
}

TrainJobResolution resolve(const std::string& job, const char* runtime = kTorchRuntime) {
  const rapidjson::Document j = parse_json(job);
  const rapidjson::Document r = parse_json(runtime);
  return resolve_trainjob(j, r);
}

const rapidjson::Value* get(const rapidjson::Value& root, const char* pointer) {
  return rapidjson::Pointer(pointer).Get(root);
}

// json: the compact JSON text at `pointer`, or "<absent>".
std::string json(const rapidjson::Value& root, const char* pointer) {
  const rapidjson::Value* v = get(root, pointer);
  if (v == nullptr) return "<absent>";
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v->Accept(writer);
  return buffer.GetString();
}

bool has_line(const TrainJobResolution& r, const std::string& line) {
  return std::find(r.provenance.begin(), r.provenance.end(), line) != r.provenance.end();
}

constexpr const char* kNode = "/spec/replicatedJobs/1/template/spec/template/spec";
std::string node(const char* rest) { return std::string(kNode) + rest; }

TEST(TrainJobRuntimeRef, DefaultsToClusterTrainingRuntime) {
  const rapidjson::Document j = parse_json(trainjob(R"({"runtimeRef": {"name": "torch-distributed"}})"));
  const kubegap::RuntimeRef ref = runtime_ref(j);
  EXPECT_EQ(ref.kind, "ClusterTrainingRuntime");
  EXPECT_EQ(ref.api_group, "trainer.kubeflow.org");
  EXPECT_EQ(ref.name, "torch-distributed");
}

TEST(TrainJobRuntimeRef, KeepsTrainingRuntimeKind) {
  const rapidjson::Document j =
      parse_json(trainjob(R"({"runtimeRef": {"kind": "TrainingRuntime", "name": "mine", "apiGroup": "x.io"}})"));
  const kubegap::RuntimeRef ref = runtime_ref(j);
  EXPECT_EQ(ref.kind, "TrainingRuntime");
  EXPECT_EQ(ref.api_group, "x.io");
  EXPECT_EQ(ref.name, "mine");
}

TEST(TrainJobRuntimeRef, MissingOrMistypedNameIsEmpty) {
  for (const char* spec : {R"({})", R"({"runtimeRef": {"name": 7}})", R"({"runtimeRef": "x"})"}) {
    const rapidjson::Document j = parse_json(trainjob(spec));
    EXPECT_EQ(runtime_ref(j).name, "") << spec;
    EXPECT_EQ(runtime_ref(j).kind, "ClusterTrainingRuntime") << spec;
  }
  const rapidjson::Document not_object = parse_json("[1]");
  EXPECT_EQ(runtime_ref(not_object).name, "");
}

TEST(TrainJobResolver, IsAJobSetWithTheTrainJobsMetadataAndTheRuntimesJobs) {
  const TrainJobResolution r = resolve(trainjob(R"({"runtimeRef": {"name": "torch-distributed"}, "suspend": true})"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, "/apiVersion"), R"("jobset.x-k8s.io/v1alpha2")");
  EXPECT_EQ(json(r.object, "/kind"), R"("JobSet")");
  EXPECT_EQ(json(r.object, "/metadata"), R"({"name":"llm","namespace":"team","annotations":{"a":"b"}})");
  EXPECT_EQ(json(r.object, "/spec/suspend"), "true");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/name"), R"("dataset-initializer")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/name"), R"("node")");
  // The claim template path the JobSet row reads.
  EXPECT_EQ(json(r.object, "/spec/volumeClaimPolicies/0/templates/0/metadata/name"), R"("initializer")");
  // Runtime fields the TrainJob leaves alone stay.
  EXPECT_EQ(json(r.object, node("/volumes").c_str()), R"([{"name":"scratch","emptyDir":{}}])");
  EXPECT_EQ(json(r.object, node("/containers/0/image").c_str()), R"("pytorch/pytorch")");
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node: volume scratch, nodeSelector, tolerations from runtime "
                       "ClusterTrainingRuntime/torch-distributed"));
  EXPECT_TRUE(has_line(r,
                       "claim template initializer (volumeClaimPolicies) from runtime "
                       "ClusterTrainingRuntime/torch-distributed"));
}

TEST(TrainJobResolver, TrainerFieldsLandOnTheNodeContainerOfTheTrainerStep) {
  const TrainJobResolution r = resolve(trainjob(R"({"trainer": {
      "image": "me/train:1", "command": ["python", "train.py"], "args": ["--epochs", "3"],
      "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
      "resourcesPerNode": {"requests": {"cpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}})"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, node("/containers/0/image").c_str()), R"("me/train:1")");
  EXPECT_EQ(json(r.object, node("/containers/0/command").c_str()), R"(["python","train.py"])");
  EXPECT_EQ(json(r.object, node("/containers/0/args").c_str()), R"(["--epochs","3"])");
  // env upserted by name: A replaced whole (its valueFrom gone), KEEP kept, B appended.
  EXPECT_EQ(json(r.object, node("/containers/0/env").c_str()),
            R"([{"name":"A","value":"2"},{"name":"KEEP","value":"1"},{"name":"B","value":"3"}])");
  // resourcesPerNode merged per resource: cpu replaced, memory kept, the GPU limit added.
  EXPECT_EQ(json(r.object, node("/containers/0/resources").c_str()),
            R"({"requests":{"cpu":"8","memory":"16Gi"},"limits":{"nvidia.com/gpu":"8"}})");
  EXPECT_EQ(json(r.object, node("/containers/1").c_str()), R"({"name":"sidecar","image":"busybox"})");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/replicas"), "1");
  // The initializer's container is not the trainer's.
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/image"), R"("init")");
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node, container node: image, command, args, env, resources from TrainJob "
                       "spec.trainer"));
}

TEST(TrainJobResolver, NumNodesSetsParallelismAndCompletionsOfTheTrainerStep) {
  const TrainJobResolution r = resolve(trainjob(R"({"trainer": {"numNodes": 4}})"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/parallelism"), "4");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/completions"), "4");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/parallelism"), "1");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/replicas"), "1");
  EXPECT_TRUE(has_line(r, "replicatedJob node: parallelism, completions 4 from TrainJob spec.trainer.numNodes"));
}

TEST(TrainJobResolver, RuntimeNumNodesIsTheDefault) {
  std::string runtime = kTorchRuntime;
  runtime.replace(runtime.find(R"("numNodes": 1)"), 13, R"("numNodes": 2)");
  const TrainJobResolution r = resolve(trainjob(R"({})"), runtime.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/parallelism"), "2");
}

TEST(TrainJobResolver, MpiNumNodesCountsTheLauncherAsANode) {
  const TrainJobResolution r =
      resolve(trainjob(R"({"trainer": {"numNodes": 4, "image": "me/ds", "env": [{"name": "X", "value": "1"}],
                   "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}}})"),
              kMpiRuntime);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/parallelism"), "3");  // node: 4 - 1
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/parallelism"), "1");  // launcher
  // The image goes to the trainer step (the launcher) only; env and resources to both.
  const char* node_c = "/spec/replicatedJobs/0/template/spec/template/spec/containers/0";
  const char* launcher_c = "/spec/replicatedJobs/1/template/spec/template/spec/containers/0";
  EXPECT_EQ(json(r.object, (std::string(node_c) + "/image").c_str()), R"("ds")");
  EXPECT_EQ(json(r.object, (std::string(launcher_c) + "/image").c_str()), R"("me/ds")");
  for (const char* c : {node_c, launcher_c}) {
    EXPECT_EQ(json(r.object, (std::string(c) + "/env").c_str()), R"([{"name":"X","value":"1"}])") << c;
    EXPECT_EQ(json(r.object, (std::string(c) + "/resources").c_str()), R"({"limits":{"nvidia.com/gpu":"1"}})") << c;
  }
}

TEST(TrainJobResolver, ResourcesPerNodeNeedsAnMlPolicyAsInV230) {
  std::string runtime = kTorchRuntime;
  const std::string ml_policy = R"("mlPolicy": {"numNodes": 1, "torch": {}},)";
  runtime.erase(runtime.find(ml_policy), ml_policy.size());
  const TrainJobResolution r =
      resolve(trainjob(R"({"trainer": {"resourcesPerNode": {"limits": {"cpu": "1"}}}})"), runtime.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, node("/containers/0/resources").c_str()), R"({"requests":{"cpu":"4","memory":"16Gi"}})");
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node: resourcesPerNode not applied (runtime "
                       "ClusterTrainingRuntime/torch-distributed has no mlPolicy; Trainer v2.3.0 applies it only "
                       "then)"));
}

TEST(TrainJobResolver, PodSpecOverridesOfV200ApplyTheirFieldsToTargetJobs) {
  const TrainJobResolution r = resolve(trainjob(R"({"podSpecOverrides": [{
      "targetJobs": [{"name": "node"}],
      "nodeSelector": {"topology.kubernetes.io/zone": "us-east1-b"},
      "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}}],
      "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}], "image": "x"}],
      "affinity": {"nodeAffinity": {}}, "hostNetwork": true}]})"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, node("/nodeSelector").c_str()),
            R"({"pool":"gpu","topology.kubernetes.io/zone":"us-east1-b"})");
  EXPECT_EQ(json(r.object, node("/volumes").c_str()),
            R"([{"name":"scratch","emptyDir":{}},{"name":"ckpt","persistentVolumeClaim":{"claimName":"ckpt"}}])");
  EXPECT_EQ(json(r.object, node("/containers/0/volumeMounts").c_str()),
            R"([{"name":"scratch","mountPath":"/scratch"},{"name":"ckpt","mountPath":"/ckpt"}])");
  // Not in PodSpecOverride / ContainerOverride: pruned.
  EXPECT_EQ(json(r.object, node("/containers/0/image").c_str()), R"("pytorch/pytorch")");
  EXPECT_EQ(json(r.object, node("/affinity").c_str()), "<absent>");
  EXPECT_EQ(json(r.object, node("/hostNetwork").c_str()), "<absent>");
  // The other job is not a target.
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/volumes"), "<absent>");
  EXPECT_TRUE(has_line(
      r, "replicatedJob node: nodeSelector, volume ckpt, container node from TrainJob spec.podSpecOverrides[0]"));
}

TEST(TrainJobResolver, PodTemplateOverridesOfV210MergeMetadataAndLaterEntriesWin) {
  const TrainJobResolution r = resolve(trainjob(R"({"podTemplateOverrides": [
      {"targetJobs": [{"name": "node"}, {"name": "dataset-initializer"}],
       "metadata": {"labels": {"team": "a"}},
       "spec": {"nodeSelector": {"zone": "a"}, "imagePullSecrets": [{"name": "reg"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}},
      {"targetJobs": [{"name": "node"}, {"name": "ghost"}], "spec": {"nodeSelector": {"zone": "b"}}}]})"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(json(r.object, node("/nodeSelector/zone").c_str()), R"("b")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector"), R"({"zone":"a"})");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/template/metadata/labels"), R"({"team":"a"})");
  EXPECT_EQ(json(r.object, node("/imagePullSecrets").c_str()), R"([{"name":"reg"}])");
  EXPECT_EQ(json(r.object, node("/affinity/nodeAffinity").c_str()),
            R"({"requiredDuringSchedulingIgnoredDuringExecution":{}})");
  EXPECT_EQ(r.object["spec"]["replicatedJobs"].Size(), 2u);  // "ghost" is not created
  EXPECT_TRUE(has_line(r,
                       "replicatedJob ghost named in TrainJob spec.podTemplateOverrides[1] is not in runtime "
                       "ClusterTrainingRuntime/torch-distributed: not applied"));
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node: pod labels, nodeSelector, affinity, imagePullSecrets from TrainJob "
                       "spec.podTemplateOverrides[0]"));
}

TEST(TrainJobResolver, RuntimePatchesOfV220PatchVolumesAndMountsByKey) {
  const TrainJobResolution r = resolve(trainjob(R"({"runtimePatches": [{"manager": "me.io/x",
      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
        "metadata": {"labels": {"job": "l"}},
        "spec": {"template": {"metadata": {"annotations": {"p": "q"}}, "spec": {
          "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "llm-ckpt"}}],
          "tolerations": [{"key": "spot", "operator": "Exists"}],
          "terminationGracePeriodSeconds": 600,
          "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"},
                                                            {"name": "scratch2", "mountPath": "/scratch"}],
                          "securityContext": {"runAsUser": 1000}, "command": ["pruned"]}]}}}}}]}}}}]})"));
  ASSERT_EQ(r.error, "");
  // Runtime volumes kept, the patched one added.
  EXPECT_EQ(json(r.object, node("/volumes").c_str()),
            R"([{"name":"scratch","emptyDir":{}},{"name":"ckpt","persistentVolumeClaim":{"claimName":"llm-ckpt"}}])");
  // volumeMounts merge on mountPath: /scratch is the patch's now.
  EXPECT_EQ(json(r.object, node("/containers/0/volumeMounts").c_str()),
            R"([{"name":"scratch2","mountPath":"/scratch"},{"name":"ckpt","mountPath":"/ckpt"}])");
  // tolerations have no merge key: replaced whole.
  EXPECT_EQ(json(r.object, node("/tolerations").c_str()), R"([{"key":"spot","operator":"Exists"}])");
  EXPECT_EQ(json(r.object, node("/terminationGracePeriodSeconds").c_str()), "600");
  EXPECT_EQ(json(r.object, node("/containers/0/securityContext").c_str()), R"({"runAsUser":1000})");
  EXPECT_EQ(json(r.object, node("/containers/0/command").c_str()), R"(["torchrun"])");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/metadata/labels/job"), R"("l")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/template/metadata/annotations"), R"({"p":"q"})");
  EXPECT_TRUE(has_line(r, "replicatedJob node: job labels from TrainJob spec.runtimePatches[0]"));
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node: pod annotations, volume ckpt, container node, tolerations, "
                       "terminationGracePeriodSeconds from TrainJob spec.runtimePatches[0]"));
}

TEST(TrainJobResolver, InitializerSetsStorageUriEnvAndSecret) {
  const TrainJobResolution r = resolve(trainjob(R"({"initializer": {"dataset": {
      "storageUri": "s3://bucket/data", "env": [{"name": "X", "value": "y"}], "secretRef": {"name": "s3"}}}})"));
  ASSERT_EQ(r.error, "");
  const char* c = "/spec/replicatedJobs/0/template/spec/template/spec/containers/0";
  EXPECT_EQ(json(r.object, (std::string(c) + "/env").c_str()),
            R"([{"name":"STORAGE_URI","value":"s3://bucket/data"},{"name":"X","value":"y"}])");
  EXPECT_EQ(json(r.object, (std::string(c) + "/envFrom").c_str()), R"([{"secretRef":{"name":"s3"}}])");
  EXPECT_TRUE(has_line(r,
                       "replicatedJob dataset-initializer, container dataset-initializer: env STORAGE_URI, env, "
                       "envFrom secret s3 from TrainJob spec.initializer.dataset"));
}

TEST(TrainJobResolver, TrainingRuntimeIsNamedByItsKind) {
  std::string runtime = kTorchRuntime;
  runtime.replace(runtime.find("ClusterTrainingRuntime"), 22, "TrainingRuntime");
  const TrainJobResolution r =
      resolve(trainjob(R"({"runtimeRef": {"kind": "TrainingRuntime", "name": "torch-distributed"}})"), runtime.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(has_line(r,
                       "replicatedJob node: volume scratch, nodeSelector, tolerations from runtime "
                       "TrainingRuntime/torch-distributed"));
}

TEST(TrainJobResolver, WithoutRuntimeJudgesWhatTheTrainJobAloneSets) {
  const rapidjson::Document j = parse_json(trainjob(R"({"runtimeRef": {"name": "gone"},
      "trainer": {"image": "me/train", "numNodes": 2},
      "runtimePatches": [{"manager": "m.io/a", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {
          "nodeSelector": {"topology.kubernetes.io/zone": "z1"},
          "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c"}}]}}}}},
        {"name": "extra", "template": {"spec": {"template": {"spec": {
          "containers": [{"name": "helper", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}}}}}]}}}}]})"));
  const TrainJobResolution r = resolve_trainjob_without_runtime(j);
  ASSERT_EQ(r.error, "");
  ASSERT_FALSE(r.provenance.empty());
  EXPECT_EQ(r.provenance[0],
            "runtime ClusterTrainingRuntime/gone not read: one replicatedJob node with one container node stands in "
            "for it");
  const char* stand_in = "/spec/replicatedJobs/0/template/spec/template/spec";
  EXPECT_EQ(json(r.object, (std::string(stand_in) + "/containers/0/image").c_str()), R"("me/train")");
  EXPECT_EQ(json(r.object, (std::string(stand_in) + "/nodeSelector").c_str()),
            R"({"topology.kubernetes.io/zone":"z1"})");
  EXPECT_EQ(json(r.object, (std::string(stand_in) + "/volumes/0/name").c_str()), R"("ckpt")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/parallelism"), "2");
  // A job the real runtime may have is created from what the patch says.
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/name"), R"("extra")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/1/template/spec/template/spec/containers"),
            R"([{"name":"helper","volumeMounts":[{"name":"v","mountPath":"/v"}]}])");
}

TEST(TrainJobResolver, WithoutRuntimeAndWithoutRefSaysSo) {
  const rapidjson::Document j = parse_json(trainjob(R"({})"));
  const TrainJobResolution r = resolve_trainjob_without_runtime(j);
  ASSERT_EQ(r.error, "");
  ASSERT_FALSE(r.provenance.empty());
  EXPECT_EQ(r.provenance[0],
            "no runtime named (spec.runtimeRef.name): one replicatedJob node with one container node stands in for it");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/containers"), R"([{"name":"node"}])");
}

TEST(TrainJobResolver, WrongTypesAreErrorsWithTheirPath) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {trainjob(R"("x")"), "spec: expected an object"},
      {trainjob(R"({"trainer": {"numNodes": "4"}})"), "spec.trainer.numNodes: expected an integer"},
      {trainjob(R"({"trainer": {"numNodes": 1.5}})"), "spec.trainer.numNodes: expected an integer"},
      {trainjob(R"({"trainer": {"image": 3}})"), "spec.trainer.image: expected a string"},
      {trainjob(R"({"trainer": {"command": ["a", 1]}})"), "spec.trainer.command[1]: expected a string"},
      {trainjob(R"({"trainer": {"env": [{"value": "x"}]}})"),
       "spec.trainer.env[0].name: missing (the list is merged by it)"},
      {trainjob(R"({"runtimePatches": {}})"), "spec.runtimePatches: expected an array"},
      {trainjob(R"({"podSpecOverrides": [{"targetJobs": [{"name": "node"}], "volumes": [{"name": 5}]}]})"),
       "spec.podSpecOverrides[0].volumes[0].name: expected a string"},
      {trainjob(R"({"podTemplateOverrides": [{"targetJobs": [{"name": "node"}], "spec": []}]})"),
       "spec.podTemplateOverrides[0].spec: expected an object"},
      {trainjob(R"({"runtimePatches": [{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
          {"name": "node", "template": {"spec": {"template": {"spec": {"containers": ["x"]}}}}}]}}}}]})"),
       "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec."
       "containers[0]: expected an object"},
      {trainjob(R"({"initializer": {"dataset": {"secretRef": {"name": []}}}})"),
       "spec.initializer.dataset.secretRef.name: expected a string"},
      {trainjob(R"({"suspend": "yes"})"), "spec.suspend: expected a boolean"},
      {R"({"metadata": [], "spec": {}})", "metadata: expected an object"},
      {"[]", "TrainJob: expected an object"},
  };
  for (const auto& [job, error] : table) {
    const TrainJobResolution r = resolve(job);
    EXPECT_EQ(r.error, error) << job;
    EXPECT_TRUE(r.object.IsObject() && r.object.ObjectEmpty()) << job;
  }
}

TEST(TrainJobResolver, RuntimeShapeErrorsStartWithRuntime) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {R"({"spec": {"template": {"spec": {"replicatedJobs": {}}}}})",
       "runtime.spec.template.spec.replicatedJobs: expected an array"},
      {R"({"spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": []}]}}}})",
       "runtime.spec.template.spec.replicatedJobs[0].template: expected an object"},
      {R"({"spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
           "parallelism": "2"}}}]}}}})",
       "runtime.spec.template.spec.replicatedJobs[0].template.spec.parallelism: expected an integer"},
      {R"({"spec": {"mlPolicy": {"numNodes": "2"}}})", "runtime.spec.mlPolicy.numNodes: expected an integer"},
      {R"({"spec": "x"})", "runtime.spec: expected an object"},
  };
  for (const auto& [runtime, error] : table) {
    EXPECT_EQ(resolve(trainjob(R"({"trainer": {"image": "x"}})"), runtime.c_str()).error, error) << runtime;
  }
}

TEST(TrainJobResolver, DeepNestingIsAnErrorNotACrash) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "[";
  for (int i = 0; i < 5000; ++i) deep += "]";
  const TrainJobResolution r = resolve(trainjob(R"({"trainer": {"args": )" + deep + "}}"));
  EXPECT_NE(r.error.find("nested more than 100 levels deep"), std::string::npos) << r.error;
}

// volumes: `n` volumes named prefix0, prefix1, ... as JSON list items.
std::string volumes(int n, const std::string& prefix) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += std::string(i ? "," : "") + R"({"name": ")" + prefix + std::to_string(i) + R"(", "emptyDir": {}})";
  }
  return out;
}

TEST(TrainJobResolver, LongListsMergeByIndexNotQuadratically) {
  // 20,000 volumes patched onto a runtime of 20,000 volumes, 10,000 of them the same names.
  const std::string runtime =
      R"({"spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {)"
      R"("spec": {"volumes": [)" +
      volumes(20000, "r") + "]}}}}}]}}}}";
  const std::string patch = R"({"podSpecOverrides": [{"targetJobs": [{"name": "node"}], "volumes": [)" +
                            volumes(10000, "r") + "," + volumes(10000, "p") + "]}]}";
  const TrainJobResolution r = resolve(trainjob(patch), runtime.c_str());
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.object["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"].Size(), 30000u);
}

TEST(TrainJobResolver, WorkIsBoundedWhenAnOverrideTargetsManyJobs) {
  // 5,000 volumes onto each of 1,000 jobs: 15 million values, over the budget of about a million.
  std::string jobs, targets;
  for (int i = 0; i < 1000; ++i) {
    jobs += std::string(i ? "," : "") + R"({"name": "j)" + std::to_string(i) + R"("})";
    targets += std::string(i ? "," : "") + R"({"name": "j)" + std::to_string(i) + R"("})";
  }
  const std::string runtime = R"({"spec": {"template": {"spec": {"replicatedJobs": [)" + jobs + "]}}}}";
  const std::string patch =
      R"({"podSpecOverrides": [{"targetJobs": [)" + targets + R"(], "volumes": [)" + volumes(5000, "v") + "]}]}";
  const TrainJobResolution r = resolve(trainjob(patch), runtime.c_str());
  // Stopped part way, at the volume where the budget ran out.
  EXPECT_EQ(r.error.rfind("spec.podSpecOverrides[0].volumes[", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("]: too large to resolve (more than 1048576 values copied)"), std::string::npos) << r.error;
}

TEST(TrainJobResolver, OutputOutlivesAnInSituParsedInput) {
  std::string job_text = trainjob(R"({"trainer": {"image": "me/train:1", "env": [{"name": "E", "value": "v"}]},
                                      "initializer": {"dataset": {"storageUri": "s3://b/d", "secretRef": {"name": "s"}}},
                                      "runtimePatches": [{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                                        {"name": "node", "template": {"spec": {"template": {"spec": {
                                          "volumes": [{"name": "ckpt", "emptyDir": {}}]}}}}}]}}}}]})");
  std::string runtime_text = kTorchRuntime;
  rapidjson::Document job, runtime;
  job.ParseInsitu(job_text.data());
  runtime.ParseInsitu(runtime_text.data());
  ASSERT_FALSE(job.HasParseError() || runtime.HasParseError());
  const TrainJobResolution r = resolve_trainjob(job, runtime);
  std::fill(job_text.begin(), job_text.end(), 'X');
  std::fill(runtime_text.begin(), runtime_text.end(), 'X');
  EXPECT_EQ(json(r.object, node("/containers/0/image").c_str()), R"("me/train:1")");
  EXPECT_EQ(json(r.object, node("/volumes/0/name").c_str()), R"("scratch")");
  EXPECT_EQ(json(r.object, "/metadata/name"), R"("llm")");
  EXPECT_EQ(json(r.object, node("/containers/0/env/2").c_str()), R"({"name":"E","value":"v"})");
  EXPECT_EQ(json(r.object, node("/volumes/1/name").c_str()), R"("ckpt")");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/env/0"),
            R"({"name":"STORAGE_URI","value":"s3://b/d"})");
  EXPECT_EQ(json(r.object, "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/envFrom"),
            R"([{"secretRef":{"name":"s"}}])");
}

TEST(TrainJobResolver, ProvenanceIsBounded) {
  std::string overrides = R"({"podSpecOverrides": [)";
  for (int i = 0; i < 200; ++i) {
    overrides += std::string(i ? "," : "") + R"({"targetJobs": [{"name": "node"}], "nodeSelector": {"a": "b"}})";
  }
  const TrainJobResolution r = resolve(trainjob(overrides + "]}"));
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.provenance.size(), 65u);
  EXPECT_EQ(r.provenance.back().rfind("... and ", 0), 0u) << r.provenance.back();
}

}  // namespace
}  // namespace kgtest

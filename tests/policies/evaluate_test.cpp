// evaluate(): classification, exemptions, disabled checks, excluded namespaces, merging
// the parts of a workload, and determinism.
#include "policies/evaluate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>

#include "policies/text.h"
#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

const Finding* find_finding(const std::vector<Finding>& findings, std::string_view check) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) { return f.check == check; });
  return it == findings.end() ? nullptr : &*it;
}
// No pointers into temporaries.
const Finding* find_finding(std::vector<Finding>&& findings, std::string_view check) = delete;

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.emplace_back(f.check);
  return out;
}

bool same(const Finding& a, const Finding& b) {
  return a.check == b.check && a.outcome == b.outcome && a.message == b.message && a.reason == b.reason &&
         std::ranges::equal(a.cases, b.cases) && a.parts == b.parts;
}

// A pod with every gap the spec alone can show: no durable volume, pinned to a zone,
// default 300 s tolerations.
PodSpecView gappy_gpu_pod() { return with_node_selector(gpu_pod(), {{kZone, "us-east-1a"}}); }

// A GPU pod that passes every check that needs no cluster view.
PodSpecView tidy_gpu_pod() {
  PodSpecView pod = with_volume(gpu_pod(), pvc("ckpt"), "/checkpoints");
  pod.tolerations = health_tolerations(60);
  return pod;
}

WorkloadView pytorch_job(std::vector<PodSpecView> parts) {
  WorkloadView object;
  object.api_group = "kubeflow.org";
  object.kind = "PyTorchJob";
  object.namespace_name = "ml";
  object.name = "llama";
  object.pods = std::move(parts);
  return object;
}

PodSpecView part(PodSpecView pod, std::string name) {
  pod.part = std::move(name);
  return pod;
}

// ---------------------------------------------------------------- classification

struct ClassRow {
  std::string name;
  PodSpecView pod;
  bool training;
  bool accelerator;
  StringMap object_annotations = {};
  bool training_kind = false;
};

void PrintTo(const ClassRow& row, std::ostream* os) { *os << row.name; }

PodSpecView requesting(std::string resource) {
  PodSpecView pod = cpu_pod();
  pod.containers.front().resources.push_back(std::move(resource));
  pod.containers.front().command = {"torchrun", "train.py"};  // training evidence
  return pod;
}

PodSpecView annotated(StringMap annotations) {
  PodSpecView pod = cpu_pod();
  pod.annotations = std::move(annotations);
  return pod;
}

const std::vector<ClassRow> kClassRows = {
    {"NvidiaGpuIsAccelerator", requesting("nvidia.com/gpu"), true, true},
    {"MigSliceMatchesWildcard", requesting("nvidia.com/mig-1g.5gb"), true, true},
    {"MigLargeSliceMatchesWildcard", requesting("nvidia.com/mig-7g.80gb"), true, true},
    {"AmdGpuIsAccelerator", requesting("amd.com/gpu"), true, true},
    {"IntelGpuMatchesWildcard", requesting("gpu.intel.com/i915"), true, true},
    {"GaudiIsAccelerator", requesting("habana.ai/gaudi"), true, true},
    {"NeuronCoreMatchesWildcard", requesting("aws.amazon.com/neuroncore"), true, true},
    {"NeuronDeviceMatchesWildcard", requesting("aws.amazon.com/neuron"), true, true},
    {"TpuIsAccelerator", requesting("google.com/tpu"), true, true},
    // Shared GPUs and per-product names (a cluster's nvidia.com/a100); an NVIDIA NIC is not one.
    {"SharedNvidiaGpuIsAccelerator", requesting("nvidia.com/gpu.shared"), true, true},
    {"ProductNamedNvidiaGpuIsAccelerator", requesting("nvidia.com/a100"), true, true},
    {"ProductNamedRtxGpuIsAccelerator", requesting("nvidia.com/rtxa6000"), true, true},
    {"UpperCaseProductNameIsAccelerator", requesting("nvidia.com/H100"), true, true},
    // A pod that requests no accelerator but runs torchrun is judged (policy
    // judgeCpuTraining), without gpu-health-tolerations.
    {"NvidiaNicIsNoAccelerator", requesting("nvidia.com/hostdev"), true, false},
    // Huawei Ascend NPUs, whole and as virtual slices.
    {"AscendNpuIsAccelerator", requesting("huawei.com/Ascend910"), true, true},
    {"AscendVirtualNpuIsAccelerator", requesting("huawei.com/Ascend310P-2c"), true, true},
    {"OtherHuaweiResourceIsNoAccelerator", requesting("huawei.com/kltDev"), true, false},
    {"ExactNameIsNotAPrefix", requesting("nvidia.com/gpu-shared"), true, false},
    {"WildcardNeedsItsPrefix", requesting("nvidia.com/mag-1g"), true, false},
    {"GpuInInitContainerOnlyIsAccelerator",
     [] {
       PodSpecView pod = cpu_pod();
       pod.init_containers.push_back({.name = "warmup", .resources = {"nvidia.com/gpu"}, .volume_mounts = {}});
       pod.containers.front().command = {"torchrun", "train.py"};
       return pod;
     }(),
     true, true},
    {"KubeflowLabelIsTraining", with_labels(cpu_pod(), {{"training.kubeflow.org/job-name", "j"}}), true, false},
    {"JobSetLabelIsTraining", with_labels(cpu_pod(), {{"jobset.sigs.k8s.io/jobset-name", "j"}}), true, false},
    {"VolcanoLabelIsTraining", with_labels(cpu_pod(), {{"volcano.sh/job-name", "j"}}), true, false},
    {"TrainerLabelIsTraining", with_labels(cpu_pod(), {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}}),
     true, false},
    // LeaderWorkerSets are in practice inference servers: their label says nothing.
    {"LeaderWorkerSetLabelIsNotTraining", with_labels(cpu_pod(), {{"leaderworkerset.sigs.k8s.io/name", "lws"}}), false,
     false},
    {"OptInAnnotationOnPodIsTraining", annotated({{"kubegap.io/training-job", "true"}}), true, false},
    {"OptInAnnotationOnObjectIsTraining", cpu_pod(), true, false, {{"kubegap.io/training-job", "true"}}},
    {"OptInAnnotationMustBeTrue", annotated({{"kubegap.io/training-job", "false"}}), false, false},
    {"TrainingWorkloadKindIsTraining", cpu_pod(), true, false, {}, true},
    {"PlainWebPodIsNotTraining", with_labels(cpu_pod(), {{"app", "web"}}), false, false},
};

class Classification : public ::testing::TestWithParam<ClassRow> {};

TEST_P(Classification, Rule) {
  const ClassRow& row = GetParam();
  WorkloadView object = pod_object(row.pod);
  object.annotations = row.object_annotations;
  if (row.training_kind) {
    object.api_group = "kubeflow.org";
    object.kind = "PyTorchJob";
  }
  const auto parts = evaluate_object_view(object, nullptr, default_policy()).parts;
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].evaluated, row.training) << parts[0].why;
  if (parts[0].evaluated) {
    EXPECT_EQ(parts[0].workload_class, WorkloadClass::kTraining) << parts[0].why;
  }
  EXPECT_EQ(requests_accelerator(row.pod, default_policy()), row.accelerator);
  // A training pod always has at least a checkpoint-volume finding here (no volumes);
  // anything else gets no findings at all.
  const auto findings = evaluate(object, nullptr, default_policy());
  EXPECT_EQ(!findings.empty(), row.training);
  EXPECT_EQ(find_finding(findings, kGpuHealthTolerations) != nullptr, row.accelerator);
}

INSTANTIATE_TEST_SUITE_P(Evaluate, Classification, ::testing::ValuesIn(kClassRows),
                         [](const auto& param_info) { return param_info.param.name; });

// A part of a wrapped object whose wrapper lets it speak without an accelerator (a Katib
// trial on CPU) is judged on its command's evidence; with no sign of training, or without
// the wrapper's say, a CPU Job is not judged.
TEST(Evaluate, AWrappedTrialOnCpuIsJudgedOnItsEvidence) {
  const auto trial = [](std::vector<std::string> command, bool without_accelerator) {
    PodSpecView pod = cpu_pod();
    pod.containers.front().command = std::move(command);
    pod.part = "trial";
    pod.wrapped_group = "batch";
    pod.wrapped_kind = "Job";
    pod.without_accelerator = without_accelerator;
    WorkloadView object;
    object.api_group = "kubeflow.org";
    object.kind = "Experiment";
    object.namespace_name = "ml";
    object.name = "hpo";
    object.pods = {pod};
    return evaluate_object_view(object, nullptr, default_policy());
  };
  const auto trains = trial({"python", "train.py", "--lr", "0.01"}, true);
  ASSERT_EQ(trains.parts.size(), 1u);
  EXPECT_TRUE(trains.parts[0].evaluated) << trains.parts[0].why;
  EXPECT_EQ(trains.parts[0].workload_class, WorkloadClass::kTraining) << trains.parts[0].why;
  EXPECT_NE(find_finding(trains.findings, kCheckpointVolume), nullptr);

  const auto evaluates = trial({"python", "eval_threshold.py", "--threshold", "0.4"}, true);
  EXPECT_FALSE(evaluates.parts[0].evaluated) << evaluates.parts[0].why;  // no check at all, not even auto's
  EXPECT_NE(evaluates.parts[0].workload_class, WorkloadClass::kTraining) << evaluates.parts[0].why;
  const Finding* none = find_finding(evaluates.findings, kCheckpointVolume);
  EXPECT_TRUE(none == nullptr || none->outcome != Outcome::kFinding);

  // Without the wrapper's say, a script named for training still makes a CPU Job training
  // (judgeCpuTraining), and with that policy off it is not judged.
  const auto unwrapped = trial({"python", "train.py", "--lr", "0.01"}, false);
  EXPECT_TRUE(unwrapped.parts[0].evaluated) << unwrapped.parts[0].why;
  EXPECT_NE(unwrapped.parts[0].why.find("judgeCpuTraining"), std::string::npos) << unwrapped.parts[0].why;

  // A word that only says "run it" before a training name leaves the training name
  // (main-train.py, run_train.py); one that says something else does not (prepare_train.py).
  EXPECT_TRUE(trial({"python", "main-train.py"}, false).parts[0].evaluated);
  EXPECT_TRUE(trial({"python", "run_train.py", "--lr", "0.1"}, false).parts[0].evaluated);
  EXPECT_TRUE(trial({"python", "run_retrain.py"}, false).parts[0].evaluated);
  EXPECT_FALSE(trial({"python", "prepare_train.py"}, false).parts[0].evaluated);
  EXPECT_FALSE(trial({"python", "runner.py"}, false).parts[0].evaluated);
  // `python -m pkg.main_train` runs pkg/main_train.py.
  EXPECT_TRUE(trial({"python", "-m", "recs.main_train"}, false).parts[0].evaluated);
  EXPECT_FALSE(trial({"python", "-m", "recs.serve"}, false).parts[0].evaluated);

  // Weak evidence (a checkpoint path alone) speaks only with the wrapper's say.
  EXPECT_TRUE(trial({"python", "main.py", "--save", "/ckpt"}, true).parts[0].evaluated);
  EXPECT_FALSE(trial({"python", "main.py", "--save", "/ckpt"}, false).parts[0].evaluated);
}

// A script kept in a ConfigMap and run from its volume is read like the command (where it
// saves, through its own variables) when the input holds the ConfigMap; otherwise the
// mounts decide, as before.
TEST(Evaluate, AScriptRunFromAConfigMapVolumeIsReadWhenTheConfigMapIsKnown) {
  const auto judge = [](const std::string& command, const std::string& key, const ClusterSnapshot* known) {
    PodSpecView pod = with_volume(with_volume(gpu_pod(), empty_dir("scratch"), "/scratch"), pvc("workspace"), "/data");
    Volume config = volume("config", "configMap");
    config.config_map = "train-script";
    config.items = {{key, "run/train.sh"}};
    pod = with_volume(pod, config, "/etc/config");
    pod.containers.front().command = {command};
    pod.containers.front().env = {{"SCRATCH", "/scratch/ckpt"}};
    const auto findings = evaluate(pod_object(pod), known, default_policy());
    const Finding* f = find_finding(findings, kCheckpointVolume);
    return f != nullptr && f->outcome == Outcome::kFinding ? f->message : std::string();
  };
  const ClusterSnapshot known(
      {}, {}, {},
      {{"ml",
        "train-script",
        {{"train.sh", "export RUN_DIR=$SCRATCH/run1\ntorchrun pretrain.py --save \"$RUN_DIR\"\n"}}}});
  const std::string saved = judge("/etc/config/run/train.sh", "train.sh", &known);
  EXPECT_NE(saved.find("/scratch/ckpt/run1 (--save)"), std::string::npos) << saved;
  EXPECT_NE(saved.find("emptyDir \"scratch\""), std::string::npos) << saved;
  EXPECT_EQ(judge("bash /etc/config/run/train.sh", "train.sh", &known), saved);
  // Not in view, another key projected there, or another path: the durable /data decides.
  EXPECT_EQ(judge("/etc/config/run/train.sh", "train.sh", nullptr), "");
  EXPECT_EQ(judge("/etc/config/run/train.sh", "other.sh", &known), "");
  EXPECT_EQ(judge("/etc/config/train.sh", "train.sh", &known), "");
}

// A coordinator's files are read twice (for the whole job, and as a part): each reading
// has a budget of its own, so a launcher with large config files does not leave the
// workers' files unread.
TEST(Evaluate, ACoordinatorsFilesDoNotStarveTheWorkersFiles) {
  std::string big = "lr: 0.1\n";
  while (big.size() < 64 * 1024) big += "# a large launcher config, read to its end\n";
  const ClusterSnapshot view(
      {}, {}, {},
      {{"ml", "big", {{"launcher.yaml", big}}}, {"ml", "small", {{"train.yaml", "output_dir: /scratch/out\n"}}}});
  const auto config = [](const std::string& name) {
    Volume v = volume(name, "configMap");
    v.config_map = name;
    return v;
  };
  PodSpecView launcher = with_volume(gpu_pod(), config("big"), "/config");
  launcher.containers.front().command = {"mpirun", "python", "train.py"};
  launcher.containers.push_back(launcher.containers.front());
  launcher.containers.push_back(launcher.containers.front());
  launcher.coordinator = true;
  launcher.part = "replica Launcher";
  PodSpecView worker = with_volume(with_volume(gpu_pod(), pvc("data"), "/data"), empty_dir("scratch"), "/scratch");
  worker = with_volume(worker, config("small"), "/config");
  worker.containers.front().command = {"python", "train.py"};
  worker.part = "replica Worker";
  WorkloadView job;
  job.api_group = "kubeflow.org";
  job.kind = "MPIJob";
  job.namespace_name = "ml";
  job.name = "hvd";
  job.pods = {launcher, worker};
  const auto findings = evaluate(job, &view, default_policy());
  const Finding* f = find_finding(findings, kCheckpointVolume);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("/scratch/out"), std::string::npos) << f->message;
}

// The Python script a pod runs from a ConfigMap says where it saves by its constants: a
// bucket is where it saves (no warning), a local path on no durable volume warns and says
// the script set it. Without the ConfigMap in view, nothing is read.
TEST(Evaluate, APythonScriptsConstantsFromAConfigMapSayWhereItSaves) {
  const auto judge = [](const std::string& script, bool in_view = true) {
    Volume config = volume("config", "configMap");
    config.config_map = "train-script";
    PodSpecView pod = with_volume(gpu_pod(), config, "/script");
    pod.containers.front().command = {"python", "/script/train.py"};
    const ClusterSnapshot view({}, {}, {}, {{"ml", "train-script", {{"train.py", script}}}});
    const auto findings = evaluate(pod_object(pod), in_view ? &view : nullptr, default_policy());
    const Finding* f = find_finding(findings, kCheckpointVolume);
    if (f == nullptr) return std::string("none");
    return (f->outcome == Outcome::kFinding ? "finding: " : "other: ") + f->message + " " + f->reason;
  };
  const std::string to_bucket = "import tensorflow as tf\nmodel_output_path = \"s3://models/run2/\"\nmodel.fit(x)\n";
  EXPECT_FALSE(judge(to_bucket).starts_with("finding: ")) << judge(to_bucket);
  EXPECT_TRUE(judge(to_bucket, false).starts_with("finding: ")) << judge(to_bucket, false);
  const std::string local = "args = TrainingArguments(output_dir=\"/tmp/results\", save_steps=100)\n";
  const std::string saved = judge(local);
  EXPECT_TRUE(saved.starts_with("finding: ")) << saved;
  EXPECT_NE(saved.find("/tmp/results (output_dir (script))"), std::string::npos) << saved;
  // Saving switched off in the script: no warning, and the note says where it was read.
  const std::string off = judge("args = TrainingArguments(output_dir=\"/tmp/r\", save_strategy=\"no\")\n");
  EXPECT_FALSE(off.starts_with("finding: ")) << off;
  EXPECT_NE(off.find("save_strategy=no (script)"), std::string::npos) << off;
}

// A config file in a ConfigMap volume (not a script) speaks where flags would: a training
// setting judges an otherwise silent pod, an output_dir setting says where it saves; a flag
// on the command line wins over the file. Only when the ConfigMap is in view.
TEST(Evaluate, AConfigFileFromAConfigMapVolumeSpeaksLikeFlags) {
  const auto judge = [](std::vector<std::string> command, const std::string& file, bool in_view = true) {
    PodSpecView pod = with_volume(gpu_pod(), pvc("workspace"), "/data");
    Volume config = volume("config", "configMap");
    config.config_map = "train-config";
    pod = with_volume(pod, config, "/config");
    pod.containers.front().command = std::move(command);
    const ClusterSnapshot view({}, {}, {}, {{"ml", "train-config", {{"train.yaml", file}}}});
    const auto findings = evaluate(pod_object(pod), in_view ? &view : nullptr, default_policy());
    const Finding* f = find_finding(findings, kCheckpointVolume);
    if (f == nullptr) return std::string("none");
    return (f->outcome == Outcome::kFinding ? "finding: " : "other: ") + f->message + " " + f->reason;
  };
  const std::string yaml =
      "trainer:\n  max_steps: 40000\n  lr: 0.0006   # peak\noutput:\n  output_dir: \"/workspace/out\"\n";
  const std::vector<std::string> silent = {"bash", "/app/entrypoint.sh"};
  const std::string saved = judge(silent, yaml);
  EXPECT_TRUE(saved.starts_with("finding: "));
  EXPECT_NE(saved.find("/workspace/out (output_dir (config file))"), std::string::npos) << saved;
  EXPECT_NE(judge(silent, yaml, false).find("no sign that this pod trains"), std::string::npos);
  // The command line's flag wins: /data is the durable PVC.
  EXPECT_TRUE(judge({"bash", "/app/entrypoint.sh", "--output_dir", "/data/out", "--lr", "1e-4"}, yaml) == "none");
  // Object storage in the file, TOML and JSON spellings.
  EXPECT_NE(
      judge(silent, "[job]\nsteps = 9000\ndump_folder = \"gs://runs/a\"\ncheckpoint_dir = \"gs://runs/a\"\n", true)
          .find("gs://runs/a"),
      std::string::npos);
  EXPECT_TRUE(judge(silent, "{\n  \"num_train_epochs\": 3,\n  \"output_dir\": \"/data/run\"\n}\n") == "none");
  // camelCase keys read as their snake_case names (numEpochs is num_epochs).
  EXPECT_TRUE(judge(silent, "numEpochs: 30\noutputDir: /workspace/results\n").starts_with("finding: "));
  EXPECT_NE(judge(silent, "numepochs: 30\n").find("no sign that this pod trains"), std::string::npos);
  // Saving switched off in the file.
  EXPECT_NE(judge(silent, "max_steps: 40000\nsave_strategy: \"no\"\n").find("save_strategy=no"), std::string::npos);
  // A switch on the command line wins over the file's (torchtitan's checkpoint switch).
  const std::string toml =
      "[training]\nsteps = 9000\n[checkpoint]\nenable_checkpoint = false\ncheckpoint_dir = \"/tmp/ck\"\n";
  EXPECT_NE(judge(silent, toml).find("checkpointing disabled"), std::string::npos);
  EXPECT_TRUE(
      judge({"torchrun", "-m", "torchtitan.train", "--checkpoint.enable_checkpoint"}, toml).starts_with("finding: "));
  // A program named for reading checkpoints is not made training by the file it reads; a
  // short run in the file is no training either; the model a file loads is not a save path.
  EXPECT_NE(judge({"python", "/app/eval.py"}, yaml).find("no sign that this pod trains"), std::string::npos);
  EXPECT_NE(judge(silent, "max_steps: 20\noutput_dir: /tmp/o\n").find("no sign that this pod trains"),
            std::string::npos);
  EXPECT_TRUE(judge({"torchrun", "train.py"}, "model_path: /models/base\nepochs: 3\n") == "none");
  // darknet: a task word before its verb, and its .data file's `backup` directory, where
  // the .weights snapshots go.
  const std::string voc = "classes = 20\ntrain = /data/train.txt\nbackup = /scratch/backup\n";
  const std::string darknet = judge({"darknet", "detector", "train", "/config/train.yaml", "yolov3.cfg"}, voc);
  EXPECT_NE(darknet.find("/scratch/backup (backup (config file))"), std::string::npos) << darknet;
  // A `${VAR}` in the file reads the container's env.
  {
    PodSpecView pod = with_volume(with_volume(gpu_pod(), pvc("data"), "/data"), empty_dir("scratch"), "/scratch");
    Volume config = volume("config", "configMap");
    config.config_map = "train-config";
    config.items = {{"train.yaml", "train.yaml"}};
    pod = with_volume(pod, config, "/config");
    pod.containers.front().env = {{"RUN_DIR", "/scratch/run"}};
    const ClusterSnapshot view(
        {}, {}, {},
        {{"ml",
          "train-config",
          {{"train.yaml", "output_dir: ${RUN_DIR}/out\n"}, {"other.yaml", "output_dir: /data/x\n"}}}});
    const auto findings = evaluate(pod_object(pod), &view, default_policy());
    const Finding* f = find_finding(findings, kCheckpointVolume);
    ASSERT_NE(f, nullptr);
    EXPECT_NE(f->message.find("/scratch/run/out"), std::string::npos) << f->message;
    // Without items every key is there: the first file read names /data (durable).
    pod.volumes.back().items.clear();
    const auto all_keys = evaluate(pod_object(pod), &view, default_policy());
    EXPECT_EQ(find_finding(all_keys, kCheckpointVolume), nullptr);
  }
  // A file with no setting of a training program says nothing.
  EXPECT_NE(judge(silent, "log_level: info\nport: 8080\n").find("no sign that this pod trains"), std::string::npos);
}

TEST(Evaluate, PlainWebPodHasNoFindingsEvenWithGaps) {
  // Pinned to a zone, no volume, no PDB: still nothing, because it is not a training pod.
  const PodSpecView pod = with_node_selector(with_labels(cpu_pod(), {{"app", "web"}}), {{kZone, "us-east-1a"}});
  const auto snapshot = cluster({});
  EXPECT_TRUE(evaluate(pod_object(pod), nullptr, default_policy()).empty());
  EXPECT_TRUE(evaluate(pod_object(pod), snapshot.get(), default_policy()).empty());
}

TEST(Evaluate, FindingsFollowRegistryOrderAndCiteCases) {
  const auto snapshot = cluster({});
  const auto findings = evaluate(pod_object(gappy_gpu_pod()), snapshot.get(), default_policy());
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"checkpoint-volume", "disruption-budget", "zone-spread",
                                                     "gpu-health-tolerations"}));
  for (const auto& f : findings) {
    EXPECT_EQ(f.outcome, Outcome::kFinding) << f.check;
    EXPECT_FALSE(f.message.empty()) << f.check;
    EXPECT_FALSE(f.reason.empty()) << f.check;
    EXPECT_TRUE(f.parts.empty()) << "a Pod has no parts";
    ASSERT_NE(find_check(f.check), nullptr);
    EXPECT_TRUE(std::ranges::equal(f.cases, find_check(f.check)->cases)) << f.check;
    EXPECT_FALSE(f.cases.empty()) << f.check;
    // Views of the registry, not copies: a review allocates nothing for them (issue 32).
    EXPECT_EQ(f.check.data(), find_check(f.check)->id.data()) << f.check;
    EXPECT_EQ(f.cases.data(), find_check(f.check)->cases.data()) << f.check;
  }
}

TEST(Evaluate, EveryFindingOfAPlainPodStatesItsGapInOneLineAndSaysHowToFixIt) {
  // Plain pods with each kind of gap (short names and paths), with a cluster view
  // holding no budget: every warning's statement fits kTargetWarningRunes, and the fix
  // is in the warning and in the audit annotation.
  PodSpecView checkpoint_on_empty_dir = with_volume(gpu_pod(), empty_dir("ckpt"), "/checkpoints");
  PodSpecView fault_tolerated = tidy_gpu_pod();
  fault_tolerated.tolerations.push_back(toleration("nvidia.com/gpu-xid-error", "Exists", "NoSchedule"));
  const auto snapshot = cluster({});
  std::size_t seen = 0;
  for (const PodSpecView& pod : {gappy_gpu_pod(), checkpoint_on_empty_dir, fault_tolerated}) {
    for (const auto& f : evaluate(pod_object(pod), snapshot.get(), default_policy())) {
      ASSERT_EQ(f.outcome, Outcome::kFinding) << f.check;
      ++seen;
      ASSERT_FALSE(f.remedy.empty()) << f.check << ": every finding says how to fix it";
      Finding statement = f;
      statement.remedy.clear();
      EXPECT_LE(rune_count(format_warning(statement)), kTargetWarningRunes) << format_warning(statement);
      const std::string warning = format_warning(f);
      EXPECT_LE(rune_count(warning), kMaxWarningRunes) << warning;
      EXPECT_NE(warning.find("; fix: " + f.remedy + " (case "), std::string::npos) << warning;
      EXPECT_NE(format_annotation(f).find("fix: " + f.remedy), std::string::npos) << format_annotation(f);
    }
  }
  EXPECT_EQ(seen, 4u + 3u + 2u) << "all four checks; checkpoint, budget and 300 s; budget and GPU fault";
}

TEST(Evaluate, TidyPodWithBudgetHasNoFindings) {
  PodSpecView pod = with_labels(tidy_gpu_pod(), {{"app", "trainer"}});
  const auto snapshot = cluster({DisruptionBudget{"ml", "trainer", LabelSelector{{{"app", "trainer"}}, {}}}});
  EXPECT_TRUE(evaluate(pod_object(pod), snapshot.get(), default_policy()).empty());
}

// ---------------------------------------------------------------- disruption budget

TEST(Evaluate, DisruptionBudgetWithoutClusterIsNotEvaluated) {
  const auto findings = evaluate(pod_object(tidy_gpu_pod()), nullptr, default_policy(), "cluster view not synced");
  ASSERT_EQ(findings.size(), 1u) << "only the PDB check lacks what it needs";
  EXPECT_EQ(findings[0].check, "disruption-budget");
  EXPECT_EQ(findings[0].outcome, Outcome::kNotEvaluated);
  EXPECT_EQ(findings[0].reason, "cluster view not synced");
  EXPECT_TRUE(findings[0].message.empty()) << "no warning text: never a false warning";
}

TEST(Evaluate, DisruptionBudgetWithClusterButNoBudgetIsAFinding) {
  const auto snapshot = cluster({DisruptionBudget{"other", "pdb", LabelSelector{}}});
  const auto findings = evaluate(pod_object(tidy_gpu_pod()), snapshot.get(), default_policy());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "disruption-budget");
  EXPECT_EQ(findings[0].outcome, Outcome::kFinding);
}

// ---------------------------------------------------------------- exemptions

TEST(Evaluate, ExemptionOnObjectTurnsListedChecksIntoExempt) {
  WorkloadView object = pod_object(gappy_gpu_pod());
  object.annotations = {{"kubegap.io/exempt", "checkpoint-volume, zone-spread"},
                        {"kubegap.io/exempt-reason", "saves to GCS through the SDK"}};
  const auto findings = evaluate(object, nullptr, default_policy());
  for (const auto check : {kCheckpointVolume, kZoneSpread}) {
    const Finding* f = find_finding(findings, check);
    ASSERT_NE(f, nullptr) << check;
    EXPECT_EQ(f->outcome, Outcome::kExempt) << check;
    EXPECT_EQ(f->reason, "saves to GCS through the SDK") << check;
    EXPECT_EQ(f->remedy, "") << check << ": exempt by choice, nothing to fix";
  }
  const Finding* gpu = find_finding(findings, kGpuHealthTolerations);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->outcome, Outcome::kFinding) << "not listed, not exempt";
  EXPECT_FALSE(gpu->remedy.empty());
}

TEST(Evaluate, ExemptionOnPodTemplateTurnsListedChecksIntoExempt) {
  PodSpecView pod = gappy_gpu_pod();
  pod.annotations = {{"kubegap.io/exempt", "zone-spread,checkpoint-volume"},
                     {"kubegap.io/exempt-reason", "single-zone reservation"}};
  const auto findings = evaluate(pod_object(pod), nullptr, default_policy());
  for (const auto check : {kCheckpointVolume, kZoneSpread}) {
    const Finding* f = find_finding(findings, check);
    ASSERT_NE(f, nullptr) << check;
    EXPECT_EQ(f->outcome, Outcome::kExempt) << check;
    EXPECT_EQ(f->reason, "single-zone reservation") << check;
  }
}

TEST(Evaluate, ExemptionWithoutReasonSaysSo) {
  WorkloadView object = pod_object(gappy_gpu_pod());
  object.annotations = {{"kubegap.io/exempt", "zone-spread"}};
  const auto findings = evaluate(object, nullptr, default_policy());
  const Finding* f = find_finding(findings, kZoneSpread);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->outcome, Outcome::kExempt);
  EXPECT_NE(f->reason.find("no reason given"), std::string::npos) << f->reason;
  EXPECT_NE(f->reason.find("kubegap.io/exempt-reason"), std::string::npos) << f->reason;
}

TEST(Evaluate, ExemptionMatchesWholeCheckIdsOnly) {
  WorkloadView object = pod_object(gappy_gpu_pod());
  object.annotations = {{"kubegap.io/exempt", "zone, checkpoint-volumes, zone-spread-x"}};
  for (const auto& f : evaluate(object, nullptr, default_policy())) {
    EXPECT_NE(f.outcome, Outcome::kExempt) << f.check;
  }
}

TEST(Evaluate, ExemptionDoesNotHideNotEvaluated) {
  WorkloadView object = pod_object(tidy_gpu_pod());
  object.annotations = {{"kubegap.io/exempt", "disruption-budget"}, {"kubegap.io/exempt-reason", "elastic job"}};
  const auto without_view = evaluate(object, nullptr, default_policy());
  const Finding* f = find_finding(without_view, kDisruptionBudget);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->outcome, Outcome::kNotEvaluated);
  // With a cluster view and no budget, the same exemption applies.
  const auto snapshot = cluster({});
  const auto with_view = evaluate(object, snapshot.get(), default_policy());
  f = find_finding(with_view, kDisruptionBudget);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->outcome, Outcome::kExempt);
  EXPECT_EQ(f->reason, "elastic job");
}

// ---------------------------------------------------------------- policy switches

TEST(Evaluate, DisabledChecksProduceNothing) {
  Policy policy = default_policy();
  policy.enabled_checks = {"zone-spread"};
  const auto findings = evaluate(pod_object(gappy_gpu_pod()), nullptr, policy);
  EXPECT_EQ(ids(findings), std::vector<std::string>{"zone-spread"})
      << "not even a not-evaluated annotation for disruption-budget";
  policy.enabled_checks = {};
  EXPECT_TRUE(evaluate(pod_object(gappy_gpu_pod()), nullptr, policy).empty());
}

TEST(Evaluate, ExcludedNamespaceProducesNothing) {
  EXPECT_TRUE(evaluate(pod_object(gappy_gpu_pod(), "kube-system"), nullptr, default_policy()).empty());
  Policy policy = default_policy();
  policy.excluded_namespaces = {"batch-sandbox"};
  EXPECT_TRUE(evaluate(pod_object(gappy_gpu_pod(), "batch-sandbox"), nullptr, policy).empty());
  EXPECT_FALSE(evaluate(pod_object(gappy_gpu_pod(), "kube-system"), nullptr, policy).empty())
      << "the policy's list replaces the default";
}

// ---------------------------------------------------------------- workloads with parts

TEST(Evaluate, SameGapInSeveralPartsIsOneFindingListingParts) {
  const WorkloadView job =
      pytorch_job({part(gappy_gpu_pod(), "replica Master"), part(gappy_gpu_pod(), "replica Worker")});
  const auto findings = evaluate(job, nullptr, default_policy());
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"checkpoint-volume", "disruption-budget", "zone-spread",
                                                     "gpu-health-tolerations"}));
  for (const auto& f : findings) {
    EXPECT_EQ(f.parts, (std::vector<std::string>{"replica Master", "replica Worker"})) << f.check;
  }
}

TEST(Evaluate, OnlyPartsWithTheGapAreListed) {
  const WorkloadView job =
      pytorch_job({part(tidy_gpu_pod(), "replica Master"), part(gappy_gpu_pod(), "replica Worker")});
  const auto findings = evaluate(job, nullptr, default_policy());
  const Finding* ckpt = find_finding(findings, kCheckpointVolume);
  ASSERT_NE(ckpt, nullptr);
  EXPECT_EQ(ckpt->parts, std::vector<std::string>{"replica Worker"});
  const Finding* zone = find_finding(findings, kZoneSpread);
  ASSERT_NE(zone, nullptr);
  EXPECT_EQ(zone->parts, std::vector<std::string>{"replica Worker"});
}

// Bounded work: past maxPartsPerObject the parts are not evaluated, and a note says so.
TEST(Evaluate, OnlyTheFirstMaxPartsPerObjectPartsAreEvaluatedAndTheRestCounted) {
  std::vector<PodSpecView> parts;
  for (int i = 0; i < 300; ++i) parts.push_back(part(gappy_gpu_pod(), "replica R" + std::to_string(i)));
  const WorkloadView job = pytorch_job(std::move(parts));
  const Evaluation evaluation = evaluate_object_view(job, nullptr, default_policy());
  EXPECT_EQ(evaluation.parts.size(), 256u);
  const Finding* note = find_finding(evaluation.findings, kPartsNote);
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->outcome, Outcome::kNote);
  EXPECT_EQ(note->reason, "evaluated the first 256 of 300 parts (policy maxPartsPerObject)");
  EXPECT_FALSE(warns(*note));
  const Finding* ckpt = find_finding(evaluation.findings, kCheckpointVolume);
  ASSERT_NE(ckpt, nullptr);
  EXPECT_EQ(ckpt->parts.size(), 256u);
  EXPECT_EQ(ckpt->parts.back(), "replica R255");

  Policy small = default_policy();
  small.max_parts_per_object = 2;
  const Evaluation two = evaluate_object_view(job, nullptr, small);
  EXPECT_EQ(two.parts.size(), 2u);
  ASSERT_NE(find_finding(two.findings, kPartsNote), nullptr);
  EXPECT_EQ(find_finding(two.findings, kPartsNote)->reason,
            "evaluated the first 2 of 300 parts (policy maxPartsPerObject)");
  // At the bound, nothing is left out and there is no note.
  small.max_parts_per_object = 300;
  const Evaluation all = evaluate_object_view(job, nullptr, small);
  EXPECT_EQ(all.parts.size(), 300u);
  EXPECT_EQ(find_finding(all.findings, kPartsNote), nullptr);
}

// Grouping by message stays exact with thousands of distinct messages (one mount path
// per part) and with repeats among them.
TEST(Evaluate, ThousandsOfDistinctMessagesGroupExactly) {
  std::vector<PodSpecView> parts;
  for (int i = 0; i < 200; ++i) {
    PodSpecView pod = with_volume(gpu_pod(), empty_dir("ckpt"), "/checkpoints/" + std::to_string(i % 100));
    parts.push_back(part(std::move(pod), "replica R" + std::to_string(i)));
  }
  const auto findings = evaluate(pytorch_job(std::move(parts)), nullptr, default_policy());
  // Two warnings at most per check: the first distinct message, then a summary of the rest.
  std::size_t ckpt_parts = 0;
  for (const auto& f : findings) {
    if (f.check == kCheckpointVolume) ckpt_parts += f.parts.size();
  }
  EXPECT_EQ(ckpt_parts, 200u);
  const Finding* first = find_finding(findings, kCheckpointVolume);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->parts, (std::vector<std::string>{"replica R0", "replica R100"}));
}

TEST(Evaluate, AFindingInOnePartOutranksAnExemptionInAnother) {
  PodSpecView exempt_worker = part(gappy_gpu_pod(), "replica Worker");
  exempt_worker.annotations = {{"kubegap.io/exempt", "checkpoint-volume"}};
  const WorkloadView job = pytorch_job({part(gappy_gpu_pod(), "replica Master"), exempt_worker});
  const auto findings = evaluate(job, nullptr, default_policy());
  const Finding* f = find_finding(findings, kCheckpointVolume);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->outcome, Outcome::kFinding);
  EXPECT_EQ(f->parts, std::vector<std::string>{"replica Master"});
}

TEST(Evaluate, NonTrainingPartsOfAPlainWorkloadAreIgnored) {
  WorkloadView job;
  job.api_group = "batch";
  job.kind = "Job";
  job.namespace_name = "ml";
  job.name = "mixed";
  job.pods = {part(gappy_gpu_pod(), "trainer"), part(cpu_pod(), "web")};
  const auto findings = evaluate(job, nullptr, default_policy());
  ASSERT_FALSE(findings.empty());
  for (const auto& f : findings) {
    EXPECT_EQ(f.parts, std::vector<std::string>{"trainer"}) << f.check;
  }
}

TEST(Evaluate, GpuHealthSkippedForNonAcceleratorTrainingPod) {
  const PodSpecView pod = with_labels(cpu_pod(), {{"training.kubeflow.org/job-name", "etl"}});
  const auto findings = evaluate(pod_object(pod), nullptr, default_policy());
  EXPECT_EQ(find_finding(findings, kGpuHealthTolerations), nullptr);
  EXPECT_NE(find_finding(findings, kCheckpointVolume), nullptr) << "other checks still apply";
}

TEST(Evaluate, GpuHealthInMixedJobListsOnlyAcceleratorParts) {
  const WorkloadView job = pytorch_job({part(cpu_pod(), "replica Launcher"), part(gpu_pod(), "replica Worker")});
  const auto findings = evaluate(job, nullptr, default_policy());
  const Finding* f = find_finding(findings, kGpuHealthTolerations);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->parts, std::vector<std::string>{"replica Worker"});
}

TEST(Evaluate, IsDeterministic) {
  const auto snapshot = cluster({DisruptionBudget{"ml", "other", LabelSelector{{{"a", "b"}}, {}}}},
                                {node("n1", {{kZone, "a"}}), node("n2", {{kZone, "b"}})});
  const WorkloadView job =
      pytorch_job({part(gappy_gpu_pod(), "replica Master"), part(tidy_gpu_pod(), "replica Worker")});
  const auto first = evaluate(job, snapshot.get(), default_policy());
  const auto second = evaluate(job, snapshot.get(), default_policy());
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(same(first[i], second[i])) << first[i].check;
  }
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

WorkloadView deployment_of(PodSpecView pod) {
  WorkloadView object;
  object.api_group = "apps";
  object.kind = "Deployment";
  object.namespace_name = "ml";
  object.name = "d";
  object.pods.push_back(std::move(pod));
  return object;
}

const Finding* checkpoint_of(const std::vector<Finding>& findings) {
  const auto it =
      std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.check == "checkpoint-volume"; });
  return it == findings.end() ? nullptr : &*it;
}

// A serving kind whose pods visibly train is judged as training (evidencePromotes); a
// checkpoint-looking path alone does not promote it.
TEST(Evaluate, AServingKindThatTrainsIsJudgedAsTraining) {
  const Evaluation trains = evaluate_object_view(deployment_of(gpu_pod()), nullptr, default_policy());
  ASSERT_EQ(trains.parts.size(), 1u);
  EXPECT_EQ(trains.parts[0].workload_class, WorkloadClass::kTraining);
  EXPECT_NE(trains.parts[0].why.find("launcher torchrun"), std::string::npos) << trains.parts[0].why;
  const Finding* finding = checkpoint_of(trains.findings);
  ASSERT_NE(finding, nullptr);
  EXPECT_EQ(finding->outcome, Outcome::kFinding);

  PodSpecView server = gpu_pod();
  server.containers.front().command = {"vllm", "serve", "/models/llama"};
  const Evaluation serves =
      evaluate_object_view(deployment_of(with_volume(server, pvc("models"), "/models")), nullptr, default_policy());
  EXPECT_EQ(serves.parts[0].workload_class, WorkloadClass::kServing);

  Policy no_promotion = default_policy();
  for (auto& row : no_promotion.workload_kinds) row.evidence_promotes = false;
  const Evaluation off = evaluate_object_view(deployment_of(gpu_pod()), nullptr, no_promotion);
  EXPECT_EQ(off.parts[0].workload_class, WorkloadClass::kServing);
}

// A run that switches checkpointing off has nothing to lose: a note, not a finding.
TEST(Evaluate, CheckpointingSwitchedOffIsANote) {
  PodSpecView pod = gpu_pod();
  pod.containers.front().command = {"torchrun", "train.py", "--save_strategy", "no"};
  const auto findings = evaluate(pod_object(pod), nullptr, default_policy());
  const Finding* finding = checkpoint_of(findings);
  ASSERT_NE(finding, nullptr);
  EXPECT_EQ(finding->outcome, Outcome::kNote);
  EXPECT_EQ(finding->reason, "checkpointing disabled by --save_strategy no");
}

// A synthetic-data benchmark is a diagnostic even with training flags: no checks.
TEST(Evaluate, ASyntheticBenchmarkIsADiagnostic) {
  PodSpecView pod = gpu_pod();
  pod.containers.front().command = {"python", "train.py", "--epochs", "1", "--use_fake_data"};
  WorkloadView job = deployment_of(pod);
  job.api_group = "kubeflow.org";
  job.kind = "PyTorchJob";
  const Evaluation e = evaluate_object_view(job, nullptr, default_policy());
  ASSERT_EQ(e.parts.size(), 1u);
  EXPECT_EQ(e.parts[0].workload_class, WorkloadClass::kDiagnostic);
  EXPECT_EQ(checkpoint_of(e.findings), nullptr);
}

// A helper (Trainer's dataset initializer) gets no checkpoint-volume finding of its own,
// and its command does not speak for the trainer: an initializer that only echoes and
// sleeps does not make the silent GPU node diagnostic, as a coordinator's would.
TEST(Evaluate, AHelperNeitherWritesNorSpeaksForTheJob) {
  PodSpecView initializer = with_volume(cpu_pod(), pvc("dataset"), "/workspace/dataset");
  initializer.part = "replicatedJob dataset-initializer";
  initializer.containers.front().command = {"sh", "-c", "echo fetching; sleep 5"};
  PodSpecView node = gpu_pod();
  node.part = "replicatedJob node";
  node.containers.front().command.clear();  // the image's entrypoint
  const auto judge = [&](bool helper) {
    WorkloadView runtime = deployment_of(node);
    runtime.api_group = "trainer.kubeflow.org";
    runtime.kind = "TrainingRuntime";
    initializer.helper = helper;
    initializer.coordinator = !helper;
    runtime.pods = {initializer, node};
    return evaluate_object_view(runtime, nullptr, default_policy());
  };
  const Evaluation helped = judge(true);
  ASSERT_EQ(helped.parts.size(), 2u);
  EXPECT_EQ(helped.parts[1].workload_class, WorkloadClass::kTraining);
  EXPECT_NE(helped.parts[0].why.find("helper"), std::string::npos) << helped.parts[0].why;
  const Finding* f = checkpoint_of(helped.findings);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->message.find("dataset-initializer"), std::string::npos) << f->message;
  EXPECT_EQ(judge(false).parts[1].workload_class, WorkloadClass::kDiagnostic);  // a coordinator speaks
}

// An object named for a smoke test, a bring-up or a toy is diagnostic whatever it runs
// (policy diagnosticNames: torchrun over a toy model tests the fabric), unless a word of
// its name holds "train"; the opt-in annotation outranks the name.
TEST(Evaluate, AnObjectNamedForASmokeTestIsADiagnostic) {
  const auto judge = [](const std::string& name, bool opted_in = false) {
    WorkloadView job = deployment_of(gpu_pod());  // torchrun, no volume: a finding when judged
    job.api_group = "kubeflow.org";
    job.kind = "PyTorchJob";
    job.name = name;
    if (opted_in) job.annotations[kTrainingJobAnnotation] = "true";
    const Evaluation e = evaluate_object_view(job, nullptr, default_policy());
    return e.parts.size() == 1 ? e.parts[0].workload_class : WorkloadClass::kAuto;
  };
  for (const char* name :
       {"pytorch-ib-toy-ddp", "ddp-smoke-script", "helloworld-fsdp-v4-32", "nccl-bringup", "Smoke-Test",
        "gpu-selftest-1", "gpu-self-test", "nccl-bring-up", "ib-pre-check", "smoke-constraints"}) {
    EXPECT_EQ(judge(name), WorkloadClass::kDiagnostic) << name;
  }
  for (const char* name : {"yolov8n-fire-smoke-train", "toy-pretraining", "smokey-bert", "llama-sft", "train-0"}) {
    EXPECT_EQ(judge(name), WorkloadClass::kTraining) << name;
  }
  EXPECT_EQ(judge("ddp-smoke", true), WorkloadClass::kTraining);
  // A serving kind keeps its own rules: a "hello-vllm" Deployment serves.
  PodSpecView server = gpu_pod();
  server.containers.front().command = {"vllm", "serve", "facebook/opt-125m"};
  WorkloadView hello = deployment_of(server);
  hello.name = "hello-vllm";
  const Evaluation e = evaluate_object_view(hello, nullptr, default_policy());
  ASSERT_EQ(e.parts.size(), 1u);
  EXPECT_EQ(e.parts[0].workload_class, WorkloadClass::kServing);
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// The command says where it saves: the mount that holds that path decides, not whichever
// volume is durable.
TEST(Evaluate, TheSavePathDecidesWhichMountCounts) {
  PodSpecView pod = with_volume(gpu_pod(), pvc("data"), "/workspace/dataset");
  pod.containers.front().command = {"torchrun", "train.py", "--output_dir", "/workspace/output"};
  const auto pod_findings = evaluate(pod_object(pod), nullptr, default_policy());
  const Finding* lost = checkpoint_of(pod_findings);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->outcome, Outcome::kFinding);
  EXPECT_NE(lost->message.find("/workspace/output (--output_dir)"), std::string::npos) << lost->message;
  EXPECT_NE(lost->message.find("container's own filesystem"), std::string::npos) << lost->message;

  PodSpecView saved = with_volume(pod, pvc("runs"), "/workspace");  // a PVC above the path
  EXPECT_EQ(checkpoint_of(evaluate(pod_object(saved), nullptr, default_policy())), nullptr);

  PodSpecView scratch = with_volume(pod, empty_dir("out"), "/workspace/output/");
  const auto scratch_findings = evaluate(pod_object(scratch), nullptr, default_policy());
  const Finding* on_scratch = checkpoint_of(scratch_findings);
  ASSERT_NE(on_scratch, nullptr);
  EXPECT_NE(on_scratch->message.find("emptyDir \"out\""), std::string::npos) << on_scratch->message;

  // A read-only mount above the path: nothing can be written there, and the warning says
  // so rather than "the container's own filesystem"; a writable mount deeper down decides.
  PodSpecView read_only = with_volume(pod, pvc("runs"), "/workspace");
  read_only.containers.front().volume_mounts.back().read_only = true;
  const auto read_only_findings = evaluate(pod_object(read_only), nullptr, default_policy());
  const Finding* unwritable = checkpoint_of(read_only_findings);
  ASSERT_NE(unwritable, nullptr);
  EXPECT_EQ(unwritable->outcome, Outcome::kFinding);
  EXPECT_NE(unwritable->message.find("are on read-only persistentVolumeClaim \"runs\""), std::string::npos)
      << unwritable->message;
  EXPECT_NE(unwritable->remedy.find("mount /workspace writable"), std::string::npos) << unwritable->remedy;
  EXPECT_EQ(checkpoint_of(evaluate(pod_object(with_volume(read_only, pvc("out"), "/workspace/output")), nullptr,
                                   default_policy())),
            nullptr);

  // A sibling path is not a parent: /workspace/out does not hold /workspace/output.
  PodSpecView sibling = with_volume(pod, pvc("runs"), "/workspace/out");
  const auto sibling_findings = evaluate(pod_object(sibling), nullptr, default_policy());
  const Finding* beside = checkpoint_of(sibling_findings);
  ASSERT_NE(beside, nullptr);
  EXPECT_EQ(beside->outcome, Outcome::kFinding);
}

// An absolute path given as a plain argument and named for saving (`train_start.sh CODE
// /job/output/`) is where the run saves when no flag says, but only on a mount: beside a
// durable code volume, the hostPath that holds it decides.
TEST(Evaluate, AnArgumentNamedForSavingDecidesWhenAMountHoldsIt) {
  const auto checkpoint_finding = [](const std::vector<std::string>& command, const char* output_path) {
    PodSpecView pod = with_volume(gpu_pod(), pvc("code"), "/job/code");
    pod = with_volume(pod, volume("output", "hostPath"), output_path);
    pod.containers.front().command = command;
    const auto findings = evaluate(pod_object(pod), nullptr, default_policy());
    const Finding* found = checkpoint_of(findings);
    return found == nullptr || found->outcome != Outcome::kFinding ? std::string() : found->message;
  };
  const std::vector<std::string> start = {"bash",         "train_start.sh", "/job/code/",
                                          "/job/output/", "train.py",       "--epochs=90"};
  const std::string lost = checkpoint_finding(start, "/job/output");
  EXPECT_NE(lost.find("checkpoints at /job/output (a command argument) are on hostPath \"output\""), std::string::npos)
      << lost;
  // Not on a mount: the durable code volume decides, as without the argument.
  EXPECT_EQ(checkpoint_finding(start, "/scratch"), "");
  // A flag's value is the flag's, and a name that reads (data_output) is no save place.
  EXPECT_EQ(checkpoint_finding({"python", "train.py", "--epochs=90", "--data", "/job/output"}, "/job/output"), "");
  EXPECT_EQ(checkpoint_finding({"bash", "train.sh", "/job/data_output", "--epochs=90"}, "/job/data_output"), "");
  // A flag that names a place wins over an argument: --output_dir on the PVC.
  EXPECT_EQ(
      checkpoint_finding({"bash", "train_start.sh", "/job/output/", "--epochs=90", "--output_dir", "/job/code/out"},
                         "/job/output"),
      "");
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

WorkloadView volcano_job(std::vector<std::vector<std::string>> commands) {
  WorkloadView job;
  job.api_group = "batch.volcano.sh";
  job.kind = "Job";
  job.namespace_name = "ml";
  job.name = "cluster";
  for (std::size_t i = 0; i < commands.size(); ++i) {
    PodSpecView pod = gpu_pod();
    pod.containers.front().command = commands[i];
    pod.part = "task " + std::to_string(i);
    pod.labels["volcano.sh/job-name"] = "cluster";  // a framework label: training, were it not idle
    job.pods.push_back(std::move(pod));
  }
  return job;
}

// The parts whose command names where they save are the job's writers: a worker whose
// own command names no save path (an XGBoost worker; the master writes the model) is not
// judged by checkpoint-volume, and the master's durable path decides. A worker that names
// a path of its own, or mounts a checkpoint-looking path, is still judged.
TEST(Evaluate, APartThatNamesNoSavePathBesideOneThatDoesWritesNothing) {
  WorkloadView job = volcano_job({{"python", "main.py", "--job_type=Train", "--model_path=/models/m.json"},
                                  {"python", "main.py", "--job_type=Train"}});
  job.pods[0] = with_volume(job.pods[0], pvc("models"), "/models");
  const auto evaluation = evaluate_object_view(job, nullptr, default_policy());
  EXPECT_EQ(checkpoint_of(evaluation.findings), nullptr);
  ASSERT_EQ(evaluation.parts.size(), 2U);
  EXPECT_NE(evaluation.parts[1].why.find("names no save path while task 0 does"), std::string::npos)
      << evaluation.parts[1].why;

  // Without the master's save path nobody is known to write: the worker is judged.
  WorkloadView unnamed = job;
  unnamed.pods[0].containers.front().command = {"python", "main.py", "--job_type=Train"};
  const auto unnamed_findings = evaluate(unnamed, nullptr, default_policy());
  const Finding* judged = checkpoint_of(unnamed_findings);
  ASSERT_NE(judged, nullptr);
  EXPECT_EQ(judged->outcome, Outcome::kFinding);

  // A worker with a checkpoint-looking mount of its own writes there.
  WorkloadView mounted = job;
  mounted.pods[1] = with_volume(mounted.pods[1], empty_dir("ckpt"), "/checkpoints");
  const auto mounted_findings = evaluate(mounted, nullptr, default_policy());
  const Finding* on_scratch = checkpoint_of(mounted_findings);
  ASSERT_NE(on_scratch, nullptr);
  EXPECT_EQ(on_scratch->outcome, Outcome::kFinding);
}

// A training kind whose every part only starts cluster nodes (Volcano's ray plugin: a
// head and workers running `ray start --block`) has no workload of its own: auto, and
// without training evidence checkpoint-volume is not evaluated. One part that runs a
// program, or an entrypoint, makes it a job again.
TEST(Evaluate, AClusterWithNoWorkloadOfItsOwnNeedsEvidence) {
  const Evaluation idle = evaluate_object_view(
      volcano_job({{"sh", "-c", "ray start --head --block"}, {"ray", "start", "--address=head:6379", "--block"}}),
      nullptr, default_policy());
  ASSERT_EQ(idle.parts.size(), 2u);
  for (const auto& p : idle.parts) {
    EXPECT_EQ(p.workload_class, WorkloadClass::kAuto) << p.why;
    EXPECT_NE(p.why.find("no workload of its own"), std::string::npos) << p.why;
  }
  const Finding* not_judged = checkpoint_of(idle.findings);
  ASSERT_NE(not_judged, nullptr);
  EXPECT_EQ(not_judged->outcome, Outcome::kNotEvaluated);

  const Evaluation trains = evaluate_object_view(
      volcano_job({{"sh", "-c", "ray start --head && python train.py --epochs 3"}, {"ray", "start", "--block"}}),
      nullptr, default_policy());
  EXPECT_EQ(trains.parts[0].workload_class, WorkloadClass::kTraining);
  ASSERT_NE(checkpoint_of(trains.findings), nullptr);
  EXPECT_EQ(checkpoint_of(trains.findings)->outcome, Outcome::kFinding);

  WorkloadView with_entrypoint = volcano_job({{"ray", "start", "--head", "--block"}});
  with_entrypoint.entrypoints.push_back("python train.py --epochs 3");
  EXPECT_EQ(evaluate_object_view(with_entrypoint, nullptr, default_policy()).parts[0].workload_class,
            WorkloadClass::kTraining);

  // `ray status` is no daemon; a part whose container runs the image's entrypoint says
  // nothing, so the object is not known to be idle.
  EXPECT_EQ(evaluate_object_view(volcano_job({{"ray", "status"}}), nullptr, default_policy()).parts[0].workload_class,
            WorkloadClass::kTraining);
  EXPECT_EQ(evaluate_object_view(volcano_job({{"ray", "start", "--block"}, {}}), nullptr, default_policy())
                .parts[0]
                .workload_class,
            WorkloadClass::kTraining);
}

// An object of a kind with no row (et-operator's TrainingJob) whose parts are a CPU
// launcher running horovodrun and GPU workers that run their image's entrypoint.
WorkloadView elastic_job(bool unlisted) {
  PodSpecView launcher = cpu_pod();
  launcher.part = "launcher";
  launcher.containers.front().command = {"sh", "-c", "horovodrun -np 4 python resnet.py --epochs 60"};
  PodSpecView worker = gpu_pod();
  worker.part = "worker";
  worker.containers.front().command.clear();  // the image's entrypoint
  worker.containers.front().args.clear();
  WorkloadView job = object_of("kai.alibabacloud.com", "TrainingJob", "elastic", {launcher, worker});
  job.unlisted_kind = unlisted;
  return job;
}

// A kind with no row names no coordinators: a part that runs a training launcher
// (et-operator's launcher: horovodrun over the workers) speaks for the parts that only run
// their image's entrypoint. The CPU launcher beside GPU workers is not judged itself. A
// kind with a row keeps its own roles: there the launcher does not speak for the others.
TEST(Evaluate, InAKindWithNoRowALauncherSpeaksForThePartsThatSayNothing) {
  const auto object = [](bool unlisted) {
    return evaluate_object_view(elastic_job(unlisted), nullptr, default_policy());
  };
  const Evaluation unlisted = object(true);
  ASSERT_EQ(unlisted.parts.size(), 2u);
  EXPECT_FALSE(unlisted.parts[0].evaluated) << unlisted.parts[0].why;
  EXPECT_EQ(unlisted.parts[1].workload_class, WorkloadClass::kTraining) << unlisted.parts[1].why;
  EXPECT_EQ(unlisted.parts[1].why, "launcher horovodrun");
  ASSERT_NE(checkpoint_of(unlisted.findings), nullptr);
  EXPECT_EQ(checkpoint_of(unlisted.findings)->outcome, Outcome::kFinding);

  const Evaluation listed = object(false);
  EXPECT_EQ(listed.parts[1].workload_class, WorkloadClass::kAuto) << listed.parts[1].why;
  ASSERT_NE(checkpoint_of(listed.findings), nullptr);
  EXPECT_EQ(checkpoint_of(listed.findings)->outcome, Outcome::kNotEvaluated);
}

// The launcher speaks only for parts that run their image's entrypoint or only daemons: a
// part with a command of its own that shows nothing either way (an evaluator, a plain
// script) keeps its own silence; and only a launcher among the evaluated parts speaks.
TEST(Evaluate, ALauncherSpeaksNeitherForPartsWithCommandsNorFromBeyondTheEvaluatedParts) {
  WorkloadView job = elastic_job(true);
  const PodSpecView launcher = job.pods[0], worker = job.pods[1];
  PodSpecView evaluator = gpu_pod();
  evaluator.part = "evaluator";
  evaluator.containers.front().command = {"python", "score.py", "--in", "/results"};
  job.pods = {launcher, evaluator, worker};
  const Evaluation all = evaluate_object_view(job, nullptr, default_policy());
  ASSERT_EQ(all.parts.size(), 3u);
  EXPECT_EQ(all.parts[1].workload_class, WorkloadClass::kAuto) << all.parts[1].why;
  EXPECT_EQ(all.parts[2].workload_class, WorkloadClass::kTraining) << all.parts[2].why;

  // The launcher last, beyond maxPartsPerObject: it speaks for nobody.
  job.pods = {worker, worker, launcher};
  Policy two = default_policy();
  two.max_parts_per_object = 2;
  const Evaluation bounded = evaluate_object_view(job, nullptr, two);
  ASSERT_EQ(bounded.parts.size(), 2u);
  EXPECT_EQ(bounded.parts[0].workload_class, WorkloadClass::kAuto) << bounded.parts[0].why;
}

// judgeCpuTraining judges what a person applies: not a CPU Job or Pod a controller made
// (KubeRay's submitter Job), not a Job that hands its program to a Ray cluster, and a
// script only when its name starts like a training script (CPU cron jobs run
// validate_constraints.py and prepare_train.py; "train" inside a word is no sign).
TEST(Evaluate, OnCpuOnlyWhatIsAppliedAndVisiblyTrainsIsJudged) {
  const auto judged = [](std::vector<std::string> command, std::string owner = "") {
    PodSpecView pod = cpu_pod();
    pod.containers.front().command = std::move(command);
    WorkloadView job = pod_object(pod);
    job.api_group = "batch";
    job.kind = "Job";
    if (!owner.empty()) job.owner = {"ray.io", owner, "r"};
    return evaluate_object_view(job, nullptr, default_policy()).parts.at(0).evaluated;
  };
  EXPECT_TRUE(judged({"python", "train.py", "--data", "/data"}));
  EXPECT_TRUE(judged({"python", "retrain.py"}));
  EXPECT_TRUE(judged({"python", "model.py", "--epochs", "3"}));
  EXPECT_FALSE(judged({"python", "train.py", "--data", "/data"}, "RayJob"));
  EXPECT_FALSE(judged({"ray", "job", "submit", "--address", "http://head:8265", "--", "python", "train.py"}));
  EXPECT_FALSE(judged({"python", "validate_constraints.py"}));
  EXPECT_FALSE(judged({"python", "prepare_train.py"}));
  EXPECT_FALSE(judged({"python", "main.py", "--save", "/ckpt"}));  // a checkpoint path alone is weak
}

// A wrapper's objects are counted apart: a GPU Deployment in an AppWrapper does not stop
// a CPU Job beside it that trains from being judged.
TEST(Evaluate, AcceleratorsOfAnotherWrappedObjectDoNotSilenceACpuJob) {
  PodSpecView server = gpu_pod();
  server.part = "component 0";
  server.containers.front().command = {"vllm", "serve", "m"};
  server.wrapped_group = "apps";
  server.wrapped_kind = "Deployment";
  PodSpecView trainer = cpu_pod();
  trainer.part = "component 1";
  trainer.containers.front().command = {"python", "train.py"};
  trainer.wrapped_group = "batch";
  trainer.wrapped_kind = "Job";
  WorkloadView wrapper = object_of("workload.codeflare.dev", "AppWrapper", "w", {server, trainer});
  const Evaluation e = evaluate_object_view(wrapper, nullptr, default_policy());
  ASSERT_EQ(e.parts.size(), 2u);
  EXPECT_TRUE(e.parts[1].evaluated) << e.parts[1].why;
  server.wrapped_group = "batch";  // one wrapped Job: its GPU part is where it trains
  server.wrapped_kind = "Job";
  server.containers.front().command = {"torchrun", "train.py"};
  wrapper.pods = {server, trainer};
  EXPECT_FALSE(evaluate_object_view(wrapper, nullptr, default_policy()).parts[1].evaluated);
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// An inference server in a training kind (offline batch inference: a vLLM server as a
// native sidecar, a client walking a dataset) serves: no checkpoint finding for its
// emptyDir. A part that also visibly trains stays training; a serving part's
// checkpoint-looking mount that the server loads from is a model, not checkpoints.
TEST(Evaluate, AnInferenceServerInATrainingKindServes) {
  PodSpecView pod = with_volume(gpu_pod(), empty_dir("scratch"), "/scratch");
  pod.containers.front().command = {"python", "run_batch.py", "--input", "/data/prompts.jsonl"};
  Container sidecar;
  sidecar.name = "vllm";
  sidecar.command = {"vllm", "serve", "/models/llama", "--port", "8000"};
  pod.init_containers.push_back(sidecar);
  WorkloadView job = volcano_job({});
  job.api_group = "jobset.x-k8s.io";
  job.kind = "JobSet";
  job.pods.push_back(pod);
  const Evaluation batch = evaluate_object_view(job, nullptr, default_policy());
  ASSERT_EQ(batch.parts.size(), 1u);
  EXPECT_EQ(batch.parts[0].workload_class, WorkloadClass::kServing) << batch.parts[0].why;
  EXPECT_EQ(batch.parts[0].why, "inference server vllm serve");
  EXPECT_EQ(checkpoint_of(batch.findings), nullptr);

  job.pods.front().containers.front().command = {"torchrun", "train.py", "--output_dir", "/scratch/out"};
  const Evaluation trains = evaluate_object_view(job, nullptr, default_policy());
  EXPECT_EQ(trains.parts[0].workload_class, WorkloadClass::kTraining) << trains.parts[0].why;
  ASSERT_NE(checkpoint_of(trains.findings), nullptr);
  EXPECT_EQ(checkpoint_of(trains.findings)->outcome, Outcome::kFinding);

  PodSpecView server = with_volume(gpu_pod(), empty_dir("ckpt"), "/checkpoints");
  server.containers.front().command = {"vllm", "serve", "/checkpoints/step-900"};
  EXPECT_EQ(checkpoint_of(evaluate_object_view(deployment_of(server), nullptr, default_policy()).findings), nullptr);
  server.containers.front().command = {"python", "server.py"};
  const Evaluation writer = evaluate_object_view(deployment_of(server), nullptr, default_policy());
  const Finding* writes = checkpoint_of(writer.findings);
  ASSERT_NE(writes, nullptr);
  EXPECT_EQ(writes->outcome, Outcome::kFinding);
}

}  // namespace
}  // namespace kgtest

namespace kgtest {
namespace {

// Batch work that only reads checkpoints (offline inference, evaluation) in a training
// kind is not training: no checkpoint finding for its scratch space, and its
// accelerator checks still run. A part that also trains, or whose job's coordinator
// trains, stays training.
TEST(Evaluate, APartThatOnlyReadsCheckpointsInATrainingKindIsNotTraining) {
  PodSpecView pod = with_volume(gpu_pod(), empty_dir("scratch"), "/scratch");
  pod.containers.front().command = {"/bin/bash", "-c", "cd /home/infer && ./run_infer.sh --om_path=/models/m.om"};
  WorkloadView job = volcano_job({});
  job.pods.push_back(pod);
  const Evaluation infer = evaluate_object_view(job, nullptr, default_policy());
  ASSERT_EQ(infer.parts.size(), 1u);
  EXPECT_EQ(infer.parts[0].workload_class, WorkloadClass::kAuto) << infer.parts[0].why;
  EXPECT_NE(infer.parts[0].why.find("reading checkpoints"), std::string::npos) << infer.parts[0].why;
  const Finding* checkpoint = checkpoint_of(infer.findings);
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, Outcome::kNotEvaluated);

  job.pods.front().containers.front().command = {"/bin/bash", "-c",
                                                 "./run_infer.sh && python train.py --output_dir /scratch/out"};
  const Evaluation trains = evaluate_object_view(job, nullptr, default_policy());
  EXPECT_EQ(trains.parts[0].workload_class, WorkloadClass::kTraining) << trains.parts[0].why;
  ASSERT_NE(checkpoint_of(trains.findings), nullptr);
  EXPECT_EQ(checkpoint_of(trains.findings)->outcome, Outcome::kFinding);
}

}  // namespace
}  // namespace kgtest

// What programs save when nothing tells them: where (policy savesByDefault: Horovod's
// Keras MNIST writes ./checkpoint-{epoch}.h5 in its working directory; the place counts
// only when it resolves, and the mount that holds it decides, as for a flag), or nothing
// at all (savesNothing).
#include "policies/save_places.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policies/evaluate.h"
#include "policies/evidence.h"
#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

std::optional<SavePath> saved(std::vector<std::string> command, std::string_view dir = {},
                              const Policy& policy = default_policy()) {
  return save_path(command_facts(command, {}), {}, policy, dir);
}

std::string at(std::vector<std::string> command, std::string_view dir = {}) {
  const auto s = saved(std::move(command), dir);
  return s ? s->path : std::string();
}

TEST(SavesByDefault, AListedProgramSavesInTheDirectoryItRunsIn) {
  EXPECT_EQ(at({"sh", "-c", "cd /workspace/run && python /examples/tensorflow2_keras_mnist.py"}), "/workspace/run");
  EXPECT_EQ(at({"python", "/horovod/examples/tensorflow2_mnist.py"}, "/work"), "/work/checkpoints");
  // mpirun's -wdir is the directory the program starts in; -wd is a weight decay.
  EXPECT_EQ(at({"mpirun", "-np", "4", "-wdir", "/w/run", "python", "keras_mnist.py"}), "/w/run");
  EXPECT_EQ(at({"mpirun", "--wdir", "/w/r2", "python", "keras_mnist.py"}), "/w/r2");
  EXPECT_EQ(at({"python", "train.py", "-wd", "5e-4", "--save-dir", "ckpt"}, "/app"), "/app/ckpt");
  const auto s = saved({"python", "keras_mnist.py"}, "/app");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->flag, "keras_mnist.py's default place");
}

TEST(SavesByDefault, AnUnknownWorkingDirectorySaysNothing) {
  EXPECT_FALSE(saved({"python", "/examples/tensorflow2_keras_mnist.py"}));
  // The first listed program decides: a later one is not tried again.
  EXPECT_FALSE(saved({"sh", "-c", "python keras_mnist.py; cd /w && python keras_mnist.py"}));
  EXPECT_FALSE(saved({"sh", "-c", "cd repo && python keras_mnist.py"}));
  EXPECT_FALSE(saved({"python", "my_mnist.py"}, "/app"));
}

TEST(SavesByDefault, ThePlaceItIsToldWins) {
  // A listed flag of any program says where, before the default.
  EXPECT_EQ(at({"python", "keras_mnist.py", "--output_dir", "/ckpt"}, "/app"), "/ckpt");
  // The program's own flag for its place (not a listed flag) is read from its entry.
  const auto s = saved({"horovodrun", "-np", "8", "python", "pytorch_imagenet_resnet50.py", "--checkpoint-format",
                        "/pvc/ckpt-{epoch}.pth.tar"});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/pvc");  // the directory of the file name pattern
  EXPECT_EQ(s->flag, "--checkpoint-format");
  EXPECT_EQ(at({"python", "keras_imagenet_resnet50.py", "--checkpoint-format", "ckpt/{epoch}.h5"}, "/w"), "/w/ckpt");
  EXPECT_EQ(at({"python", "pytorch_imagenet_resnet50.py"}, "/app"), "/app");
}

// YOLOv5 saves beside its script: a relative script is matched by its path under the
// directory the command stands in.
TEST(SavesByDefault, BesideTheScript) {
  EXPECT_EQ(at({"sh", "-c", "cd /opt/yolov5 && python train.py --epochs 3"}), "/opt/yolov5/runs/train");
  EXPECT_EQ(at({"python", "/src/yolov5/train.py", "--epochs", "3"}), "/src/yolov5/runs/train");
  EXPECT_EQ(at({"python", "/src/yolov5/train.py", "--project", "/pvc/runs"}), "/pvc/runs");
  EXPECT_FALSE(saved({"python", "train.py", "--epochs", "3"}, "/app"));
}

TEST(SavesByDefault, IsPolicyData) {
  Policy none = default_policy();
  none.saves_by_default.clear();
  EXPECT_FALSE(saved({"python", "keras_mnist.py"}, "/app", none));
  EXPECT_FALSE(training_evidence(command_facts({"python", "keras_mnist.py"}, {}), {}, none));
  Policy mine = none;
  mine.saves_by_default = {"*/lab/fit.py=/scratch/out"};
  EXPECT_EQ(saved({"python", "/opt/lab/fit.py"}, {}, mine)->path, "/scratch/out");
  EXPECT_EQ(training_evidence(command_facts({"python", "/opt/lab/fit.py"}, {}), {}, mine), "script fit.py");
}

TEST(SavesByDefault, AListedProgramIsEvidenceOfTraining) {
  EXPECT_EQ(training_evidence(command_facts({"python", "/examples/keras_mnist.py"}, {}), {}, default_policy()),
            "script keras_mnist.py");
}

// A program with no code that saves keeps nothing, unless a save flag says it is a fork
// that does; by path where the name alone is common.
TEST(SavesNothing, AProgramWithNoSaveCodeKeepsNothing) {
  const auto off = [](std::vector<std::string> command) {
    return checkpointing_off(command_facts(command, {}), {}, default_policy());
  };
  EXPECT_EQ(off({"/var/tf_mnist/mnist_with_summaries.py", "--learning_rate=0.01"}),
            "mnist_with_summaries.py, which has no code that saves");
  EXPECT_EQ(off({"python", "RunTrial.py", "--architecture", "[[0]]"}), "RunTrial.py, which has no code that saves");
  EXPECT_EQ(off({"horovodrun", "-np", "2", "python", "/horovod/examples/pytorch/pytorch_mnist.py"}),
            "pytorch_mnist.py, which has no code that saves");
  EXPECT_FALSE(off({"python", "/app/pytorch_mnist.py"}));
  EXPECT_FALSE(off({"python", "mnist_with_summaries.py", "--checkpoint_dir", "/ckpt"}));
  Policy none = default_policy();
  none.saves_nothing.clear();
  EXPECT_FALSE(checkpointing_off(command_facts({"python", "RunTrial.py"}, {}), {}, none));
}

// A script that copies its local results to object storage with a storage CLI keeps them
// there; a download, a copy between buckets or a local copy is no such upload.
TEST(Uploads, WhatAStorageCliUploadsLandsInObjectStorage) {
  const auto dest = [](std::string script, std::vector<EnvVar> env = {}) {
    return checkpoint_destination(command_facts({"bash", "-c", std::move(script)}, {}), env, default_policy());
  };
  EXPECT_EQ(dest("python train.py --epochs 3\naws s3 mv --no-progress model.tar.gz s3://$(OUT)"),
            "s3://$(OUT) (uploaded by aws s3 mv)");
  EXPECT_EQ(dest("python train.py\naws s3 mv m.tgz s3://$(OUT)", {{"OUT", "lab/runs/"}}),
            "s3://lab/runs/ (uploaded by aws s3 mv)");
  EXPECT_EQ(dest("python train.py && gsutil -m cp -r ./out gs://runs/a"), "gs://runs/a (uploaded by gsutil -m cp)");
  EXPECT_EQ(dest("python train.py; gcloud storage rsync out gs://r/b"), "gs://r/b (uploaded by gcloud storage rsync)");
  // The upload outranks a local save flag: the run keeps what it saved there.
  EXPECT_EQ(dest("python train.py --output_dir /out && aws s3 sync /out s3://b/run"),
            "s3://b/run (uploaded by aws s3 sync)");
  EXPECT_FALSE(dest("aws s3 cp s3://data/train.csv . && python train.py"));
  // An option's value is not an operand: this is a download.
  EXPECT_FALSE(dest("aws s3 sync --exclude '*.bin' s3://models/llama /models && torchrun train.py"));
  EXPECT_FALSE(dest("aws --endpoint-url http://minio:9000 s3 cp s3://m/x /x && python t.py"));
  EXPECT_EQ(dest("python t.py; aws s3 cp --endpoint-url http://minio:9000 --recursive /out s3://b/o"),
            "s3://b/o (uploaded by aws s3 cp)");
  // Logs synced to a bucket say nothing about checkpoints.
  EXPECT_FALSE(dest("python t.py & while true; do aws s3 sync /logs s3://b/logs; sleep 60; done"));
  EXPECT_FALSE(dest("python t.py && gsutil -m cp -r ./tb-metrics/* gs://b/m"));
  // The destination may be a kubelet reference.
  EXPECT_EQ(dest("python t.py && aws s3 cp /out $(DEST)", {{"DEST", "s3://b/run"}}),
            "s3://b/run (uploaded by aws s3 cp)");
  EXPECT_FALSE(dest("aws s3 cp s3://a/x s3://b/x && python train.py"));
  EXPECT_FALSE(dest("aws s3 ls s3://b/ && python train.py"));
  EXPECT_FALSE(dest("cp model.pt /out/ && python train.py"));
}

// A flag that is a save word alone names a destination by its URL; a bucket a name says
// the run saves to needs no scheme.
TEST(Uploads, ASaveWordAloneOrASaveBucketNamesTheDestination) {
  const auto dest = [](std::vector<std::string> command) {
    return checkpoint_destination(command_facts(command, {}), {}, default_policy());
  };
  EXPECT_EQ(dest({"python", "lora.py", "--output=s3://art/adapters"}), "s3://art/adapters");
  EXPECT_EQ(dest({"python", "t.py", "--export", "gs://m/v1"}), "gs://m/v1");
  EXPECT_EQ(dest({"python3", "/src/train.py", "--data-bucket", "lab-data", "--checkpoint-bucket", "lab-ckpt"}),
            "bucket lab-ckpt");
  EXPECT_FALSE(dest({"python", "t.py", "--output", "/local/out"}));
  EXPECT_FALSE(dest({"python", "t.py", "--data-bucket", "lab-data"}));
  EXPECT_FALSE(dest({"python", "t.py", "--checkpoint-bucket", "$(BUCKET)"}));
  // A switch's value is no bucket's name.
  EXPECT_FALSE(dest({"python", "t.py", "--save_to_bucket", "false"}));
  EXPECT_FALSE(dest({"python", "t.py", "--save-bucket", "My Bucket"}));
  EXPECT_FALSE(dest({"python", "t.py", "--dataset", "gs://d/train"}));
}

TEST(Uploads, AnArtifactUriNamesWhereTheRunKeepsItsResult) {
  EXPECT_EQ(
      checkpoint_destination(command_facts({"python", "-m", "recs.train", "--artifact-uri=s3://models/run1/"}, {}), {},
                             default_policy()),
      "s3://models/run1/");
}

// The whole way: a GPU Job running Horovod's Keras MNIST in a directory of its own
// filesystem is warned although a PVC is mounted; in a directory on the PVC it is not.
TEST(SavesByDefault, CheckpointVolumeJudgesTheDefaultPlace) {
  const auto judge = [](std::string working_dir) {
    PodSpecView pod = with_volume(gpu_pod(), pvc("data"), "/data");
    pod.containers.front().command = {"python", "/examples/tensorflow2_keras_mnist.py"};
    pod.containers.front().working_dir = std::move(working_dir);
    WorkloadView object = pod_object(pod);
    const auto findings = evaluate(object, nullptr, default_policy());
    const auto it =
        std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.check == "checkpoint-volume"; });
    return it == findings.end() ? std::string() : it->message;
  };
  EXPECT_NE(judge("/workspace")
                .find("checkpoints at /workspace (tensorflow2_keras_mnist.py's default place) are "
                      "in the container's own filesystem"),
            std::string::npos)
      << judge("/workspace");
  EXPECT_EQ(judge("/data/run"), "");
}

}  // namespace
}  // namespace kgtest

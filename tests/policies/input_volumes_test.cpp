// InputUses (policies/input_volumes.h): a durable volume named for input, which nothing in
// the pod writes to, is set aside by checkpoint-volume. Each row is one way a pod may show
// that the volume is, or is not, only read.
#include "policies/input_volumes.h"

#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

using Holds = InputUses::Holds;

struct InputRow {
  std::string name;
  VolumeMount mount;
  std::vector<std::string> command;
  std::vector<EnvVar> env = {};
  std::string working_dir = {};
  Holds holds = Holds::kInput;
};

Holds holds(const PodSpecView& pod, const VolumeMount& mount) {
  return InputUses(pod, "ml", nullptr, default_policy()).holds(mount);
}

void PrintTo(const InputRow& row, std::ostream* os) { *os << row.name; }

class InputVolumeTable : public testing::TestWithParam<InputRow> {};

TEST_P(InputVolumeTable, Rule) {
  const InputRow& row = GetParam();
  PodSpecView pod = gpu_pod();
  Container& trainer = pod.containers.front();
  trainer.volume_mounts = {row.mount};
  trainer.command = row.command;
  trainer.env = row.env;
  trainer.working_dir = row.working_dir;
  EXPECT_EQ(holds(pod, row.mount), row.holds);
}

const std::vector<InputRow> kRows = {
    // Named for input, and nothing in the pod points into it.
    {"DataClaimAtData", {"data", "/data"}, {"torchrun", "train.py"}},
    {"DirectoryNameAloneSays", {"pvc0", "/app/data"}, {"torchrun", "train.py"}},
    {"VolumeNameAloneSays", {"mnist-nfs-data1", "/mnt/x"}, {"torchrun", "train.py"}},
    {"CamelCaseMountDirectory", {"pvc0", "/mnt/hfCache"}, {"torchrun", "train.py"}},
    // Read through flags and env names that read (data, cache, a model it loads).
    {"ReadByDatasetFlag",
     {"data", "/data"},
     {"torchrun", "train.py", "--dataset_path", "/data/train.json"},
     {},
     {},
     Holds::kRead},
    {"ReadByFlagWithEquals",
     {"data", "/data"},
     {"torchrun", "train.py", "--data-dir=/data/imagenet"},
     {},
     {},
     Holds::kRead},
    {"ReadByModelName",
     {"data", "/data"},
     {"python", "sft.py", "--model_name", "/data/models/llama"},
     {},
     {},
     Holds::kRead},
    {"CacheEnv", {"hf-cache", "/cache"}, {"python", "sft.py"}, {{"HF_HOME", "/cache/hf"}}, {}, Holds::kRead},
    {"ReadInsideAScript",
     {"data", "/data"},
     {"sh", "-c", "pip install -r req.txt && python train.py --train_file /data/train.csv"},
     {},
     {},
     Holds::kRead},
    // A name that may hold what the run writes, or a general-purpose share.
    {"ModelsWordInName", {"data-models", "/data"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    {"WorkspaceVolumeAtData", {"workspace", "/data"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    // A subPath mount shows one directory: the volume's own name does not count then.
    {"InputSubPathOfAWorkVolume", {"work", "/app/data", false, "data"}, {"torchrun", "train.py"}},
    {"WorkVolumeWithoutSubPath", {"work", "/app/data"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    {"TeamShare", {"team-data", "/mnt/team-data"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    {"NoInputWord", {"shared", "/mnt/shared"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    // Used in a way that may write there.
    {"WorkingDirInside", {"data", "/data"}, {"torchrun", "train.py"}, {}, "/data/src", Holds::kOther},
    {"PlainArgument", {"data", "/data"}, {"python", "/data/train.py"}, {}, {}, Holds::kOther},
    {"ChangesIntoIt", {"data", "/data"}, {"sh", "-c", "cd /data/run && torchrun train.py"}, {}, {}, Holds::kOther},
    {"OtherFlag", {"data", "/data"}, {"torchrun", "train.py", "--dir", "/data/runs"}, {}, {}, Holds::kOther},
    {"SaveFlagOfReadingWords",
     {"data", "/data"},
     {"torchrun", "train.py", "--data_output_dir", "/data/o"},
     {},
     {},
     Holds::kOther},
    {"OtherEnv", {"hf-cache", "/cache"}, {"python", "sft.py"}, {{"OUT", "/cache/out"}}, {}, Holds::kOther},
    {"PlainArgumentAfterAFlagWithItsValue",
     {"data", "/data"},
     {"torchrun", "train.py", "--data_file=/data/a.json", "/data/out"},
     {},
     {},
     Holds::kOther},
    {"AssignedInScript", {"data", "/data"}, {"sh", "-c", "RUN=/data/run1 torchrun train.py"}, {}, {}, Holds::kOther},
    {"RedirectedIntoIt",
     {"data", "/data"},
     {"sh", "-c", "python x.py --data_path /data/x >/data/out.log"},
     {},
     {},
     Holds::kOther},
    {"LogFileFlagWrites",
     {"data", "/data"},
     {"torchrun", "train.py", "--log_file", "/data/train.log"},
     {},
     {},
     Holds::kOther},
    {"WorkingDirAbove", {"data", "/mnt/data"}, {"torchrun", "train.py"}, {}, "/mnt", Holds::kOther},
    {"KeepsWordInSubPath", {"data", "/data", false, "checkpoints"}, {"torchrun", "train.py"}, {}, {}, Holds::kOther},
    {"EnvFromAConfigMapNotInView",
     {"data", "/data"},
     {"torchrun", "train.py"},
     {{"", "", "ConfigMap run-env"}},
     {},
     Holds::kOther},
    {"SecretEnvSaysNothing", {"data", "/data"}, {"torchrun", "train.py"}, {{"WANDB_API_KEY", "", "Secret wandb"}}},
    // A path that only starts like the mount is elsewhere.
    {"SiblingDirectoryIsNotInside", {"data", "/data"}, {"python", "/data2/train.py"}},
};

INSTANTIATE_TEST_SUITE_P(InputVolumes, InputVolumeTable, testing::ValuesIn(kRows),
                         [](const auto& info) { return info.param.name; });

// Every main container counts: a sidecar that writes into the volume keeps it from being
// set aside, whichever container trains.
TEST(InputVolumes, ASidecarWritingThereCounts) {
  PodSpecView pod = gpu_pod();
  const VolumeMount mount{"data", "/data"};
  pod.containers.front().volume_mounts = {mount};
  EXPECT_EQ(holds(pod, mount), Holds::kInput);
  pod.containers.push_back({.name = "sync", .resources = {}, .volume_mounts = {mount}});
  pod.containers.back().command = {"sh", "-c", "while true; do cp -r /tmp/out /data/out; sleep 60; done"};
  EXPECT_EQ(holds(pod, mount), Holds::kOther);
}

// The paths kept per pod are bounded (256 writes): past the bound, a write may land in any
// volume (a hostile pod costs a bounded amount per mount).
TEST(InputVolumes, PastTheBoundAnyVolumeMayBeWritten) {
  PodSpecView pod = gpu_pod();
  const VolumeMount mount{"data", "/data"};
  pod.containers.front().volume_mounts = {mount};
  pod.containers.front().command = {"cp"};
  for (int i = 0; i < 256; ++i) pod.containers.front().args.push_back("/elsewhere/" + std::to_string(i));
  EXPECT_EQ(holds(pod, mount), Holds::kInput);  // all kept, none into it
  pod.containers.front().args.push_back("/elsewhere/last");
  EXPECT_EQ(holds(pod, mount), Holds::kOther);
}

// A script the pod runs from a ConfigMap the input holds is read like its command line.
TEST(InputVolumes, AScriptFromAConfigMapInViewIsRead) {
  PodSpecView pod = gpu_pod();
  const VolumeMount mount{"data", "/data"};
  Volume config = volume("config", "configMap");
  config.config_map = "train-script";
  pod.volumes = {pvc("data"), config};
  pod.containers.front().volume_mounts = {mount, {"config", "/etc/config"}};
  pod.containers.front().command = {"bash", "/etc/config/train.sh"};
  const ClusterSnapshot known({}, {}, {},
                              {{"ml", "train-script", {{"train.sh", "torchrun t.py && cp -r out /data/runs/"}}}});
  EXPECT_EQ(InputUses(pod, "ml", &known, default_policy()).holds(mount), Holds::kOther);
  EXPECT_EQ(InputUses(pod, "ml", nullptr, default_policy()).holds(mount), Holds::kInput);  // not in view: by name
}

TEST(InputVolumes, UnderIsAtAPathBoundary) {
  EXPECT_TRUE(under("/data", "/data"));
  EXPECT_TRUE(under("/data/", "/data/x"));
  EXPECT_TRUE(under("/", "/anything"));
  EXPECT_FALSE(under("/data", "/database"));
  EXPECT_FALSE(under("/data/x", "/data"));
}

}  // namespace
}  // namespace kgtest

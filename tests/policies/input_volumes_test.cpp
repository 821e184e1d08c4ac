// holds_only_input (policies/input_volumes.h): a durable volume named for input, which the
// command and env only read from, is set aside by checkpoint-volume. Each row is one way a
// pod may show that the volume is, or is not, only read.
#include "policies/input_volumes.h"

#include <gtest/gtest.h>

#include "tests/policies/test_pods.h"

namespace kgtest {
namespace {

struct InputRow {
  std::string name;
  VolumeMount mount;
  std::vector<std::string> command;
  std::vector<EnvVar> env = {};
  std::string working_dir = {};
  bool input = true;
};

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
  EXPECT_EQ(InputUses(pod, default_policy()).holds_only_input(row.mount), row.input);
}

const std::vector<InputRow> kRows = {
    // Named for input, and nothing in the pod points into it.
    {"DataClaimAtData", {"data", "/data"}, {"torchrun", "train.py"}},
    {"DirectoryNameAloneSays", {"pvc0", "/app/data"}, {"torchrun", "train.py"}},
    {"VolumeNameAloneSays", {"mnist-nfs-data1", "/mnt/x"}, {"torchrun", "train.py"}},
    {"CamelCaseName", {"hfCache", "/mnt/x"}, {"torchrun", "train.py"}},
    // Read through flags and env names that read (data, cache, a model it loads).
    {"ReadByDatasetFlag", {"data", "/data"}, {"torchrun", "train.py", "--dataset_path", "/data/train.json"}},
    {"ReadByFlagWithEquals", {"data", "/data"}, {"torchrun", "train.py", "--data-dir=/data/imagenet"}},
    {"ReadByModelName", {"data", "/data"}, {"python", "sft.py", "--model_name", "/data/models/llama"}},
    {"CacheEnv", {"hf-cache", "/cache"}, {"python", "sft.py"}, {{"HF_HOME", "/cache/hf"}}},
    {"ReadInsideAScript",
     {"data", "/data"},
     {"sh", "-c", "pip install -r req.txt && python train.py --train_file /data/train.csv"}},
    // A name that may hold what the run writes, or a general-purpose share.
    {"ModelsWordInName", {"data-models", "/data"}, {"torchrun", "train.py"}, {}, {}, false},
    {"WorkspaceVolumeAtData", {"workspace", "/data"}, {"torchrun", "train.py"}, {}, {}, false},
    {"TeamShare", {"team-data", "/mnt/team-data"}, {"torchrun", "train.py"}, {}, {}, false},
    {"NoInputWord", {"shared", "/mnt/shared"}, {"torchrun", "train.py"}, {}, {}, false},
    // Used in a way that may write there.
    {"WorkingDirInside", {"data", "/data"}, {"torchrun", "train.py"}, {}, "/data/src", false},
    {"PlainArgument", {"data", "/data"}, {"python", "/data/train.py"}, {}, {}, false},
    {"ChangesIntoIt", {"data", "/data"}, {"sh", "-c", "cd /data/run && torchrun train.py"}, {}, {}, false},
    {"OtherFlag", {"data", "/data"}, {"torchrun", "train.py", "--dir", "/data/runs"}, {}, {}, false},
    {"SaveFlagOfReadingWords",
     {"data", "/data"},
     {"torchrun", "train.py", "--data_output_dir", "/data/o"},
     {},
     {},
     false},
    {"OtherEnv", {"hf-cache", "/cache"}, {"python", "sft.py"}, {{"OUT", "/cache/out"}}, {}, false},
    {"PlainArgumentAfterAFlagWithItsValue",
     {"data", "/data"},
     {"torchrun", "train.py", "--data_file=/data/a.json", "/data/out"},
     {},
     {},
     false},
    {"AssignedInScript", {"data", "/data"}, {"sh", "-c", "RUN=/data/run1 torchrun train.py"}, {}, {}, false},
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
  EXPECT_TRUE(InputUses(pod, default_policy()).holds_only_input(mount));
  pod.containers.push_back({.name = "sync", .resources = {}, .volume_mounts = {mount}});
  pod.containers.back().command = {"sh", "-c", "while true; do cp -r /tmp/out /data/out; sleep 60; done"};
  EXPECT_FALSE(InputUses(pod, default_policy()).holds_only_input(mount));
}

// The paths read from a pod are bounded: past the bound, a path the job may write to
// keeps every volume from being set aside (a hostile pod costs a bounded amount per mount).
TEST(InputVolumes, PastTheBoundAnyVolumeMayBeWritten) {
  PodSpecView pod = gpu_pod();
  const VolumeMount mount{"data", "/data"};
  pod.containers.front().volume_mounts = {mount};
  for (int i = 0; i < 300; ++i) pod.containers.front().args.push_back("--data_file=/elsewhere/" + std::to_string(i));
  EXPECT_TRUE(InputUses(pod, default_policy()).holds_only_input(mount));  // reads only
  pod.containers.front().args.push_back("/scratch/out");
  EXPECT_FALSE(InputUses(pod, default_policy()).holds_only_input(mount));
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

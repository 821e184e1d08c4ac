#include "policies/mounted_files.h"

#include <gtest/gtest.h>

#include "test_pods.h"

namespace kgtest {
namespace {

using namespace kubegap;

// A pod whose container mounts ConfigMap "train-config" at /config.
PodSpecView config_pod(std::vector<std::string> command) {
  Volume config = volume("config", "configMap");
  config.config_map = "train-config";
  PodSpecView pod = with_volume(gpu_pod(), config, "/config");
  pod.containers.front().command = std::move(command);
  return pod;
}

std::string value_of(const std::vector<EnvVar>& settings, std::string_view name) {
  for (const auto& s : settings) {
    if (s.name == name) return s.value;
  }
  return "(none)";
}

// The file the command names is read first: its settings speak before another file's.
TEST(MountedFiles, TheConfigFileTheCommandNamesComesFirst) {
  const ClusterSnapshot view(
      {}, {}, {}, {{"ml", "train-config", {{"a.yaml", "output_dir: /data/a\n"}, {"b.yaml", "output_dir: /tmp/b\n"}}}});
  const auto first_output = [&](std::vector<std::string> command) {
    const PodSpecView pod = config_pod(std::move(command));
    ConfigReadBudget budget;
    const MountedFiles files = mounted_files(command_facts(pod.containers.front().command, {}), pod.containers.front(),
                                             pod, "ml", &view, budget);
    return files.settings.empty() ? std::string("(none)") : files.settings.front().value;
  };
  EXPECT_EQ(first_output({"python", "train.py"}), "/data/a");  // ConfigMap key order
  EXPECT_EQ(first_output({"python", "train.py", "--config", "/config/b.yaml"}), "/tmp/b");
  EXPECT_EQ(first_output({"python", "train.py", "--config=/config/b.yaml"}), "/tmp/b");
  EXPECT_EQ(first_output({"python", "train.py", "--config=/config/b.yaml.bak"}), "/data/a");
}

// A shell script in the volume is the command's, not settings; without the ConfigMap in
// view nothing is read.
TEST(MountedFiles, AScriptIsReadAsTheCommandAndNeverAsSettings) {
  const ClusterSnapshot view(
      {}, {}, {}, {{"ml", "train-config", {{"run.sh", "#!/bin/bash\ntorchrun train.py --output_dir /tmp/o\n"}}}});
  const PodSpecView pod = config_pod({"bash", "/config/run.sh"});
  const CommandFacts facts = command_facts(pod.containers.front().command, {});
  ConfigReadBudget budget;
  const MountedFiles files = mounted_files(facts, pod.containers.front(), pod, "ml", &view, budget);
  EXPECT_NE(files.script.find("torchrun"), std::string_view::npos);
  EXPECT_TRUE(files.settings.empty());
  EXPECT_TRUE(mounted_files(facts, pod.containers.front(), pod, "ml", nullptr, budget).script.empty());
}

// A Python script the command runs from the volume gives its string constants as settings:
// after a config file the command names (`--config` overrides the script's defaults),
// before the other files'. It is not a shell script, and it is charged once.
TEST(MountedFiles, APythonScriptsConstantsComeAfterTheNamedConfigOnly) {
  const std::string script = "import os\nOUTPUT_DIR = \"s3://runs/x\"\nmodel.fit(x, epochs=3)\n";
  const std::string config = "output_dir: /data/a\n";
  const ClusterSnapshot view({}, {}, {}, {{"ml", "train-config", {{"a.yaml", config}, {"train.py", script}}}});
  const auto settings = [&](std::vector<std::string> command) {
    const PodSpecView pod = config_pod(std::move(command));
    ConfigReadBudget budget;
    const std::size_t start = budget.bytes;
    const MountedFiles files = mounted_files(command_facts(pod.containers.front().command, {}), pod.containers.front(),
                                             pod, "ml", &view, budget);
    EXPECT_TRUE(files.script.empty());
    EXPECT_EQ(start - budget.bytes, script.size() + config.size());
    std::string out;
    for (const auto& s : files.settings) out += s.name + (s.script ? "(script) " : "(file) ");
    return out;
  };
  EXPECT_EQ(settings({"python", "/config/train.py"}), "OUTPUT_DIR(script) output_dir(file) ");
  EXPECT_EQ(settings({"python", "/config/train.py", "--config", "/config/a.yaml"}),
            "output_dir(file) OUTPUT_DIR(script) ");
}

// A script projected under another path (key `run`, path run.sh) is the command's script,
// never read again as settings.
TEST(MountedFiles, AProjectedScriptIsNotReadAsSettings) {
  const ClusterSnapshot view({}, {}, {}, {{"ml", "train-config", {{"run", "OUTPUT_DIR=s3://runs/x\nmax_steps=5\n"}}}});
  Volume config = volume("config", "configMap");
  config.config_map = "train-config";
  config.items = {{"run", "run.sh"}};
  PodSpecView pod = with_volume(gpu_pod(), config, "/scripts");
  pod.containers.front().command = {"bash", "/scripts/run.sh"};
  const CommandFacts facts = command_facts(pod.containers.front().command, {});
  ConfigReadBudget budget;
  const std::size_t start = budget.bytes;
  const MountedFiles files = mounted_files(facts, pod.containers.front(), pod, "ml", &view, budget);
  EXPECT_NE(files.script.find("max_steps=5"), std::string_view::npos);
  EXPECT_TRUE(files.settings.empty());
  EXPECT_EQ(start - budget.bytes, files.script.size());  // charged once
}

// Cut short by the budget, a file is read to its last whole line: `max_steps: 100000`
// never becomes `max_steps: 1`.
TEST(MountedFiles, ABudgetCutEndsAtAWholeLine) {
  const ClusterSnapshot view({}, {}, {}, {{"ml", "train-config", {{"train.yaml", "lr: 0.1\nmax_steps: 100000\n"}}}});
  const PodSpecView pod = config_pod({"python", "train.py"});
  ConfigReadBudget small{20};  // ends inside the second line
  const MountedFiles files =
      mounted_files(command_facts({"python", "train.py"}, {}), pod.containers.front(), pod, "ml", &view, small);
  EXPECT_EQ(value_of(files.settings, "lr"), "0.1");
  EXPECT_EQ(value_of(files.settings, "max_steps"), "(none)");
}

// One object reads at most ConfigReadBudget's bytes of files, however many containers
// mount them: a hostile object with hundreds of containers stays cheap.
TEST(MountedFiles, OneObjectReadsABoundedAmountInAll) {
  std::string big = "max_steps: 9000\n";
  while (big.size() < 60 * 1024) big += "# padding line of a large config file, nothing to read here\n";
  big += "output_dir: /tmp/late\n";
  const ClusterSnapshot view({}, {}, {}, {{"ml", "train-config", {{"train.yaml", big}}}});
  const PodSpecView pod = config_pod({"python", "train.py"});
  const CommandFacts facts = command_facts(pod.containers.front().command, {});
  ConfigReadBudget budget;
  const std::size_t start = budget.bytes;
  std::size_t read_containers = 0;
  for (int i = 0; i < 10; ++i) {
    const MountedFiles files = mounted_files(facts, pod.containers.front(), pod, "ml", &view, budget);
    if (value_of(files.settings, "max_steps") == "9000") ++read_containers;
  }
  // Spent down to less than a line (a cut ends at a whole line), then nothing more is read.
  constexpr std::size_t kLine = 62;
  EXPECT_LT(budget.bytes, kLine);
  EXPECT_GE(read_containers, start / big.size());
  EXPECT_LE(read_containers, start / big.size() + 2);  // the last ones read a few lines
  ConfigReadBudget small{100};
  const MountedFiles files = mounted_files(facts, pod.containers.front(), pod, "ml", &view, small);
  EXPECT_EQ(value_of(files.settings, "max_steps"), "9000");
  EXPECT_EQ(value_of(files.settings, "output_dir"), "(none)");  // past the 100 bytes
  EXPECT_LT(small.bytes, kLine);
}

}  // namespace
}  // namespace kgtest

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
  EXPECT_EQ(budget.bytes, 0u);
  EXPECT_EQ(read_containers, (start + big.size() - 1) / big.size());  // then nothing more
  ConfigReadBudget small{100};
  const MountedFiles files = mounted_files(facts, pod.containers.front(), pod, "ml", &view, small);
  EXPECT_EQ(value_of(files.settings, "max_steps"), "9000");
  EXPECT_EQ(value_of(files.settings, "output_dir"), "(none)");  // past the 100 bytes
  EXPECT_EQ(small.bytes, 0u);
}

}  // namespace
}  // namespace kgtest

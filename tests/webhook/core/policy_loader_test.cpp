// Policy files: policies/default-policy.yaml is the compiled-in defaults written out; a
// partial file overrides only its keys; every mistake is an error naming file, line, key.
#include "webhook/core/policy_loader.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "policies/checks.h"
#include "policies/evaluate.h"
#include "policies/policy.h"
#include "tests/policies/test_pods.h"
#include "tests/webhook/test_util.h"

namespace kgtest {
namespace {

using kubegap::ConfigError;
using kubegap::default_policy;
using kubegap::load_policy_file;
using kubegap::parse_policy;
using kubegap::Policy;

// If Policy gains a field, this fails: add it to expect_same_policy, the loader and
// policies/default-policy.yaml.
static_assert(sizeof(Policy) ==
                  sizeof(std::vector<std::string>) /* enabled_checks */ + 24 * sizeof(kubegap::PatternList) +
                      sizeof(kubegap::TrainingHints) + sizeof(kubegap::SavePlaceNames) + sizeof(kubegap::InputVolumes) +
                      4 * sizeof(std::int64_t) + sizeof(std::vector<kubegap::WorkloadKind>) +
                      sizeof(std::int64_t) /* judge_unlisted_kinds and judge_cpu_training, bools padded */ +
                      sizeof(std::vector<std::pair<std::string, std::string>>) +
                      sizeof(std::map<kubegap::WorkloadClass, std::vector<std::string>>) +
                      sizeof(std::map<std::string, kubegap::CheckAction, std::less<>>),
              "Policy changed: update expect_same_policy and policies/default-policy.yaml");

void expect_same_policy(const Policy& actual, const Policy& expected) {
  EXPECT_EQ(actual.enabled_checks, expected.enabled_checks);
  EXPECT_EQ(actual.accelerator_resources, expected.accelerator_resources);
  EXPECT_EQ(actual.accelerator_device_classes, expected.accelerator_device_classes);
  EXPECT_EQ(actual.accelerator_annotations, expected.accelerator_annotations);
  EXPECT_EQ(actual.checks_by_class, expected.checks_by_class);
  EXPECT_TRUE(actual.training_hints == expected.training_hints);
  EXPECT_EQ(actual.diagnostic_hints, expected.diagnostic_hints);
  EXPECT_EQ(actual.placeholder_commands, expected.placeholder_commands);
  EXPECT_EQ(actual.diagnostic_names, expected.diagnostic_names);
  EXPECT_EQ(actual.cluster_daemons, expected.cluster_daemons);
  EXPECT_EQ(actual.serving_programs, expected.serving_programs);
  EXPECT_EQ(actual.serving_images, expected.serving_images);
  EXPECT_EQ(actual.checkpointing_off, expected.checkpointing_off);
  EXPECT_EQ(actual.checkpointing_on, expected.checkpointing_on);
  EXPECT_EQ(actual.benchmark_flags, expected.benchmark_flags);
  EXPECT_EQ(actual.short_run_flags, expected.short_run_flags);
  EXPECT_EQ(actual.saves_only_with, expected.saves_only_with);
  EXPECT_EQ(actual.saves_by_default, expected.saves_by_default);
  EXPECT_EQ(actual.saves_nothing, expected.saves_nothing);
  EXPECT_EQ(actual.short_run_max_steps, expected.short_run_max_steps);
  EXPECT_EQ(actual.benchmark_programs, expected.benchmark_programs);
  EXPECT_EQ(actual.checkpoint_storage_flags, expected.checkpoint_storage_flags);
  EXPECT_TRUE(actual.save_place_names == expected.save_place_names);
  EXPECT_TRUE(actual.input_volumes == expected.input_volumes);
  EXPECT_EQ(actual.object_storage_schemes, expected.object_storage_schemes);
  EXPECT_EQ(actual.check_actions, expected.check_actions);
  EXPECT_EQ(actual.framework_labels, expected.framework_labels);
  EXPECT_EQ(actual.durable_csi_drivers, expected.durable_csi_drivers);
  EXPECT_EQ(actual.gpu_fault_taints, expected.gpu_fault_taints);
  EXPECT_EQ(actual.health_toleration_seconds_bound, expected.health_toleration_seconds_bound);
  EXPECT_EQ(actual.max_parts_per_object, expected.max_parts_per_object);
  EXPECT_EQ(actual.min_restart_budget, expected.min_restart_budget);
  EXPECT_EQ(actual.excluded_namespaces, expected.excluded_namespaces);
  EXPECT_EQ(actual.checkpoint_path_hints, expected.checkpoint_path_hints);
  EXPECT_EQ(actual.judge_unlisted_kinds, expected.judge_unlisted_kinds);
  EXPECT_EQ(actual.judge_cpu_training, expected.judge_cpu_training);
  EXPECT_EQ(actual.dropped_kinds, expected.dropped_kinds);
  ASSERT_EQ(actual.workload_kinds.size(), expected.workload_kinds.size());
  for (std::size_t i = 0; i < expected.workload_kinds.size(); ++i) {
    EXPECT_TRUE(actual.workload_kinds[i] == expected.workload_kinds[i])
        << "workload kind " << expected.workload_kinds[i].group << "/" << expected.workload_kinds[i].kind;
  }
}

const std::string kDefaultPolicyFile = source_path("policies/default-policy.yaml");

TEST(DefaultPolicyFile, LoadsToExactlyTheCompiledInDefaults) {
  const Policy loaded = load_policy_file(kDefaultPolicyFile);
  expect_same_policy(loaded, default_policy());
}

TEST(DefaultPolicyFile, WritesOutEveryKeyTheLoaderKnows) {
  const YAML::Node root = YAML::LoadFile(kDefaultPolicyFile);
  ASSERT_TRUE(root.IsMap());
  std::set<std::string> keys;
  for (const auto& entry : root) keys.insert(entry.first.Scalar());
  EXPECT_EQ(keys, (std::set<std::string>{"apiVersion",
                                         "kind",
                                         "enabledChecks",
                                         "checkActions",
                                         "checksByClass",
                                         "acceleratorResources",
                                         "acceleratorDeviceClasses",
                                         "acceleratorAnnotations",
                                         "frameworkLabels",
                                         "trainingHints",
                                         "diagnosticHints",
                                         "diagnosticNames",
                                         "placeholderCommands",
                                         "clusterDaemons",
                                         "servingPrograms",
                                         "servingImages",
                                         "checkpointingOff",
                                         "checkpointingOn",
                                         "benchmarkFlags",
                                         "shortRunFlags",
                                         "savesOnlyWith",
                                         "savesByDefault",
                                         "savesNothing",
                                         "shortRunMaxSteps",
                                         "benchmarkPrograms",
                                         "checkpointStorageFlags",
                                         "savePlaceNames",
                                         "inputVolumes",
                                         "objectStorageSchemes",
                                         "durableCSIDrivers",
                                         "gpuFaultTaints",
                                         "healthTolerationSecondsBound",
                                         "maxPartsPerObject",
                                         "minRestartBudget",
                                         "excludedNamespaces",
                                         "checkpointPathHints",
                                         "workloadKinds",
                                         "judgeUnlistedKinds",
                                         "judgeCpuTraining"}));
  EXPECT_EQ(root["apiVersion"].Scalar(), "kubegap.io/v1alpha1");
  EXPECT_EQ(root["kind"].Scalar(), "Policy");
}

TEST(DefaultPolicyFile, EnablesEveryRegisteredCheckInRegistryOrder) {
  std::vector<std::string> ids;
  for (const auto& check : kubegap::check_registry()) ids.emplace_back(check.id);
  EXPECT_EQ(load_policy_file(kDefaultPolicyFile).enabled_checks, ids);
}

TEST(PolicyLoader, EmptyOrCommentOnlyTextKeepsEveryDefault) {
  for (const char* text : {"", "\n", "# nothing to change\n", "---\n", "~\n"}) {
    SCOPED_TRACE(text);
    expect_same_policy(parse_policy(text, "empty.yaml"), default_policy());
  }
}

// A mapping of word lists (savePlaceNames, inputVolumes) replaces only the lists it names.
TEST(PolicyLoader, WordListMappingsKeepTheListsLeftOut) {
  const Policy loaded =
      parse_policy("savePlaceNames:\n  reads: [scratch]\ninputVolumes:\n  names: [corpus]\n", "team.yaml");
  Policy expected = default_policy();
  expected.save_place_names.reads = {"scratch"};
  expected.input_volumes.names = {"corpus"};
  EXPECT_TRUE(loaded.save_place_names == expected.save_place_names);
  EXPECT_TRUE(loaded.input_volumes == expected.input_volumes);
  EXPECT_FALSE(loaded.save_place_names == default_policy().save_place_names);
  EXPECT_FALSE(loaded.input_volumes == default_policy().input_volumes);
}

TEST(PolicyLoader, PartialFileOverridesOnlyItsKeys) {
  const Policy loaded = load_policy_file(fixture_path("policies/team-policy.yaml"));
  Policy expected = default_policy();
  expected.excluded_namespaces = {"kube-system", "monitoring"};
  expected.health_toleration_seconds_bound = 120;
  expected.durable_csi_drivers = {"lustre.csi.aws.com"};
  expect_same_policy(loaded, expected);
}

TEST(PolicyLoader, ApiVersionAndKindAreOptional) {
  const Policy loaded = parse_policy("checkpointPathHints: [ckpt, weights]\n", "p.yaml");
  Policy expected = default_policy();
  expected.checkpoint_path_hints = {"ckpt", "weights"};
  expect_same_policy(loaded, expected);
}

TEST(PolicyLoader, AListReplacesTheDefaultListInsteadOfMergingIt) {
  const Policy loaded = parse_policy("acceleratorResources: [example.com/fpga]\n", "p.yaml");
  EXPECT_EQ(loaded.accelerator_resources, (std::vector<std::string>{"example.com/fpga"}));
}

TEST(PolicyLoader, EmptyEnabledChecksListDisablesEveryCheck) {
  const Policy none = parse_policy("enabledChecks: []\n", "p.yaml");
  EXPECT_TRUE(none.enabled_checks.empty());
  // A GPU training pod with a gap for every check (checkpoints on no durable volume, pinned
  // to one zone, the default 300 s health tolerations, no PodDisruptionBudget), evaluated
  // with a cluster view so that disruption-budget is evaluated too: findings under the
  // defaults, none at all under the loaded policy.
  const auto snapshot = cluster({});
  const WorkloadView gappy = pod_object(with_node_selector(gpu_pod(), {{kZone, "us-east-1a"}}));
  ASSERT_EQ(kubegap::evaluate(gappy, snapshot.get(), default_policy()).size(), 4U)
      << "the pod must have a gap for each check, or this test proves nothing";
  for (const auto& finding : kubegap::evaluate(gappy, snapshot.get(), none)) {
    ADD_FAILURE() << "enabledChecks: [] still reported " << finding.check << ": " << finding.message;
  }
}

TEST(PolicyLoader, EveryListKeyIsReadInOrder) {
  const Policy loaded = parse_policy(R"(enabledChecks: [zone-spread, checkpoint-volume]
acceleratorResources: [a.com/x, b.com/*]
frameworkLabels: [f.io/job]
durableCSIDrivers: [d.csi.io]
gpuFaultTaints: [t.io/xid]
excludedNamespaces: [ns1, ns2]
checkpointPathHints: [weights]
healthTolerationSecondsBound: 45
maxPartsPerObject: 16
)",
                                     "p.yaml");
  EXPECT_EQ(loaded.enabled_checks, (std::vector<std::string>{"zone-spread", "checkpoint-volume"}));
  EXPECT_EQ(loaded.accelerator_resources, (std::vector<std::string>{"a.com/x", "b.com/*"}));
  EXPECT_EQ(loaded.framework_labels, (std::vector<std::string>{"f.io/job"}));
  EXPECT_EQ(loaded.durable_csi_drivers, (std::vector<std::string>{"d.csi.io"}));
  EXPECT_EQ(loaded.gpu_fault_taints, (std::vector<std::string>{"t.io/xid"}));
  EXPECT_EQ(loaded.excluded_namespaces, (std::vector<std::string>{"ns1", "ns2"}));
  EXPECT_EQ(loaded.checkpoint_path_hints, (std::vector<std::string>{"weights"}));
  EXPECT_EQ(loaded.health_toleration_seconds_bound, 45);
  EXPECT_EQ(loaded.max_parts_per_object, 16);
}

// ---------------------------------------------------------------------------------------
// Errors: each names the file, the line and the key.

struct BadPolicy {
  const char* name;
  std::string yaml;
  int line;  // expected ":<line>:" in the message
  std::vector<std::string> contains;
};

class PolicyError : public ::testing::TestWithParam<BadPolicy> {};

TEST_P(PolicyError, IsAConfigErrorNamingFileLineAndKey) {
  const BadPolicy& bad = GetParam();
  try {
    parse_policy(bad.yaml, "team-policy.yaml");
    FAIL() << "accepted:\n" << bad.yaml;
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("team-policy.yaml:" + std::to_string(bad.line) + ": ", 0), 0u) << message;
    for (const auto& part : bad.contains) {
      EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, PolicyError,
    ::testing::Values(
        BadPolicy{"unknown_key",
                  "apiVersion: kubegap.io/v1alpha1\nkind: Policy\nexcludedNamespace:\n  - kube-system\n",
                  3,
                  {"excludedNamespace", "unknown key", "excludedNamespaces"}},
        BadPolicy{"save_place_names_unknown_word_list",
                  "savePlaceNames:\n  saves: [save]\n  ends: [dir]\n",
                  3,
                  {"savePlaceNames.ends", "unknown key", "saves, places, reads"}},
        BadPolicy{"save_place_names_not_a_mapping",
                  "savePlaceNames: [save]\n",
                  1,
                  {"savePlaceNames", "expected a mapping with saves, places, reads"}},
        BadPolicy{"input_volumes_unknown_word_list",
                  "inputVolumes:\n  names: [data]\n  writes: [out]\n",
                  3,
                  {"inputVolumes.writes", "unknown key", "names, keeps, readers, writers"}},
        BadPolicy{"role_not_a_known_role",
                  "workloadKinds:\n  - kind: TFJob\n    group: kubeflow.org\n    roles: [{part: PS, role: leader}]\n",
                  4,
                  {"workloadKinds.roles.role", "expected coordinator, writer or helper"}},
        BadPolicy{"helper_with_writer_when",
                  "workloadKinds:\n  - kind: TFJob\n    group: kubeflow.org\n    roles: [{part: PS, role: helper, "
                  "writerWhen: spec.x}]\n",
                  4,
                  {"workloadKinds.roles", "writerWhen is for a coordinator"}},
        BadPolicy{"one_part_two_roles",
                  "workloadKinds:\n  - kind: TFJob\n    group: kubeflow.org\n    roles:\n      - {part: Chief, role: "
                  "coordinator}\n      - {part: chief, role: writer}\n",
                  6,
                  {"part chief has a role already"}},
        BadPolicy{"writer_with_writer_when",
                  "workloadKinds:\n  - kind: TFJob\n    group: kubeflow.org\n    roles:\n      - {part: Chief, role: "
                  "writer, writerWhen: spec.x}\n",
                  5,
                  {"writerWhen is for a coordinator"}},
        BadPolicy{"unknown_key_wrong_case", "EnabledChecks: [zone-spread]\n", 1, {"EnabledChecks", "unknown key"}},
        // withoutAccelerator is a wrapper's (wraps), not a pod template's.
        BadPolicy{"template_without_accelerator",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template, "
                  "withoutAccelerator: true}]\n",
                  4,
                  {"workloadKinds.templates.withoutAccelerator", "unknown key",
                   "withoutAccelerator, text, configMap in wraps"}},
        BadPolicy{"wraps_without_accelerator_not_boolean",
                  "workloadKinds:\n  - kind: Experiment\n    group: kubeflow.org\n    wraps: [{path: spec.x, "
                  "part: trial, withoutAccelerator: often}]\n",
                  4,
                  {"workloadKinds.wraps.withoutAccelerator"}},
        BadPolicy{"wraps_text_unknown_syntax",
                  "workloadKinds:\n  - kind: Experiment\n    group: kubeflow.org\n    wraps: [{path: spec.x, "
                  "part: trial, text: jinja}]\n",
                  4,
                  {"workloadKinds.wraps.text", "expected yaml or goTemplate"}},
        BadPolicy{"template_text",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template, "
                  "configMap: true}]\n",
                  4,
                  {"workloadKinds.templates.configMap", "unknown key"}},
        BadPolicy{"unknown_check_id",
                  "# checks\nenabledChecks:\n  - gpu-health\n",
                  3,
                  {"enabledChecks", "unknown check \"gpu-health\"", "gpu-health-tolerations"}},
        BadPolicy{"workload_skip_unknown_check",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "skipChecks: [zone]\n",
                  5,
                  {"workloadKinds.skipChecks", "unknown check \"zone\""}},
        BadPolicy{"workload_no_operations",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "operations: []\n",
                  5,
                  {"workloadKinds.operations", "at least one"}},
        BadPolicy{
            "bound_zero", "healthTolerationSecondsBound: 0\n", 1, {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"judge_unlisted_not_bool",
                  "judgeUnlistedKinds: sometimes\n",
                  1,
                  {"judgeUnlistedKinds", "expected true or false"}},
        BadPolicy{"max_parts_zero", "maxPartsPerObject: 0\n", 1, {"maxPartsPerObject", "positive integer"}},
        BadPolicy{"min_restart_zero", "minRestartBudget: 0\n", 1, {"minRestartBudget", "positive integer (restarts)"}},
        BadPolicy{"short_run_zero", "shortRunMaxSteps: 0\n", 1, {"shortRunMaxSteps", "positive integer (steps)"}},
        BadPolicy{"restart_unknown_model",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "restart: {model: slurm, budget: spec.backoffLimit}\n",
                  5,
                  {"workloadKinds.restart.model", "expected job, jobset, replicas or volcano", "slurm"}},
        BadPolicy{"restart_without_budget",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "restart: {model: job}\n",
                  5,
                  {"workloadKinds.restart", "needs a model and a budget path"}},
        BadPolicy{"restart_bad_path",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "restart: {model: job, budget: \"spec..backoffLimit\"}\n",
                  5,
                  {"workloadKinds.restart.budget"}},
        BadPolicy{"restart_negative_default",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "restart: {model: job, budget: spec.backoffLimit, budgetDefault: -1}\n",
                  5,
                  {"workloadKinds.restart.budgetDefault", "non-negative integer"}},
        BadPolicy{
            "restart_replicas_without_default",
            "workloadKinds:\n  - kind: MyJob\n    group: example.com\n    templates: [{path: spec.template}]\n    "
            "restart: {model: replicas, budget: spec.runPolicy.backoffLimit}\n",
            5,
            {"workloadKinds.restart", "replicaRestartDefault"}},
        BadPolicy{"restart_unknown_key",
                  "workloadKinds:\n  - kind: Job\n    group: batch\n    templates: [{path: spec.template}]\n    "
                  "restart: {model: job, budget: spec.backoffLimit, maxRetries: 3}\n",
                  5,
                  {"workloadKinds.restart.maxRetries", "unknown key", "perIndexBudget"}},
        BadPolicy{"bound_negative",
                  "kind: Policy\nhealthTolerationSecondsBound: -5\n",
                  2,
                  {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"bound_not_a_number",
                  "healthTolerationSecondsBound: \"abc\"\n",
                  1,
                  {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"bound_fraction",
                  "healthTolerationSecondsBound: 1.5\n",
                  1,
                  {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"bound_list",
                  "healthTolerationSecondsBound: [300]\n",
                  1,
                  {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"bound_overflow",
                  "healthTolerationSecondsBound: 99999999999999999999999\n",
                  1,
                  {"healthTolerationSecondsBound", "positive integer"}},
        BadPolicy{"list_as_scalar",
                  "frameworkLabels: volcano.sh/job-name\n",
                  1,
                  {"frameworkLabels", "expected a list of strings"}},
        BadPolicy{"list_as_map",
                  "gpuFaultTaints:\n  nvidia.com/gpu-xid-error: true\n",
                  2,
                  {"gpuFaultTaints", "expected a list of strings"}},
        BadPolicy{"empty_string_in_list",
                  "excludedNamespaces:\n  - kube-system\n  - \"\"\n",
                  3,
                  {"excludedNamespaces", "non-empty string"}},
        BadPolicy{"list_in_list",
                  "durableCSIDrivers:\n  - [efs.csi.aws.com]\n",
                  2,
                  {"durableCSIDrivers", "non-empty string"}},
        BadPolicy{"wrong_api_version", "apiVersion: kubegap.io/v1\n", 1, {"apiVersion", "kubegap.io/v1alpha1"}},
        BadPolicy{"wrong_kind", "apiVersion: kubegap.io/v1alpha1\nkind: ConfigMap\n", 2, {"kind", "expected Policy"}},
        BadPolicy{"top_level_list", "- enabledChecks\n", 1, {"(top level)", "mapping"}},
        BadPolicy{"top_level_scalar", "enabledChecks\n", 1, {"(top level)", "mapping"}},
        BadPolicy{"invalid_yaml_syntax",
                  "apiVersion: kubegap.io/v1alpha1\nkind: Policy\n  excludedNamespaces: [a]\n",
                  3,
                  {"invalid YAML"}},
        BadPolicy{"unclosed_flow_list", "kind: Policy\nexcludedNamespaces: [a, b\nfoo: 1\n", 3, {"invalid YAML"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PolicyLoader, NullItemInAListIsAnError) {
  EXPECT_THROW(parse_policy("gpuFaultTaints:\n  - \n", "p.yaml"), ConfigError);
  EXPECT_THROW(parse_policy("gpuFaultTaints: [~]\n", "p.yaml"), ConfigError);
  EXPECT_THROW(parse_policy("gpuFaultTaints:\n", "p.yaml"), ConfigError);
}

TEST(PolicyLoader, EveryListKeyRejectsAScalar) {
  for (const char* key : {"enabledChecks", "acceleratorResources", "frameworkLabels", "durableCSIDrivers",
                          "gpuFaultTaints", "excludedNamespaces", "checkpointPathHints"}) {
    SCOPED_TRACE(key);
    try {
      parse_policy(std::string("\n") + key + ": zone-spread\n", "p.yaml");
      ADD_FAILURE() << "accepted a scalar for " << key;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), "p.yaml:2: " + std::string(key) + ": expected a list of strings");
    }
  }
}

TEST(PolicyLoader, UnknownKeyInAFileNamesThePathAndLine) {
  const std::string path = fixture_path("policies/typo-policy.yaml");
  try {
    load_policy_file(path);
    FAIL() << "accepted " << path;
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path + ":5: excludedNamespace: unknown key", 0), 0u) << message;
  }
}

TEST(PolicyLoader, MissingFileIsAConfigErrorNamingIt) {
  const std::string path = fixture_path("policies/does-not-exist.yaml");
  try {
    load_policy_file(path);
    FAIL() << "loaded a missing file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

// An alias bomb in a policy file: each level lists the one below ten times, eight levels
// deep (10^8 nodes as the loader would walk them, from a file of a few hundred bytes). It
// is refused at the node where the budget runs out (so after a bounded walk), naming the
// file and line (issue 31: every YAML path charged).
TEST(PolicyLoader, AnAliasBombIsRefusedByTheNodeBudgetNamingTheLine) {
  const std::string text =
      alias_bomb("apiVersion: kubegap.io/v1alpha1\nkind: Policy\n", false) + "enabledChecks: *l8\n";
  try {
    kubegap::parse_policy(text, "bomb-policy.yaml");
    FAIL() << "loaded an alias bomb";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("bomb-policy.yaml:", 0), 0u) << message;
    EXPECT_NE(message.find("too many nodes"), std::string::npos) << message;
  }
  // Aliases themselves are fine: the shipped default policy uses them.
  EXPECT_NO_THROW(kubegap::load_policy_file(kDefaultPolicyFile));
}

}  // namespace
}  // namespace kgtest

// restart-on-failure (issue 30): one table row per workload-table row with a `restart`
// block, each kind as restartless, disruption-counting and clean, decoded from YAML the
// way the webhook and `check` read objects, through the default policy. The figures each
// expectation rests on are cited in docs/restart-on-failure-research.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "policies/checks.h"
#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "tests/webhook/test_util.h"
#include "webhook/core/object_evaluation.h"
#include "webhook/core/policy_loader.h"
#include "webhook/core/yaml_json.h"

namespace kgtest {
namespace {

using kubegap::Finding;
using kubegap::Outcome;

// A training pod template: torchrun on a GPU (so auto kinds judge it as training).
std::string pod(const std::string& indent, const std::string& restart_policy = "Never") {
  std::string out = indent + "spec:\n";
  if (!restart_policy.empty()) out += indent + "  restartPolicy: " + restart_policy + "\n";
  out += indent + "  containers:\n" + indent + "  - name: trainer\n" + indent + "    image: example/train:1\n" +
         indent + "    command: [torchrun, train.py]\n" + indent + "    resources: {limits: {nvidia.com/gpu: 8}}\n";
  return out;
}

std::string job(const std::string& spec, const std::string& restart_policy = "Never") {
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\nspec:\n" + spec + "  template:\n" +
         pod("    ", restart_policy);
}

std::string jobset(const std::string& spec, const std::string& child = "") {
  return "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: ml}\nspec:\n" + spec +
         "  replicatedJobs:\n  - name: workers\n    template:\n      spec:\n" + child + "        template:\n" +
         pod("          ");
}

std::string kubeflow(const std::string& kind, const std::string& specs, const std::string& run_policy,
                     const std::string& replica_policy) {
  std::string out = "apiVersion: kubeflow.org/v1\nkind: " + kind + "\nmetadata: {name: k, namespace: ml}\nspec:\n" +
                    run_policy + "  " + specs + ":\n    Worker:\n      replicas: 2\n";
  if (!replica_policy.empty()) out += "      restartPolicy: " + replica_policy + "\n";
  return out + "      template:\n" + pod("        ", "");
}

std::string mpijob(const std::string& run_policy) {
  return "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: m, namespace: ml}\nspec:\n" + run_policy +
         "  mpiReplicaSpecs:\n    Launcher:\n      replicas: 1\n      template:\n" +
         "        spec:\n          containers:\n          - name: l\n            image: example/mpi:1\n" +
         "            command: [mpirun, python, train.py, --epochs, '3']\n" + "    Worker:\n      replicas: 2\n" +
         "      template:\n" + pod("        ", "");
}

std::string rayjob(const std::string& spec) {
  return "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: r, namespace: ml}\nspec:\n" + spec +
         "  entrypoint: python train.py --num_epochs 3\n  rayClusterSpec:\n    headGroupSpec:\n      template:\n" +
         pod("        ", "");
}

std::string volcano(const std::string& spec, const std::string& restart_policy = "Never",
                    const std::string& task = "") {
  return "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v, namespace: ml}\nspec:\n" + spec +
         "  tasks:\n  - name: worker\n    replicas: 2\n" + task + "    template:\n" + pod("      ", restart_policy);
}

struct Row {
  std::string name;
  std::string yaml;
  // Empty: no restart-on-failure finding. Otherwise words its message must contain.
  std::vector<std::string> message;
  std::vector<std::string> remedy = {};
};

std::ostream& operator<<(std::ostream& os, const Row& row) { return os << row.name; }

class RestartTable : public ::testing::TestWithParam<Row> {};

TEST_P(RestartTable, FindsExactlyTheGap) {
  const Row& row = GetParam();
  auto documents = kubegap::load_yaml_documents(row.yaml, row.name);
  ASSERT_EQ(documents.size(), 1u);
  const rapidjson::Value& json = documents.front().json;
  const std::string api_version = json["apiVersion"].GetString();
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const kubegap::Policy& policy = kubegap::default_policy();
  const kubegap::WorkloadKind* kind = policy.workload_kind(group, json["kind"].GetString());
  ASSERT_NE(kind, nullptr);
  const auto e = kubegap::evaluate_object(json, "object", *kind, "default", nullptr, policy, "no cluster view");
  ASSERT_TRUE(e.error.empty()) << e.error;
  std::vector<const Finding*> gaps;
  for (const auto& f : e.findings) {
    if (f.check == kubegap::kRestartOnFailure && f.outcome == Outcome::kFinding) gaps.push_back(&f);
  }
  if (row.message.empty()) {
    EXPECT_TRUE(gaps.empty()) << row.name << ": unexpected finding: " << gaps.front()->message;
    return;
  }
  ASSERT_EQ(gaps.size(), 1u) << row.name << ": expected one restart-on-failure finding";
  for (const auto& words : row.message) {
    EXPECT_NE(gaps.front()->message.find(words), std::string::npos)
        << "\"" << words << "\" not in: " << gaps.front()->message;
  }
  for (const auto& words : row.remedy) {
    EXPECT_NE(gaps.front()->remedy.find(words), std::string::npos)
        << "\"" << words << "\" not in: " << gaps.front()->remedy;
  }
  EXPECT_NE(gaps.front()->remedy.find("durable checkpoint"), std::string::npos);
  EXPECT_EQ(gaps.front()->cases.front(), "opt-175b-logbook-2021");
}

const std::string kIgnore =
    "  podFailurePolicy:\n    rules:\n    - action: Ignore\n      onPodConditions: [{type: DisruptionTarget}]\n";

INSTANTIATE_TEST_SUITE_P(
    Kinds, RestartTable,
    ::testing::Values(
        // batch/v1 Job: backoffLimit (default 6) and podFailurePolicy.
        Row{"job_backoff0",
            job("  backoffLimit: 0\n"),
            {"spec.backoffLimit is 0", "one failed pod"},
            {"set spec.backoffLimit to 3 or more", "DisruptionTarget"}},
        Row{"job_backoff0_even_with_ignore", job("  backoffLimit: 0\n" + kIgnore), {"spec.backoffLimit is 0"}},
        Row{"job_backoff2_counts_disruptions",
            job("  backoffLimit: 2\n"),
            {"spec.backoffLimit is 2", "no podFailurePolicy rule ignores DisruptionTarget", "3 failures"},
            {"{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}"}},
        Row{"job_backoff2_onfailure",
            job("  backoffLimit: 2\n", "OnFailure"),
            {"restartPolicy OnFailure cannot spare disruptions"},
            {"restartPolicy Never"}},
        Row{"job_backoff2_ignores_disruptions", job("  backoffLimit: 2\n" + kIgnore), {}},
        Row{"job_failjob_on_disruption",
            job("  backoffLimit: 4\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n"
                "      onPodConditions: [{type: DisruptionTarget}]\n"),
            {"fails the Job on DisruptionTarget"}},
        Row{"job_disruption_status_false_does_not_spare",
            job("  backoffLimit: 1\n  podFailurePolicy:\n    rules:\n    - action: Ignore\n"
                "      onPodConditions: [{type: DisruptionTarget, status: 'False'}]\n"),
            {"spec.backoffLimit is 1"}},
        Row{"job_default_backoff_is_enough", job(""), {}},
        Row{"job_per_index_zero",
            job("  completionMode: Indexed\n  completions: 4\n  backoffLimitPerIndex: 0\n"),
            {"spec.backoffLimitPerIndex is 0"}},
        Row{"job_placeholder_budget_not_judged", job("  backoffLimit: $RETRIES\n"), {}},
        // JobSet: failurePolicy.maxRestarts (0 when unset) over child Jobs.
        Row{"jobset_no_failure_policy",
            jobset(""),
            {"spec.failurePolicy.maxRestarts is unset (0 by default)", "one failed child Job ends the JobSet"},
            {"set spec.failurePolicy.maxRestarts to 3 or more"}},
        Row{"jobset_max_restarts_0", jobset("  failurePolicy: {maxRestarts: 0}\n"), {"maxRestarts is 0"}},
        Row{"jobset_max_restarts_3", jobset("  failurePolicy: {maxRestarts: 3}\n"), {}},
        Row{"jobset_max_restarts_1_child_backoff0",
            jobset("  failurePolicy: {maxRestarts: 1}\n", "        backoffLimit: 0\n"),
            {"maxRestarts is 1", "child Jobs do not spare disruptions"},
            {"podFailurePolicy rule"}},
        Row{"jobset_max_restarts_1_child_ignores",
            jobset("  failurePolicy: {maxRestarts: 1}\n",
                   "        backoffLimit: 0\n        podFailurePolicy:\n          rules:\n          - action: Ignore\n"
                   "            onPodConditions: [{type: DisruptionTarget}]\n"),
            {}},
        Row{"jobset_max_restarts_2_routed_disruptions",
            jobset("  failurePolicy:\n    maxRestarts: 2\n    rules:\n    - action: RestartJobSetAndIgnoreMaxRestarts\n"
                   "      onJobFailureReasons: [PodFailurePolicy]\n",
                   "        backoffLimit: 0\n        podFailurePolicy:\n          rules:\n          - action: FailJob\n"
                   "            onPodConditions: [{type: DisruptionTarget}]\n"),
            {}},
        Row{"jobset_unlimited_rule",
            jobset("  failurePolicy:\n    rules:\n    - action: RestartJobSetAndIgnoreMaxRestarts\n"),
            {}},
        Row{"jobset_fail_on_everything",
            jobset("  failurePolicy:\n    maxRestarts: 5\n    rules:\n    - action: FailJobSet\n"),
            {"fails the JobSet on any failed child Job"}},
        // Kubeflow training-operator: replica restartPolicy and runPolicy.backoffLimit.
        Row{"tfjob_default_never",
            kubeflow("TFJob", "tfReplicaSpecs", "", ""),
            {"restartPolicy unset (Never by default)", "fails the TFJob"},
            {"ExitCode (or OnFailure)"}},
        Row{"pytorchjob_default_onfailure_unlimited", kubeflow("PyTorchJob", "pytorchReplicaSpecs", "", ""), {}},
        Row{"pytorchjob_never", kubeflow("PyTorchJob", "pytorchReplicaSpecs", "", "Never"), {"restartPolicy Never"}},
        Row{"pytorchjob_backoff0",
            kubeflow("PyTorchJob", "pytorchReplicaSpecs", "  runPolicy: {backoffLimit: 0}\n", "OnFailure"),
            {"spec.runPolicy.backoffLimit is 0"}},
        // No (b) where the kind cannot spare disruptions: nothing to add but a larger budget.
        Row{"pytorchjob_backoff2_nothing_to_spare",
            kubeflow("PyTorchJob", "pytorchReplicaSpecs", "  runPolicy: {backoffLimit: 2}\n", "ExitCode"),
            {}},
        Row{"pytorchjob_backoff10",
            kubeflow("PyTorchJob", "pytorchReplicaSpecs", "  runPolicy: {backoffLimit: 10}\n", "OnFailure"),
            {}},
        Row{"xgboost_onfailure_fails",
            kubeflow("XGBoostJob", "xgbReplicaSpecs", "", "OnFailure"),
            {"restartPolicy OnFailure"},
            {"to ExitCode ("}},
        Row{"xgboost_exitcode", kubeflow("XGBoostJob", "xgbReplicaSpecs", "", "ExitCode"), {}},
        Row{"paddle_default_onfailure", kubeflow("PaddleJob", "paddleReplicaSpecs", "", ""), {}},
        Row{"jax_default_never", kubeflow("JAXJob", "jaxReplicaSpecs", "", ""), {"Never by default"}},
        // MPIJob v2beta1: the launcher Job's backoffLimit (unset: 6), no podFailurePolicy.
        Row{"mpijob_backoff0", mpijob("  runPolicy: {backoffLimit: 0}\n"), {"spec.runPolicy.backoffLimit is 0"}},
        Row{"mpijob_backoff1_nothing_to_spare", mpijob("  runPolicy: {backoffLimit: 1}\n"), {}},
        Row{"mpijob_default", mpijob(""), {}},
        // RayJob: spec.backoffLimit, default 0.
        Row{"rayjob_default", rayjob(""), {"spec.backoffLimit is unset (0 by default)"}},
        Row{"rayjob_backoff3", rayjob("  backoffLimit: 3\n"), {}},
        // Volcano: policies and maxRetry (0 is made 3).
        Row{"volcano_no_policy_never",
            volcano(""),
            {"no lifecycle policy restarts anything"},
            {"event: PodFailed, action: RestartJob"}},
        Row{"volcano_no_policy_onfailure", volcano("", "OnFailure"), {}},
        Row{"volcano_abort",
            volcano("  policies:\n  - event: PodFailed\n    action: AbortJob\n"),
            {"runs AbortJob when a pod fails"}},
        Row{"volcano_restart_maxretry5",
            volcano("  maxRetry: 5\n  policies:\n  - events: [PodFailed, PodEvicted]\n    action: RestartJob\n"),
            {}},
        Row{"volcano_restart_maxretry0_is_3",
            volcano("  maxRetry: 0\n  policies:\n  - event: PodFailed\n    action: RestartJob\n"),
            {}},
        Row{"volcano_restart_maxretry1_nothing_to_spare",
            volcano("  maxRetry: 1\n  policies:\n  - event: PodFailed\n    action: RestartJob\n"),
            {}},
        Row{"rayjob_backoff1_nothing_to_spare", rayjob("  backoffLimit: 1\n"), {}},
        Row{"volcano_task_policy_wins",
            volcano("  policies:\n  - event: PodFailed\n    action: RestartJob\n", "Never",
                    "    policies:\n    - event: PodFailed\n      action: AbortJob\n"),
            {"runs AbortJob"}},
        // Kinds without a restart block are not judged: a serving LeaderWorkerSet.
        Row{"leaderworkerset_not_judged",
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: l, namespace: ml}\n"
            "spec:\n  leaderWorkerTemplate:\n    workerTemplate:\n" +
                pod("      ", ""),
            {}}),
    [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// A TrainJob is judged through its runtime: Trainer's shipped runtimes set no
// failurePolicy, so the fix goes to the runtime; an unknown runtime is not judged.
TEST(RestartOnFailure, TrainJobOnAShippedRuntimeIsToldToFixTheRuntime) {
  auto documents = kubegap::load_yaml_documents(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: ml}\n"
      "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer:\n    numNodes: 2\n"
      "    command: [torchrun, train.py]\n    resourcesPerNode: {limits: {nvidia.com/gpu: 8}}\n",
      "trainjob");
  const kubegap::Policy& policy = kubegap::default_policy();
  const auto* row = policy.workload_kind("trainer.kubeflow.org", "TrainJob");
  ASSERT_NE(row, nullptr);
  // As `check` reads files: a shipped runtime the input lacks is taken as Trainer ships it.
  const kubegap::ClusterSnapshot files(
      {}, {}, {}, {}, std::make_shared<kubegap::RuntimeSet>(std::vector<kubegap::TrainingRuntimeInfo>{}, true, true));
  const auto e =
      kubegap::evaluate_object(documents.front().json, "object", *row, "ml", nullptr, policy, "none", &files);
  ASSERT_TRUE(e.error.empty()) << e.error;
  const auto it = std::find_if(e.findings.begin(), e.findings.end(),
                               [](const Finding& f) { return f.check == kubegap::kRestartOnFailure; });
  ASSERT_NE(it, e.findings.end());
  EXPECT_EQ(it->outcome, Outcome::kFinding);
  EXPECT_NE(it->remedy.find("spec.template.spec.failurePolicy.maxRestarts"), std::string::npos) << it->remedy;
  EXPECT_NE(it->remedy.find("a TrainJob cannot set it"), std::string::npos) << it->remedy;
}

TEST(RestartOnFailure, TrainJobWithAnUnknownRuntimeIsNotEvaluated) {
  auto documents = kubegap::load_yaml_documents(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: ml}\n"
      "spec:\n  runtimeRef: {name: in-house-runtime}\n  trainer:\n    command: [torchrun, train.py]\n",
      "trainjob");
  const kubegap::Policy& policy = kubegap::default_policy();
  const auto* row = policy.workload_kind("trainer.kubeflow.org", "TrainJob");
  const auto e = kubegap::evaluate_object(documents.front().json, "object", *row, "ml", nullptr, policy, "none");
  const auto it = std::find_if(e.findings.begin(), e.findings.end(),
                               [](const Finding& f) { return f.check == kubegap::kRestartOnFailure; });
  ASSERT_NE(it, e.findings.end());
  EXPECT_EQ(it->outcome, Outcome::kNotEvaluated);
}

// The owner can exempt the check, as any other: an audit annotation, no warning.
TEST(RestartOnFailure, AnExemptedJobIsAnnotatedNotWarned) {
  auto documents = kubegap::load_yaml_documents(
      "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: ml\n  annotations:\n"
      "    kubegap.io/exempt: restart-on-failure\n    kubegap.io/exempt-reason: a one-shot sweep, rerun by hand\n"
      "spec:\n  backoffLimit: 0\n  template:\n" +
          pod("    "),
      "job");
  const kubegap::Policy& policy = kubegap::default_policy();
  const auto e = kubegap::evaluate_object(documents.front().json, "object", *policy.workload_kind("batch", "Job"), "ml",
                                          nullptr, policy, "none");
  const auto it = std::find_if(e.findings.begin(), e.findings.end(),
                               [](const Finding& f) { return f.check == kubegap::kRestartOnFailure; });
  ASSERT_NE(it, e.findings.end());
  EXPECT_EQ(it->outcome, Outcome::kExempt);
  EXPECT_EQ(it->reason, "a one-shot sweep, rerun by hand");
}

// checkpoint-volume and restart-on-failure together: the restart fix points at the other.
TEST(RestartOnFailure, TheFixLinksTheCheckpointFindingWhenBothFire) {
  auto documents = kubegap::load_yaml_documents(job("  backoffLimit: 0\n"), "job");
  const kubegap::Policy& policy = kubegap::default_policy();
  const auto e = kubegap::evaluate_object(documents.front().json, "object", *policy.workload_kind("batch", "Job"), "ml",
                                          nullptr, policy, "none");
  const auto restart = std::find_if(e.findings.begin(), e.findings.end(),
                                    [](const Finding& f) { return f.check == kubegap::kRestartOnFailure; });
  const bool checkpoint_gap = std::any_of(e.findings.begin(), e.findings.end(), [](const Finding& f) {
    return f.check == kubegap::kCheckpointVolume && f.outcome == Outcome::kFinding;
  });
  ASSERT_TRUE(checkpoint_gap);  // the template mounts nothing durable
  ASSERT_NE(restart, e.findings.end());
  EXPECT_NE(restart->remedy.find("(see the checkpoint-volume finding)"), std::string::npos) << restart->remedy;
}

// A user's own CRD gets a restart block in the policy file, with no code.
TEST(RestartOnFailure, APolicyRowForANewKindIsJudged) {
  const kubegap::Policy policy = kubegap::parse_policy(
      "workloadKinds:\n  - group: example.com\n    kind: TrainRun\n    class: training\n"
      "    templates: [{path: spec.template}]\n"
      "    restart: {model: job, budget: spec.retries, budgetDefault: 0}\n",
      "policy.yaml");
  auto documents = kubegap::load_yaml_documents(
      "apiVersion: example.com/v1\nkind: TrainRun\nmetadata: {name: x, namespace: ml}\nspec:\n  template:\n" +
          pod("    "),
      "trainrun");
  const auto* row = policy.workload_kind("example.com", "TrainRun");
  ASSERT_NE(row, nullptr);
  const auto e = kubegap::evaluate_object(documents.front().json, "object", *row, "ml", nullptr, policy, "none");
  const auto it = std::find_if(e.findings.begin(), e.findings.end(),
                               [](const Finding& f) { return f.check == kubegap::kRestartOnFailure; });
  ASSERT_NE(it, e.findings.end());
  EXPECT_NE(it->message.find("spec.retries is unset (0 by default)"), std::string::npos) << it->message;
}

}  // namespace
}  // namespace kgtest

// `scan` without sockets: discovery documents, list pages and owner de-duplication, fed
// as the API server sends them; the scan coroutine against scripted answers (errors keep
// their status, a cancelled scan asks nothing more; a TrainJob judged with the Trainer
// runtime it names, listed before it); ApiError. tests/e2e/test_scan.py runs
// the whole command against a real kube-apiserver.
#include "webhook/report/cluster_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace kubegap {
namespace {

namespace net = boost::asio;

// A GPU pod that keeps checkpoints in an emptyDir: a checkpoint-volume finding anywhere.
std::string gpu_pod(const std::string& name, const std::string& uid, const std::string& owner_uid = "") {
  const std::string owners =
      owner_uid.empty()
          ? ""
          : R"(,"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"j","uid":")" +
                owner_uid + R"(","controller":true}])";
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ml","uid":")" + uid + "\"" + owners +
         R"(},"spec":{"containers":[{"name":"t","image":"pytorch","command":["torchrun","train.py"],
         "resources":{"limits":{"nvidia.com/gpu":"8"}},
         "volumeMounts":[{"name":"ckpt","mountPath":"/checkpoints"}]}],
         "volumes":[{"name":"ckpt","emptyDir":{}}]}})";
}

std::string pod_list(const std::string& items, const std::string& continue_token = "") {
  return R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":")" + continue_token +
         R"("},"items":[)" + items + "]}";
}

const ScanResource kPods{"", "v1", "pods", "Pod", true};

TEST(ParseGroupList, TakesEachGroupsPreferredVersion) {
  const auto groups = parse_group_list(R"({"kind":"APIGroupList","apiVersion":"v1","groups":[
    {"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],
     "preferredVersion":{"groupVersion":"batch/v1","version":"v1"}},
    {"name":"kubeflow.org","versions":[{"version":"v1"}],"preferredVersion":{"version":"v1"}},
    {"name":"broken"}]})");
  ASSERT_TRUE(groups.has_value());
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[1].group, "kubeflow.org");
  EXPECT_EQ((*groups)[1].version, "v1");
}

TEST(ParseGroupList, RefusesWhatIsNotOne) {
  EXPECT_FALSE(parse_group_list("not json").has_value());
  EXPECT_FALSE(parse_group_list(R"({"kind":"Status","message":"forbidden"})").has_value());
  EXPECT_FALSE(parse_group_list(R"({"kind":"APIGroupList","groups":7})").has_value());
}

TEST(ParseResourceList, KeepsListableResourcesAndDropsSubresources) {
  const auto resources = parse_resource_list(R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
    {"name":"pods","namespaced":true,"kind":"Pod","verbs":["get","list","watch"]},
    {"name":"pods/log","namespaced":true,"kind":"Pod","verbs":["get"]},
    {"name":"nodes","namespaced":false,"kind":"Node","verbs":["list"]},
    {"name":"bindings","namespaced":true,"kind":"Binding","verbs":["create"]}]})",
                                             "", "v1");
  ASSERT_TRUE(resources.has_value());
  ASSERT_EQ(resources->size(), 2u);
  EXPECT_EQ((*resources)[0].resource, "pods");
  EXPECT_TRUE((*resources)[0].namespaced);
  EXPECT_EQ((*resources)[1].kind, "Node");
  EXPECT_FALSE((*resources)[1].namespaced);
}

TEST(ScanResource, ListPathAcrossOrInOneNamespace) {
  const ScanResource jobs{"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true};
  EXPECT_EQ(jobs.list_path(""), "/apis/kubeflow.org/v1/pytorchjobs");
  EXPECT_EQ(jobs.list_path("ml"), "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs");
  EXPECT_EQ(kPods.list_path("ml"), "/api/v1/namespaces/ml/pods");
  const ScanResource cluster_scoped{"", "v1", "nodes", "Node", false};
  EXPECT_EQ(cluster_scoped.list_path("ml"), "/api/v1/nodes");
}

TEST(ScanTargets, WorkloadKindsTheServerServesAndPodsLast) {
  const Policy policy = default_policy();
  const std::vector<ScanResource> served = {
      kPods,
      {"", "v1", "configmaps", "ConfigMap", true},
      {"batch", "v1", "jobs", "Job", true},
      {"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true},
  };
  const auto targets = scan_targets(served, policy);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets.back().resource, "pods");
  EXPECT_TRUE(
      std::none_of(targets.begin(), targets.end(), [](const ScanResource& r) { return r.kind == "ConfigMap"; }));
  // JobSet is in the table but not served here (its CRD is not installed): not a target.
  EXPECT_TRUE(std::none_of(targets.begin(), targets.end(), [](const ScanResource& r) { return r.kind == "JobSet"; }));
}

TEST(ScanTargets, KindsKeepOnlyThoseKinds) {
  const Policy policy = default_policy();
  const std::vector<ScanResource> served = {
      kPods,
      {"batch", "v1", "jobs", "Job", true},
      {"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true},
  };
  const auto only_jobs = scan_targets(served, policy, {"PyTorchJob"});
  ASSERT_EQ(only_jobs.size(), 1u);
  EXPECT_EQ(only_jobs.front().resource, "pytorchjobs");
  const auto pods_and_jobs = scan_targets(served, policy, {"Pod", "Job"});
  ASSERT_EQ(pods_and_jobs.size(), 2u);
  EXPECT_EQ(pods_and_jobs.front().resource, "jobs");
  EXPECT_EQ(pods_and_jobs.back().resource, "pods");
}

TEST(ScanAccumulator, EvaluatesEveryPageAndFollowsContinue) {
  const Policy policy = default_policy();
  const ClusterSnapshot empty;
  ScanAccumulator scan(policy, &empty, "");
  const auto first = scan.add_page(kPods, pod_list(gpu_pod("a", "u1"), "next-token"));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->continue_token, "next-token");
  EXPECT_EQ(first->items, 1u);
  const auto second = scan.add_page(kPods, pod_list(gpu_pod("b", "u2")));
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->continue_token.empty());
  const CheckReport report = scan.finish(0, 0);
  ASSERT_EQ(report.objects.size(), 2u);
  EXPECT_EQ(report.objects[0].file, "/api/v1/namespaces/ml/pods/a");
  EXPECT_EQ(report.objects[0].namespace_name, "ml");
  EXPECT_TRUE(report.live_view);
  const auto& findings = report.objects[1].findings;
  EXPECT_TRUE(std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.check == "checkpoint-volume" && f.outcome == Outcome::kFinding;
  }));
  // A live view was listed (empty here): disruption-budget is evaluated, not "not evaluated".
  EXPECT_TRUE(std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.check == "disruption-budget" && f.outcome == Outcome::kFinding;
  }));
}

TEST(ScanAccumulator, APodIsReportedUnderItsEvaluatedOwnerOnly) {
  const Policy policy = default_policy();
  ScanAccumulator scan(policy, nullptr, "no cluster view");
  const ScanResource jobs{"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true};
  const std::string job = R"({"kind":"PyTorchJobList","items":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob",
    "metadata":{"name":"j","namespace":"ml","uid":"job-uid"},
    "spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":2,"template":)" +
                          gpu_pod("w", "") + "}}}}]}";
  ASSERT_TRUE(scan.add_page(jobs, job).has_value());
  // Two of its pods, and one pod owned by something the scan did not evaluate.
  ASSERT_TRUE(
      scan.add_page(kPods, pod_list(gpu_pod("j-worker-0", "p0", "job-uid") + "," +
                                    gpu_pod("j-worker-1", "p1", "job-uid") + "," + gpu_pod("orphan", "p2", "gone-uid")))
          .has_value());
  const CheckReport report = scan.finish(0, 0);
  ASSERT_EQ(report.objects.size(), 2u);
  EXPECT_EQ(report.objects[0].kind, "PyTorchJob");
  EXPECT_EQ(report.objects[1].name, "orphan");
  EXPECT_FALSE(report.live_view);
  ASSERT_FALSE(report.notes.empty());
  EXPECT_NE(report.notes.back().find("2 object(s) reported under their owner"), std::string::npos);
}

TEST(ScanAccumulator, APageThatIsNotAListIsRefused) {
  const Policy policy = default_policy();
  ScanAccumulator scan(policy, nullptr, "no cluster view");
  EXPECT_FALSE(scan.add_page(kPods, R"({"kind":"Status","message":"forbidden"})").has_value());
  EXPECT_FALSE(scan.add_page(kPods, "garbage").has_value());
}

TEST(ClusterViewBuilder, DecodesBudgetsAndNodesPageByPage) {
  ClusterViewBuilder view;
  ASSERT_TRUE(view.add_budgets(R"({"kind":"PodDisruptionBudgetList","metadata":{"continue":"c"},"items":[
    {"metadata":{"name":"p","namespace":"ml"},"spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"t"}}}}]})")
                  .has_value());
  ASSERT_TRUE(view.add_nodes(R"({"kind":"NodeList","metadata":{},"items":[
    {"metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"a"}}},
    {"metadata":{"name":"n2","labels":"not a map"}}]})")
                  .has_value());
  EXPECT_EQ(view.budgets(), 1u);
  EXPECT_EQ(view.nodes(), 1u);
  EXPECT_EQ(view.bad(), 1u);
  const auto snapshot = view.build();
  EXPECT_TRUE(snapshot->budgets().any_selects("ml", {{"app", "t"}}));
  EXPECT_EQ(snapshot->nodes().size(), 1u);
}

// scan_with: the scan coroutine on a loop of the test's own, each GET answered from
// `answers` by its target (404 for any other); the targets asked, in order, into `asked`.
ScanResult scan_with(const std::map<std::string, KubeResponse>& answers, ScanOptions options,
                     std::vector<std::string>& asked) {
  KubeGetter send = [&](std::string target, std::size_t) -> net::awaitable<KubeResponse> {
    asked.push_back(target);
    const auto found = answers.find(target);
    co_return found != answers.end() ? found->second : KubeResponse{404, R"({"kind":"Status","code":404})", ""};
  };
  net::io_context ioc;
  std::optional<ScanResult> result;
  net::co_spawn(ioc, scan_cluster(send, std::move(options), default_policy()), [&](std::exception_ptr e, ScanResult r) {
    if (e) std::rethrow_exception(e);
    result = std::move(r);
  });
  ioc.run();
  return result.value_or(ScanResult{});
}

KubeResponse answer(const std::string& body) { return {200, body, ""}; }

const char* const kCoreResources = R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
  {"name":"pods","kind":"Pod","namespaced":true,"verbs":["get","list"]},
  {"name":"pods/log","kind":"Pod","namespaced":true,"verbs":["get"]}]})";

TEST(ScanCluster, ListsEveryPageAndKeepsTheStatusOfEachError) {
  const std::map<std::string, KubeResponse> answers = {
      {"/apis/policy/v1/poddisruptionbudgets?limit=2", answer(R"({"kind":"PodDisruptionBudgetList","items":[]})")},
      {"/api/v1/nodes?limit=2", {503, "upstream connect error", ""}},
      {"/api/v1", answer(kCoreResources)},
      {"/apis", answer(R"({"kind":"APIGroupList","groups":[
         {"name":"kubeflow.org","preferredVersion":{"groupVersion":"kubeflow.org/v1","version":"v1"}}]})")},
      {"/apis/kubeflow.org/v1",
       {403, R"({"kind":"Status","status":"Failure","message":"no words about access","code":403})", ""}},
      {"/api/v1/pods?limit=2", answer(pod_list(gpu_pod("a", "u1"), "next/page"))},
      {"/api/v1/pods?limit=2&continue=next%2Fpage", answer(pod_list(gpu_pod("b", "u2")))},
  };
  ScanOptions options;
  options.page_size = 2;
  std::vector<std::string> asked;
  const ScanResult result = scan_with(answers, options, asked);
  ASSERT_EQ(result.report.objects.size(), 2u);
  EXPECT_EQ(result.report.objects[1].name, "b");
  ASSERT_EQ(result.report.errors.size(), 1u);
  EXPECT_EQ(result.report.errors[0].text(), "/apis/kubeflow.org/v1: HTTP 403: no words about access");
  EXPECT_EQ(result.error_status, std::vector<int>{403});
  // The Node list failed: the view is not used, and the note says why (no Status body).
  EXPECT_FALSE(result.report.live_view);
  EXPECT_NE(std::find(result.report.notes.begin(), result.report.notes.end(),
                      "disruption-budget not evaluated: cluster view not listed (HTTP 503)"),
            result.report.notes.end());
  EXPECT_EQ(result.stats.requests, asked.size());
  EXPECT_EQ(result.stats.requests, 7u);
  EXPECT_EQ(result.stats.objects_listed, 2u);
  EXPECT_EQ(result.report.notes.back(), "listed 2 object(s) in 7 API request(s), 2 a page");
}

TEST(ScanCluster, AnErrorWithoutAnAnswerHasNoStatus) {
  const std::map<std::string, KubeResponse> answers = {
      {"/apis/policy/v1/poddisruptionbudgets?limit=250", answer(R"({"kind":"PodDisruptionBudgetList","items":[]})")},
      {"/api/v1/nodes?limit=250", answer(R"({"kind":"NodeList","items":[]})")},
      {"/api/v1", {0, "", "connect: Connection refused"}},
  };
  std::vector<std::string> asked;
  const ScanResult result = scan_with(answers, ScanOptions{}, asked);
  ASSERT_EQ(result.report.errors.size(), 1u);
  EXPECT_EQ(result.report.errors[0].text(), "discovery: /api/v1: connect: Connection refused");
  EXPECT_EQ(result.error_status, std::vector<int>{0});
}

TEST(ScanCluster, ACancelledScanAsksNothingMore) {
  std::vector<std::string> asked;
  ScanOptions options;
  options.cancelled = [&] { return asked.size() >= 2; };
  const std::map<std::string, KubeResponse> answers = {
      {"/apis/policy/v1/poddisruptionbudgets?limit=250", answer(R"({"kind":"PodDisruptionBudgetList","items":[]})")},
      {"/api/v1/nodes?limit=250", answer(R"({"kind":"NodeList","items":[]})")},
  };
  const ScanResult result = scan_with(answers, options, asked);
  EXPECT_EQ(asked.size(), 2u);
  ASSERT_FALSE(result.report.errors.empty());
  EXPECT_EQ(result.report.errors[0].text(), "discovery: /api/v1: scan cancelled");
  EXPECT_EQ(result.error_status[0], 0);
}

// A Kubeflow Trainer cluster: discovery serves TrainJobs and both runtime kinds.
std::map<std::string, KubeResponse> trainer_cluster(const std::string& trainjobs) {
  return {
      {"/apis/policy/v1/poddisruptionbudgets?limit=250", answer(R"({"kind":"PodDisruptionBudgetList","items":[]})")},
      {"/api/v1/nodes?limit=250", answer(R"({"kind":"NodeList","items":[]})")},
      {"/api/v1", answer(kCoreResources)},
      {"/apis", answer(R"({"kind":"APIGroupList","groups":[{"name":"trainer.kubeflow.org",
         "preferredVersion":{"groupVersion":"trainer.kubeflow.org/v1alpha1","version":"v1alpha1"}}]})")},
      {"/apis/trainer.kubeflow.org/v1alpha1", answer(R"({"kind":"APIResourceList","resources":[
         {"name":"trainjobs","kind":"TrainJob","namespaced":true,"verbs":["get","list"]},
         {"name":"clustertrainingruntimes","kind":"ClusterTrainingRuntime","namespaced":false,"verbs":["list"]},
         {"name":"trainingruntimes","kind":"TrainingRuntime","namespaced":true,"verbs":["list"]}]})")},
      {"/apis/trainer.kubeflow.org/v1alpha1/trainjobs?limit=250", answer(trainjobs)},
      {"/api/v1/pods?limit=250", answer(pod_list(""))},
  };
}

// A TrainJob whose ClusterTrainingRuntime trains on GPUs with checkpoints on an emptyDir.
const char* const kTrainJobs = R"({"kind":"TrainJobList","items":[{"apiVersion":"trainer.kubeflow.org/v1alpha1",
  "kind":"TrainJob","metadata":{"name":"tj","namespace":"ml","uid":"tj-uid"},
  "spec":{"runtimeRef":{"name":"torch-ckpt","kind":"ClusterTrainingRuntime"},"trainer":{"numNodes":2}}}]})";
const char* const kClusterRuntimes = R"({"kind":"ClusterTrainingRuntimeList","metadata":{},"items":[
  {"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"ClusterTrainingRuntime",
   "metadata":{"name":"torch-ckpt","uid":"rt-uid","managedFields":[{"manager":"kubectl"}]},
   "spec":{"template":{"spec":{"replicatedJobs":[{"name":"node",
     "template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},
     "spec":{"template":{"spec":{"containers":[{"name":"node","image":"pytorch",
       "command":["torchrun","train.py","--save-dir=/ckpt"],"resources":{"limits":{"nvidia.com/gpu":"1"}},
       "volumeMounts":[{"name":"ckpt","mountPath":"/ckpt"}]}],
     "volumes":[{"name":"ckpt","emptyDir":{}}]}}}}}]}}}}]})";
const char* const kClusterRuntimesPath = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes?limit=250";
const char* const kRuntimesPath = "/apis/trainer.kubeflow.org/v1alpha1/trainingruntimes?limit=250";

const Finding* find_check(const CheckReport& report, const std::string& kind, const std::string& check) {
  for (const auto& object : report.objects) {
    if (object.kind != kind) continue;
    for (const auto& f : object.findings) {
      if (f.check == check) return &f;
    }
  }
  return nullptr;
}

TEST(ScanCluster, ATrainJobIsJudgedWithItsRuntimeListedOnce) {
  auto answers = trainer_cluster(kTrainJobs);
  answers[kClusterRuntimesPath] = answer(kClusterRuntimes);
  answers[kRuntimesPath] = answer(R"({"kind":"TrainingRuntimeList","metadata":{},"items":[]})");
  std::vector<std::string> asked;
  const ScanResult result = scan_with(answers, ScanOptions{}, asked);
  EXPECT_TRUE(result.report.errors.empty());
  const Finding* checkpoint = find_check(result.report, "TrainJob", "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, Outcome::kFinding) << checkpoint->reason;
  // The runtime is a target too: evaluated from the same list (a template: a note), which
  // is asked once, before the TrainJobs.
  const Finding* runtime = find_check(result.report, "ClusterTrainingRuntime", "checkpoint-volume");
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), kClusterRuntimesPath), 1);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), kRuntimesPath), 1);
  EXPECT_LT(
      std::find(asked.begin(), asked.end(), kClusterRuntimesPath) - asked.begin(),
      std::find(asked.begin(), asked.end(), "/apis/trainer.kubeflow.org/v1alpha1/trainjobs?limit=250") - asked.begin());
  // 2 for the view, 3 for discovery, 2 runtime lists, TrainJobs and Pods: no more than
  // the scan made before it judged TrainJobs with their runtimes.
  EXPECT_EQ(result.stats.requests, 9u);
}

TEST(ScanCluster, WithoutTheRuntimeCrdsATrainJobsRuntimeChecksAreNotEvaluated) {
  // Discovery serves the runtimes but their lists are 404 (the CRDs went away): absent,
  // not an error.
  std::vector<std::string> asked;
  const ScanResult result = scan_with(trainer_cluster(kTrainJobs), ScanOptions{}, asked);
  EXPECT_TRUE(result.report.errors.empty());
  const Finding* checkpoint = find_check(result.report, "TrainJob", "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, Outcome::kNotEvaluated);
  EXPECT_EQ(checkpoint->reason,
            "runtime ClusterTrainingRuntime/torch-ckpt not found (training runtimes are not listed: is the Trainer "
            "CRD installed?)");
  EXPECT_NE(std::find(asked.begin(), asked.end(), kClusterRuntimesPath), asked.end());
  // Discovery does not serve them: not asked at all.
  auto answers = trainer_cluster(kTrainJobs);
  answers["/apis/trainer.kubeflow.org/v1alpha1"] = answer(R"({"kind":"APIResourceList","resources":[
    {"name":"trainjobs","kind":"TrainJob","namespaced":true,"verbs":["get","list"]}]})");
  asked.clear();
  const ScanResult without = scan_with(answers, ScanOptions{}, asked);
  EXPECT_TRUE(without.report.errors.empty());
  checkpoint = find_check(without.report, "TrainJob", "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, Outcome::kNotEvaluated);
  EXPECT_EQ(std::find(asked.begin(), asked.end(), kClusterRuntimesPath), asked.end());
  EXPECT_EQ(without.stats.requests, 7u);
}

TEST(ScanCluster, AForbiddenRuntimeListIsAnError) {
  auto answers = trainer_cluster(kTrainJobs);
  answers[kClusterRuntimesPath] = {403, R"({"kind":"Status","message":"forbidden","code":403})", ""};
  answers[kRuntimesPath] = answer(R"({"kind":"TrainingRuntimeList","metadata":{},"items":[]})");
  std::vector<std::string> asked;
  const ScanResult result = scan_with(answers, ScanOptions{}, asked);
  ASSERT_EQ(result.report.errors.size(), 1u);
  EXPECT_EQ(result.report.errors[0].text(),
            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes: HTTP 403: forbidden");
  EXPECT_EQ(result.error_status, std::vector<int>{403});
  EXPECT_EQ(std::count(asked.begin(), asked.end(), kClusterRuntimesPath), 1);
  const Finding* checkpoint = find_check(result.report, "TrainJob", "checkpoint-volume");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->outcome, Outcome::kNotEvaluated);
}

TEST(ApiError, StatusAndTheMessageOfItsStatusBody) {
  const ApiError forbidden = api_error({403, R"({"kind":"Status","message":"pods is forbidden","code":403})", ""});
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_TRUE(forbidden.forbidden());
  EXPECT_EQ(forbidden.text(), "HTTP 403: pods is forbidden");
  // A body without a kind is read as a Status; another kind's message is not the error's.
  EXPECT_EQ(api_error({500, R"({"message":"etcd timeout"})", ""}).text(), "HTTP 500: etcd timeout");
  EXPECT_EQ(api_error({500, R"({"kind":"PodList","message":"x"})", ""}).text(), "HTTP 500");
  EXPECT_EQ(api_error({502, "<html>bad gateway</html>", ""}).text(), "HTTP 502");
  const ApiError refused = api_error({0, "", "connect: Connection refused"});
  EXPECT_EQ(refused.status, 0);
  EXPECT_FALSE(refused.forbidden());
  EXPECT_EQ(refused.text(), "connect: Connection refused");
  // Forbidden is the status, not the words.
  EXPECT_FALSE(api_error({401, R"({"kind":"Status","message":"HTTP 403 forbidden"})", ""}).forbidden());
}

}  // namespace
}  // namespace kubegap

// The pure half of `scan`: discovery documents, list pages and owner de-duplication,
// fed as the API server sends them (no sockets). tests/e2e/test_scan.py runs the whole
// command against a real kube-apiserver.
#include "webhook/cluster_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "policies/policy.h"

namespace kubegap {
namespace {

// A GPU pod that keeps checkpoints in an emptyDir: a checkpoint-volume finding anywhere.
std::string gpu_pod(const std::string& name, const std::string& uid, const std::string& owner_uid = "") {
  const std::string owners =
      owner_uid.empty() ? "" : R"(,"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"j","uid":")" +
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
  EXPECT_TRUE(std::none_of(targets.begin(), targets.end(), [](const ScanResource& r) { return r.kind == "ConfigMap"; }));
  // JobSet is in the table but not served here (its CRD is not installed): not a target.
  EXPECT_TRUE(std::none_of(targets.begin(), targets.end(), [](const ScanResource& r) { return r.kind == "JobSet"; }));
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
    "spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":2,"template":)" + gpu_pod("w", "") + "}}}}]}";
  ASSERT_TRUE(scan.add_page(jobs, job).has_value());
  // Two of its pods, and one pod owned by something the scan did not evaluate.
  ASSERT_TRUE(scan.add_page(kPods, pod_list(gpu_pod("j-worker-0", "p0", "job-uid") + "," +
                                            gpu_pod("j-worker-1", "p1", "job-uid") + "," +
                                            gpu_pod("orphan", "p2", "gone-uid")))
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

}  // namespace
}  // namespace kubegap

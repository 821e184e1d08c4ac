#pragma once
// `kubegap-webhook scan`: the webhook's findings for what already runs. Lists every kind
// of the workload table that the API server serves (discovery; a CRD that is not
// installed is skipped), and Pods, page by page, and evaluates each object with the live
// cluster view (PodDisruptionBudgets and Nodes). The same engine and report as `check`.
//
//   ScanOptions options;  options.namespace_name = "ml";
//   CheckReport report = scan_cluster(endpoint, options, policy);   // never throws on the cluster
//   std::cout << render_text(report);
//
// The pure half (discovery parsing, a page's evaluation, owner de-duplication) is
// ScanAccumulator and the parse_* functions, tested without sockets; scan_cluster is the
// I/O around them.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cluster_view.h"
#include "policies/policy.h"
#include "webhook/kube_config.h"
#include "webhook/offline_check.h"

namespace kubegap {

// ScanResource: one resource the API server serves, as discovery names it.
struct ScanResource {
  std::string group;  // "" for core
  std::string version;
  std::string resource;  // plural, e.g. "pytorchjobs"
  std::string kind;
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // list_path: the collection's path, across namespaces or in `namespace_name`.
  std::string list_path(const std::string& namespace_name) const;
};

// APIGroupVersion: a group and the version discovery prefers for it.
struct APIGroupVersion {
  std::string group, version;
};

// parse_group_list: an APIGroupList (GET /apis): each group's preferred version.
// nullopt when the text is not one.
std::optional<std::vector<APIGroupVersion>> parse_group_list(std::string_view json);

// parse_resource_list: an APIResourceList (GET /api/v1, /apis/G/V): the listable
// resources of `group`/`version` (subresources left out). nullopt when the text is not one.
std::optional<std::vector<ScanResource>> parse_resource_list(std::string_view json, const std::string& group,
                                                             const std::string& version);

// scan_targets: of the served `resources`, those whose (group, kind) is in the policy's
// workload table, plus v1 Pods; in the table's order, Pods last.
std::vector<ScanResource> scan_targets(const std::vector<ScanResource>& resources, const Policy& policy);

// ListPage: what a list page says besides its objects.
struct ListPage {
  std::string continue_token;  // empty: the last page
  std::size_t items = 0;
};

// ScanAccumulator: evaluates list pages as they arrive, keeping only each object's
// findings (not its JSON), so memory grows with the objects' reports, not their bodies.
// An object whose controller (ownerReferences, controller: true) is an object the scan
// evaluated is reported under that owner only: a PyTorchJob's 16 pods, a Deployment's
// ReplicaSet and its pods, a JobSet's Jobs are not repeated.
class ScanAccumulator {
 public:
  ScanAccumulator(const Policy& policy, const ClusterSnapshot* cluster, std::string cluster_unavailable)
      : policy_(policy), cluster_(cluster), cluster_unavailable_(std::move(cluster_unavailable)) {}

  // add_page: the objects of one list page of `resource`; nullopt (and an input error in
  // the report) when the page is not a list.
  std::optional<ListPage> add_page(const ScanResource& resource, std::string_view json);
  // add_error: a resource that could not be listed (the report's errors, exit 2).
  void add_error(const std::string& where, const std::string& message);
  void add_note(std::string note) { report_.notes.push_back(std::move(note)); }

  // finish: the report, owned objects left out. Call once.
  CheckReport finish(std::size_t budgets, std::size_t nodes);

 private:
  const Policy& policy_;
  const ClusterSnapshot* cluster_;
  std::string cluster_unavailable_;
  CheckReport report_;
  std::vector<std::string> owners_;  // per report_.objects entry: its controller's uid
  std::set<std::string> evaluated_;  // uids of the evaluated objects
};

// ClusterViewBuilder: the cluster view from list pages of PodDisruptionBudgets and Nodes,
// decoded as they arrive (a page's JSON is not kept).
class ClusterViewBuilder {
 public:
  // add_budgets / add_nodes: one list page; nullopt when it is not a list. An item that
  // does not decode is left out and counted in bad().
  std::optional<ListPage> add_budgets(std::string_view json);
  std::optional<ListPage> add_nodes(std::string_view json);
  std::size_t budgets() const { return budgets_.size(); }
  std::size_t nodes() const { return nodes_.size(); }
  std::size_t bad() const { return bad_; }
  // build: the snapshot; the builder is empty afterwards.
  std::shared_ptr<const ClusterSnapshot> build();

 private:
  std::vector<DisruptionBudget> budgets_;
  std::vector<NodeInfo> nodes_;
  std::size_t bad_ = 0;
};

struct ScanOptions {
  std::string namespace_name;  // empty: every namespace
  std::size_t page_size = 250;
  std::size_t page_limit_bytes = std::size_t{64} << 20;  // one list page's body at most
  // cancelled: asked before each request; true ends the scan (an error in the report).
  std::function<bool()> cancelled;
};

// ScanStats: what the scan cost the API server.
struct ScanStats {
  std::size_t requests = 0;
  std::size_t objects_listed = 0;
};

// scan_cluster: discovery, the cluster view, then every target resource page by page.
// What cannot be listed lands in the report's errors; the rest is still scanned.
CheckReport scan_cluster(const KubeEndpoint& endpoint, const ScanOptions& options, const Policy& policy,
                         ScanStats* stats = nullptr);

}  // namespace kubegap

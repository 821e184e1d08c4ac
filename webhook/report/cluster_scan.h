#pragma once
// `kubegap-webhook scan`: the webhook's findings for what already runs. Lists every kind
// of the workload table that the API server serves (discovery; a CRD that is not
// installed is skipped), and Pods, page by page, and evaluates each object with the live
// cluster view (PodDisruptionBudgets and Nodes, and Kubeflow Trainer's runtimes for
// TrainJobs). The same engine and report as `check`.
//
//   ScanOptions options;  options.namespace_name = "ml";
//   CheckReport report = scan_cluster(endpoint, options, policy);   // the CLI: blocks; never throws on the cluster
//   std::cout << render_text(report);
//
//   ScanResult result = co_await scan_cluster(requester, options, policy);   // on the caller's loop
//
// The pure half (discovery parsing, a page's evaluation, owner de-duplication) is
// ScanAccumulator and the parse_* functions, tested without sockets; scan_cluster is the
// I/O around them: one coroutine, which the CLI runs on an event loop of its own and the
// background audit on the control loop.

#include <boost/asio/awaitable.hpp>
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
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/report/offline_check.h"

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
// workload table, plus v1 Pods; in the table's order, Pods last. With `kinds`, only
// those kinds.
std::vector<ScanResource> scan_targets(const std::vector<ScanResource>& resources, const Policy& policy,
                                       const std::vector<std::string>& kinds = {});

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
  // add_error: a resource that could not be listed (the report's errors, exit 2);
  // `http_status` is the status that made it an error (0: none did, e.g. no answer).
  void add_error(const std::string& where, const std::string& message, int http_status = 0);
  void add_note(std::string note) { report_.notes.push_back(std::move(note)); }
  // use_cluster: the view the pages added from now on are evaluated with (the same view
  // with the Trainer runtimes, once they are listed); it must outlive the accumulator.
  void use_cluster(const ClusterSnapshot* cluster) { cluster_ = cluster; }

  // finish: the report, owned objects left out. Call once.
  CheckReport finish(std::size_t budgets, std::size_t nodes);
  // error_statuses: for each of the report's errors, in order, its add_error status (0
  // for an object that did not evaluate).
  const std::vector<int>& error_statuses() const { return error_statuses_; }

 private:
  const Policy& policy_;
  const ClusterSnapshot* cluster_;
  std::string cluster_unavailable_;
  CheckReport report_;
  std::vector<std::string> owners_;  // per report_.objects entry: its controller's uid
  std::vector<int> error_statuses_;  // per report_.errors entry
  std::set<std::string> evaluated_;  // uids of the evaluated objects
};

// ClusterViewBuilder: the cluster view from list pages of PodDisruptionBudgets and Nodes,
// and of Kubeflow Trainer runtimes, decoded as they arrive (a page's JSON is not kept).
class ClusterViewBuilder {
 public:
  // add_budgets / add_nodes / add_runtimes: one list page; nullopt when it is not a list.
  // An item that does not decode is left out and counted in bad() (runtimes: bad_runtimes()).
  std::optional<ListPage> add_budgets(std::string_view json);
  std::optional<ListPage> add_nodes(std::string_view json);
  // `kind`: kClusterTrainingRuntimeKind or kTrainingRuntimeKind.
  std::optional<ListPage> add_runtimes(std::string_view json, std::string_view kind);
  std::size_t budgets() const { return budgets_.size(); }
  std::size_t nodes() const { return nodes_.size(); }
  std::size_t runtimes() const { return runtimes_.size(); }
  std::size_t bad() const { return bad_; }
  std::size_t bad_runtimes() const { return bad_runtimes_; }
  // build: the snapshot of the budgets and nodes (no runtimes, not listed); the builder
  // holds neither afterwards.
  std::shared_ptr<const ClusterSnapshot> build();
  // build_runtimes: the runtimes added so far, moved out. `listed`: both kinds were
  // listed, so a runtime the set lacks does not exist. A live cluster ships no defaults.
  std::shared_ptr<const RuntimeSet> build_runtimes(bool listed);

 private:
  std::vector<DisruptionBudget> budgets_;
  std::vector<NodeInfo> nodes_;
  std::vector<TrainingRuntimeInfo> runtimes_;
  std::size_t bad_ = 0;
  std::size_t bad_runtimes_ = 0;
};

struct ScanOptions {
  std::string namespace_name;      // empty: every namespace
  std::vector<std::string> kinds;  // empty: every kind of the workload table and Pods; else only these kinds
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

// ScanResult: a scan's report, what it cost, and why each of its errors is one.
struct ScanResult {
  CheckReport report;
  ScanStats stats;
  // error_status[i]: the HTTP status that made report.errors[i] an error (403: RBAC
  // forbids the resource); 0 when no status did (no answer, a body that is not a list, an
  // object that does not evaluate, a cancelled scan). Decide by it, never by the text.
  std::vector<int> error_status;
};

// scan_cluster: the cluster view, discovery, Kubeflow Trainer's runtimes (when the
// policy resolves TrainJobs and the API server serves them; a 404 is a CRD not installed,
// not an error), then every target resource page by page, each request through `get`, on
// the caller's executor. The runtimes are listed once: when they are targets themselves
// they are evaluated then, and so reported first. What cannot be listed lands in the
// report's errors; the rest is still scanned. `options.cancelled` is asked before each
// request. `policy` must outlive the coroutine. `get` is the only way the scan reaches
// the API server: it cannot write, whatever its credentials allow.
boost::asio::awaitable<ScanResult> scan_cluster(KubeGetter get, ScanOptions options, const Policy& policy);

// scan_cluster: the coroutine above for the CLI and the MCP server: on an event loop of
// its own, one KubeClient for every request (GETs only); returns when the scan has ended.
// With `options.cancelled`, it is also asked every 100 ms while a request is in flight,
// and true abandons that request at once (the report then has the error "scan
// cancelled"). Throws ConfigError when the endpoint's TLS material does not load.
CheckReport scan_cluster(const KubeEndpoint& endpoint, const ScanOptions& options, const Policy& policy,
                         ScanStats* stats = nullptr);

}  // namespace kubegap

#include "webhook/report/cluster_scan.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

#include "webhook/core/json_reader.h"
#include "webhook/core/object_decoder.h"
#include "webhook/core/object_evaluation.h"
#include "webhook/core/trainjob_resolver.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/watch_stream.h"

namespace kubegap {

namespace {

namespace net = boost::asio;

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  return JsonReader::member(&object, name);
}

std::string string_member(const rapidjson::Value& object, const char* name) {
  return JsonReader::string_member(&object, name);
}

// parse_kind: the document if it parses to an object of `kind` (a missing kind is taken
// as the one asked for: list items and some discovery documents leave it out).
bool parse_kind(rapidjson::Document& doc, std::string_view json, std::string_view kind) {
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return false;
  const std::string got = string_member(doc, "kind");
  return got.empty() || got == kind;
}

// items: a list's items array, or nullptr.
const rapidjson::Value* items_of(const rapidjson::Document& doc) {
  const rapidjson::Value* items = member(doc, "items");
  return items != nullptr && items->IsArray() ? items : nullptr;
}

std::string continue_of(const rapidjson::Document& doc) {
  const rapidjson::Value* meta = member(doc, "metadata");
  return meta != nullptr && meta->IsObject() ? string_member(*meta, "continue") : std::string();
}

// controller_uid: the uid of the object's controller (ownerReferences[].controller).
std::string controller_uid(const rapidjson::Value& object) {
  const rapidjson::Value* meta = member(object, "metadata");
  if (meta == nullptr || !meta->IsObject()) return {};
  const rapidjson::Value* owners = member(*meta, "ownerReferences");
  if (owners == nullptr || !owners->IsArray()) return {};
  for (const auto& owner : owners->GetArray()) {
    if (!owner.IsObject()) continue;
    const rapidjson::Value* controller = member(owner, "controller");
    if (controller != nullptr && controller->IsBool() && controller->GetBool()) return string_member(owner, "uid");
  }
  return {};
}

std::string uid_of(const rapidjson::Value& object) {
  const rapidjson::Value* meta = member(object, "metadata");
  return meta != nullptr && meta->IsObject() ? string_member(*meta, "uid") : std::string();
}

// decode_page: calls `add(item)` for each item of a list page.
template <typename Add>
std::optional<ListPage> decode_page(std::string_view json, Add add) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  const rapidjson::Value* items = items_of(doc);
  if (items == nullptr) return std::nullopt;
  ListPage page{continue_of(doc), items->Size()};
  for (const auto& item : items->GetArray()) {
    if (item.IsObject()) add(item);
  }
  return page;
}

}  // namespace

std::string ScanResource::list_path(const std::string& namespace_name) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !namespace_name.empty()) path += "/namespaces/" + url_encode(namespace_name);
  return path + "/" + resource;
}

std::optional<std::vector<APIGroupVersion>> parse_group_list(std::string_view json) {
  rapidjson::Document doc;
  if (!parse_kind(doc, json, "APIGroupList")) return std::nullopt;
  const rapidjson::Value* groups = member(doc, "groups");
  if (groups == nullptr || !groups->IsArray()) return std::nullopt;
  std::vector<APIGroupVersion> out;
  for (const auto& group : groups->GetArray()) {
    if (!group.IsObject()) continue;
    const rapidjson::Value* preferred = member(group, "preferredVersion");
    if (preferred == nullptr || !preferred->IsObject()) continue;
    APIGroupVersion gv{string_member(group, "name"), string_member(*preferred, "version")};
    if (!gv.group.empty() && !gv.version.empty()) out.push_back(std::move(gv));
  }
  return out;
}

std::optional<std::vector<ScanResource>> parse_resource_list(std::string_view json, const std::string& group,
                                                             const std::string& version) {
  rapidjson::Document doc;
  if (!parse_kind(doc, json, "APIResourceList")) return std::nullopt;
  const rapidjson::Value* resources = member(doc, "resources");
  if (resources == nullptr || !resources->IsArray()) return std::nullopt;
  std::vector<ScanResource> out;
  for (const auto& r : resources->GetArray()) {
    if (!r.IsObject()) continue;
    ScanResource resource{group, version, string_member(r, "name"), string_member(r, "kind"), true};
    if (resource.resource.empty() || resource.kind.empty()) continue;
    if (resource.resource.find('/') != std::string::npos) continue;  // a subresource (pods/log)
    const rapidjson::Value* verbs = member(r, "verbs");
    const bool listable = verbs != nullptr && verbs->IsArray() &&
                          std::any_of(verbs->Begin(), verbs->End(), [](const rapidjson::Value& v) {
                            return v.IsString() && std::string_view(v.GetString()) == "list";
                          });
    if (!listable) continue;
    if (const rapidjson::Value* ns = member(r, "namespaced"); ns != nullptr && ns->IsBool()) {
      resource.namespaced = ns->GetBool();
    }
    out.push_back(std::move(resource));
  }
  return out;
}

std::vector<ScanResource> scan_targets(const std::vector<ScanResource>& resources, const Policy& policy,
                                       const std::vector<std::string>& kinds) {
  std::vector<ScanResource> out;
  const ScanResource* pods = nullptr;
  for (const auto& row : policy.workload_kinds) {
    if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), row.kind) == kinds.end()) continue;
    for (const auto& r : resources) {
      if (r.group != row.group || r.kind != row.kind) continue;
      if (r.group.empty() && r.kind == "Pod") {
        pods = &r;
      } else if (std::none_of(out.begin(), out.end(),
                              [&](const ScanResource& o) { return o.resource == r.resource && o.group == r.group; })) {
        out.push_back(r);
      }
    }
  }
  if (pods != nullptr) out.push_back(*pods);  // last: their owners are known by then
  return out;
}

std::optional<ListPage> ScanAccumulator::add_page(const ScanResource& resource, std::string_view json) {
  const WorkloadKind* row = policy_.workload_kind(resource.group, resource.kind);
  if (row == nullptr) return std::nullopt;
  const std::string api_version = resource.api_version();
  return decode_page(json, [&](const rapidjson::Value& item) {
    ObjectEvaluation evaluation =
        evaluate_object(item, resource.kind, *row, "default", cluster_, policy_, cluster_unavailable_, cluster_);
    if (!evaluation.error.empty()) {
      report_.errors.push_back(
          {resource.list_path(evaluation.object.namespace_name) + "/" + evaluation.object.name, 0, evaluation.error});
      error_statuses_.push_back(0);
      return;
    }
    // The object's own path, as `kubectl get --raw` takes it.
    const std::string path = resource.list_path(evaluation.object.namespace_name) + "/" + evaluation.object.name;
    std::string uid = uid_of(item);
    if (!uid.empty()) evaluated_.insert(uid);
    owners_.push_back(controller_uid(item));
    report_.objects.push_back({path, 0, api_version, resource.kind, evaluation.object.namespace_name,
                               evaluation.object.name, std::move(evaluation.findings), std::move(evaluation.parts),
                               std::move(uid), std::move(evaluation.provenance)});
  });
}

void ScanAccumulator::add_error(const std::string& where, const std::string& message, int http_status) {
  report_.errors.push_back({where, 0, message});
  error_statuses_.push_back(http_status);
}

CheckReport ScanAccumulator::finish(std::size_t budgets, std::size_t nodes) {
  CheckReport out;
  out.notes = std::move(report_.notes);
  out.errors = std::move(report_.errors);
  out.budgets = budgets;
  out.nodes = nodes;
  out.live_view = cluster_ != nullptr;
  std::size_t owned = 0;
  for (std::size_t i = 0; i < report_.objects.size(); ++i) {
    if (!owners_[i].empty() && evaluated_.contains(owners_[i])) {
      ++owned;
      continue;
    }
    out.objects.push_back(std::move(report_.objects[i]));
  }
  if (owned > 0) {
    out.notes.push_back(std::to_string(owned) + " object(s) reported under their owner (a workload's pods, " +
                        "ReplicaSets and Jobs are not listed again)");
  }
  return out;
}

namespace {

// add_decoded: a list page's items through `decode` into `out`; an item that does not
// decode is counted in `bad`.
template <typename T, typename Decode>
std::optional<ListPage> add_decoded(std::string_view json, const char* kind, Decode decode, std::vector<T>& out,
                                    std::size_t& bad) {
  return decode_page(json, [&](const rapidjson::Value& item) {
    JsonReader reader;
    T value = decode(reader, item, JsonPath{nullptr, kind});
    if (reader.ok()) {
      out.push_back(std::move(value));
    } else {
      ++bad;
    }
  });
}

}  // namespace

std::optional<ListPage> ClusterViewBuilder::add_budgets(std::string_view json) {
  return add_decoded(json, "PodDisruptionBudget", decode_budget_object, budgets_, bad_);
}

std::optional<ListPage> ClusterViewBuilder::add_nodes(std::string_view json) {
  return add_decoded(json, "Node", decode_node_object, nodes_, bad_);
}

std::optional<ListPage> ClusterViewBuilder::add_runtimes(std::string_view json, std::string_view kind) {
  const bool cluster_scoped = kind == kClusterTrainingRuntimeKind;
  // The watcher's decoders: the same JSON text (no managedFields) the cluster view keeps.
  return add_decoded(
      json, cluster_scoped ? "ClusterTrainingRuntime" : "TrainingRuntime",
      [cluster_scoped](JsonReader& reader, const rapidjson::Value& item, const JsonPath& path) {
        return (cluster_scoped ? decode_cluster_runtime_object : decode_namespaced_runtime_object)(reader, item, path)
            .info;
      },
      runtimes_, bad_runtimes_);
}

std::shared_ptr<const ClusterSnapshot> ClusterViewBuilder::build() {
  return std::make_shared<const ClusterSnapshot>(std::move(budgets_), std::move(nodes_));
}

std::shared_ptr<const RuntimeSet> ClusterViewBuilder::build_runtimes(bool listed) {
  return std::make_shared<const RuntimeSet>(std::move(runtimes_), listed, false);
}

namespace {

// Scan: the I/O of one scan, on the executor of whoever awaits run().
struct Scan {
  KubeGetter& send;
  const ScanOptions& options;
  const Policy& policy;
  ScanStats& stats;

  // Fetched: one GET's body, or why there is none.
  struct Fetched {
    std::optional<ApiError> error;
    std::string body;
  };

  // get: one GET; the error (the status and the Status message, or the transport error)
  // or the body.
  net::awaitable<Fetched> get(const std::string& target) {
    if (options.cancelled && options.cancelled()) co_return Fetched{ApiError{0, "scan cancelled"}, {}};
    ++stats.requests;
    KubeResponse response = co_await send(target, options.page_limit_bytes);
    if (!response.error.empty() || response.status != 200) co_return Fetched{api_error(response), {}};
    co_return Fetched{std::nullopt, std::move(response.body)};
  }

  // list: every page of `path`, each handed to `add` (returns the page or nullopt).
  template <typename Add>
  net::awaitable<std::optional<ApiError>> list(const std::string& path, Add add) {
    std::string token;
    do {
      std::string target = path + "?limit=" + std::to_string(options.page_size);
      if (!token.empty()) target += "&continue=" + url_encode(token);
      Fetched fetched = co_await get(target);
      if (fetched.error) co_return fetched.error;
      const std::optional<ListPage> page = add(std::string_view(fetched.body));
      if (!page) co_return ApiError{0, "not a list"};
      stats.objects_listed += page->items;
      token = page->continue_token;
    } while (!token.empty());
    co_return std::nullopt;
  }

  // discover: the served resources of the groups the workload table names, and core v1.
  // `fatal` is set when discovery itself failed (nothing can be scanned).
  net::awaitable<std::vector<ScanResource>> discover(ScanAccumulator& notes_to, std::optional<ApiError>& fatal) {
    std::vector<ScanResource> served;
    Fetched core = co_await get("/api/v1");
    if (core.error) {
      fatal = ApiError{core.error->status, "/api/v1: " + core.error->text()};
      co_return served;
    }
    if (auto resources = parse_resource_list(core.body, "", "v1")) served = std::move(*resources);
    Fetched groups_fetched = co_await get("/apis");
    const auto groups = groups_fetched.error ? std::nullopt : parse_group_list(groups_fetched.body);
    if (!groups) {
      fatal = groups_fetched.error ? ApiError{groups_fetched.error->status, "/apis: " + groups_fetched.error->text()}
                                   : ApiError{0, "/apis: not an APIGroupList"};
      co_return served;
    }
    std::vector<std::string> wanted;
    for (const auto& row : policy.workload_kinds) {
      if (!row.group.empty() && std::find(wanted.begin(), wanted.end(), row.group) == wanted.end()) {
        wanted.push_back(row.group);
      }
    }
    for (const auto& group : wanted) {
      const auto gv =
          std::find_if(groups->begin(), groups->end(), [&](const APIGroupVersion& g) { return g.group == group; });
      if (gv == groups->end()) continue;  // not installed: skipped, not an error
      const std::string path = "/apis/" + gv->group + "/" + gv->version;
      Fetched fetched = co_await get(path);
      auto resources = fetched.error ? std::nullopt : parse_resource_list(fetched.body, gv->group, gv->version);
      if (!resources) {
        if (fetched.error) {
          notes_to.add_error(path, fetched.error->text(), fetched.error->status);
        } else {
          notes_to.add_error(path, "not an APIResourceList");
        }
        continue;
      }
      served.insert(served.end(), resources->begin(), resources->end());
    }
    co_return served;
  }

  // list_runtimes: Kubeflow Trainer's runtimes into `view`, before any object is evaluated,
  // when the policy resolves TrainJobs against them. Only what discovery found served is
  // listed (no Trainer CRDs: no request); a 404 is a CRD gone since, not an error. A
  // runtime kind that is itself a target is evaluated from the same pages and added to
  // `done`, so it is listed once. Returns whether both kinds were listed.
  net::awaitable<bool> list_runtimes(const std::vector<ScanResource>& served, const std::vector<ScanResource>& targets,
                                     ClusterViewBuilder& view, ScanAccumulator& accumulator,
                                     std::set<std::string>& done) {
    if (std::none_of(policy.workload_kinds.begin(), policy.workload_kinds.end(),
                     [](const WorkloadKind& row) { return row.resolve == "trainerRuntime"; })) {
      co_return false;
    }
    bool listed = true;
    for (const std::string_view kind : {kClusterTrainingRuntimeKind, kTrainingRuntimeKind}) {
      const auto is_runtime = [&](const ScanResource& r) { return r.group == kTrainerApiGroup && r.kind == kind; };
      const auto resource = std::find_if(served.begin(), served.end(), is_runtime);
      if (resource == served.end()) {
        listed = false;  // not installed
        continue;
      }
      const bool target = std::any_of(targets.begin(), targets.end(), is_runtime);
      const std::string path = resource->list_path(options.namespace_name);
      if (target) done.insert(path);
      const std::optional<ApiError> error = co_await list(path, [&](std::string_view body) -> std::optional<ListPage> {
        std::optional<ListPage> page = view.add_runtimes(body, kind);
        if (page && target) accumulator.add_page(*resource, body);
        return page;
      });
      if (error) {
        listed = false;
        if (error->status != 404) accumulator.add_error(path, error->text(), error->status);
      }
    }
    if (view.bad_runtimes() > 0) {
      accumulator.add_note(std::to_string(view.bad_runtimes()) + " training runtime(s) could not be decoded");
    }
    co_return listed;
  }

  net::awaitable<ScanResult> run() {
    // The cluster view first: every PDB and Node, decoded page by page.
    ClusterViewBuilder view;
    std::optional<ApiError> view_error = co_await list("/apis/policy/v1/poddisruptionbudgets",
                                                       [&](std::string_view body) { return view.add_budgets(body); });
    if (!view_error) {
      view_error = co_await list("/api/v1/nodes", [&](std::string_view body) { return view.add_nodes(body); });
    }
    const std::size_t budgets = view.budgets(), nodes = view.nodes();  // build() moves them
    const auto snapshot = view.build();
    std::string unavailable;
    if (view_error) unavailable = "cluster view not listed (" + view_error->text() + ")";
    ScanAccumulator accumulator(policy, view_error ? nullptr : snapshot.get(),
                                unavailable.empty() ? "no cluster view" : unavailable);
    if (view_error) accumulator.add_note("disruption-budget not evaluated: " + unavailable);
    if (view.bad() > 0) {
      accumulator.add_note(std::to_string(view.bad()) + " PodDisruptionBudget(s) or Node(s) could not be decoded");
    }
    std::optional<ApiError> fatal;
    const std::vector<ScanResource> served = co_await discover(accumulator, fatal);
    if (fatal) accumulator.add_error("discovery", fatal->message, fatal->status);
    const std::vector<ScanResource> targets = scan_targets(served, policy, options.kinds);
    // The Trainer runtimes next: every TrainJob is judged with the one it names.
    std::set<std::string> done;
    const bool runtimes_listed = co_await list_runtimes(served, targets, view, accumulator, done);
    const auto with_runtimes = std::make_shared<const ClusterSnapshot>(
        snapshot->shared_budgets(), snapshot->shared_nodes(), view.build_runtimes(runtimes_listed));
    if (!view_error) accumulator.use_cluster(with_runtimes.get());
    for (const auto& target : targets) {
      const std::string path = target.list_path(options.namespace_name);
      if (done.contains(path)) continue;
      const std::optional<ApiError> error =
          co_await list(path, [&](std::string_view body) { return accumulator.add_page(target, body); });
      if (error) accumulator.add_error(path, error->text(), error->status);
    }
    accumulator.add_note("listed " + std::to_string(stats.objects_listed) + " object(s) in " +
                         std::to_string(stats.requests) + " API request(s), " + std::to_string(options.page_size) +
                         " a page");
    ScanResult result;
    result.report = accumulator.finish(view_error ? 0 : budgets, view_error ? 0 : nodes);
    result.error_status = accumulator.error_statuses();
    co_return result;
  }
};

}  // namespace

net::awaitable<ScanResult> scan_cluster(KubeGetter get, ScanOptions options, const Policy& policy) {
  ScanStats stats;
  Scan scan{get, options, policy, stats};
  ScanResult result = co_await scan.run();
  result.stats = stats;
  co_return result;
}

CheckReport scan_cluster(const KubeEndpoint& endpoint, const ScanOptions& options, const Policy& policy,
                         ScanStats* stats) {
  // An event loop of the caller's own: the command has nothing else to do while it scans.
  // The client is made after the loop so that it goes first: an abandoned scan's
  // coroutines are destroyed with the loop, and none of them uses the client then.
  net::io_context ioc;
  auto strand = net::make_strand(ioc);
  KubeClient client(strand, endpoint);
  std::optional<ScanResult> result;
  std::exception_ptr failure;
  net::steady_timer watchdog(strand);
  // poll lives as long as the loop runs: the timer's handler refers to it.
  std::function<void(boost::system::error_code)> poll = [&](boost::system::error_code ec) {
    if (ec || result) return;
    if (options.cancelled()) {  // a request in flight can take its whole timeout; a cancelled scan should not
      ioc.stop();
      return;
    }
    watchdog.expires_after(std::chrono::milliseconds(100));
    watchdog.async_wait(poll);
  };
  net::co_spawn(strand, scan_cluster(getter_of(client), options, policy), [&](std::exception_ptr e, ScanResult r) {
    failure = std::move(e);
    result = std::move(r);
    watchdog.cancel();
  });
  if (options.cancelled) poll({});
  ioc.run();
  if (failure) std::rethrow_exception(failure);
  if (!result) {  // abandoned mid-request
    CheckReport cancelled;
    cancelled.errors.push_back(InputProblem{"cluster", 0, "scan cancelled"});
    return cancelled;
  }
  if (stats != nullptr) *stats = result->stats;
  return std::move(result->report);
}

}  // namespace kubegap

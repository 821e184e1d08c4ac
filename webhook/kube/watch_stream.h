#pragma once
// The pure half of list+watch: splitting a watch stream into events, and keeping one
// resource's objects current from list pages and watch events. No sockets, no clock:
// tests feed it fake streams (tests/webhook/kube/watch_stream_test.cpp).
//
//   ResourceStore<NodeInfo> nodes(decode_node_object, node_key);
//   nodes.start_list(); nodes.add_list_page(body, continue_token); nodes.finish_list();
//   splitter.feed(chunk, [&](std::string_view line) { nodes.apply_event(line); });

#include <rapidjson/document.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/cluster_view.h"
#include "webhook/core/json_reader.h"

namespace kubegap {

// LineSplitter: a watch response is a stream of JSON objects, one per line, cut into
// chunks at arbitrary places (mid-object included); feed() hands out whole lines.
class LineSplitter {
 public:
  static constexpr std::size_t kMaxLine = 32 * 1024 * 1024;

  // feed: false when a line grows past kMaxLine (the stream is then unusable).
  bool feed(std::string_view data, const std::function<void(std::string_view)>& on_line);
  std::size_t pending() const { return pending_.size(); }
  void reset() { pending_.clear(); }

 private:
  std::string pending_;
};

enum class WatchResult {
  kChanged,    // ADDED, MODIFIED or DELETED changed the store
  kUnchanged,  // ADDED or MODIFIED with nothing the checks read changed (a Node's status
               // heartbeat, a PDB's status): the store and any snapshot stay as they are
  kBookmark,   // only the resourceVersion moved
  kRelist,     // 410 Gone / "too old resource version": list again
  kError,      // a malformed event or an ERROR status other than 410
};

// ResourceStore: the objects of one resource, keyed (namespace/name), with the
// resourceVersion to resume watching from.
template <typename T>
class ResourceStore {
 public:
  using Decode = T (*)(JsonReader&, const rapidjson::Value&, const JsonPath&);
  using Key = std::string (*)(const T&);

  ResourceStore(Decode decode, Key key) : decode_(decode), key_(key) {}

  void start_list() { listing_.clear(); }
  // add_list_page: one page of a list response; sets `continue_token` (empty on the last
  // page). Returns an error message, or empty.
  std::string add_list_page(std::string_view body, std::string& continue_token);
  // finish_list: the listed objects replace the store.
  void finish_list() {
    items_.swap(listing_);
    listing_.clear();
    resource_version_ = list_version_;
  }
  // clear: no objects and no version (the resource is absent: a CRD not installed).
  void clear() {
    items_.clear();
    listing_.clear();
    resource_version_.clear();
  }

  WatchResult apply_event(std::string_view line, std::string* error = nullptr);

  const std::string& resource_version() const { return resource_version_; }
  std::size_t size() const { return items_.size(); }
  std::vector<T> values() const {
    std::vector<T> out;
    out.reserve(items_.size());
    for (const auto& [key, value] : items_) out.push_back(value);
    return out;
  }

 private:
  Decode decode_;
  Key key_;
  std::unordered_map<std::string, T> items_;
  std::unordered_map<std::string, T> listing_;
  std::string resource_version_;
  std::string list_version_;
};

// RuntimeObject: a watched Kubeflow Trainer runtime (TrainingRuntimeInfo, comparable, so a
// MODIFIED event that changes nothing publishes nothing). Its JSON text is the object
// without metadata.managedFields and metadata.resourceVersion.
struct RuntimeObject {
  TrainingRuntimeInfo info;
  bool operator==(const RuntimeObject& other) const {
    return info.kind == other.info.kind && info.namespace_name == other.info.namespace_name &&
           info.name == other.info.name && info.json == other.info.json;
  }
};

// Decoders and keys for the watched resources.
DisruptionBudget decode_budget_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);
std::string budget_key(const DisruptionBudget& budget);
NodeInfo decode_node_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);
std::string node_key(const NodeInfo& node);
// trainer.kubeflow.org/v1alpha1 ClusterTrainingRuntime (cluster-scoped) and TrainingRuntime.
RuntimeObject decode_cluster_runtime_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path);
RuntimeObject decode_namespaced_runtime_object(JsonReader& reader, const rapidjson::Value& object,
                                               const JsonPath& path);
std::string runtime_object_key(const RuntimeObject& runtime);
// runtime_json: `object` as JSON text without metadata.managedFields and resourceVersion.
std::string runtime_json(const rapidjson::Value& object);

// Helpers shared by the template.
std::string metadata_resource_version(const rapidjson::Value& object);
bool parse_json_line(std::string_view text, rapidjson::Document& out, std::string& error);

template <typename T>
std::string ResourceStore<T>::add_list_page(std::string_view body, std::string& continue_token) {
  rapidjson::Document doc;
  std::string error;
  if (!parse_json_line(body, doc, error)) return error;
  JsonReader reader;
  const JsonPath root{nullptr, "list"};
  const rapidjson::Value* meta = reader.object(JsonReader::member(&doc, "metadata"), JsonPath{&root, "metadata"});
  list_version_ = reader.string(JsonReader::member(meta, "resourceVersion"), JsonPath{&root, "resourceVersion"});
  continue_token = reader.string(JsonReader::member(meta, "continue"), JsonPath{&root, "continue"});
  reader.each(JsonReader::member(&doc, "items"), JsonPath{&root, "items"},
              [&](const rapidjson::Value& item, const JsonPath& path) {
                T value = decode_(reader, item, path);
                if (reader.ok()) listing_.insert_or_assign(key_(value), std::move(value));
              });
  if (!reader.ok()) return reader.error();
  if (list_version_.empty()) return "list response has no metadata.resourceVersion";
  return {};
}

template <typename T>
WatchResult ResourceStore<T>::apply_event(std::string_view line, std::string* error) {
  auto fail = [&](std::string message) {
    if (error != nullptr) *error = std::move(message);
    return WatchResult::kError;
  };
  rapidjson::Document doc;
  std::string parse_error;
  if (!parse_json_line(line, doc, parse_error)) return fail(parse_error);
  const rapidjson::Value* type = JsonReader::member(&doc, "type");
  const rapidjson::Value* object = JsonReader::member(&doc, "object");
  if (type == nullptr || !type->IsString() || object == nullptr || !object->IsObject()) {
    return fail("watch event without type or object");
  }
  const std::string_view kind(type->GetString(), type->GetStringLength());
  if (kind == "ERROR") {
    // A Status: 410 Gone means our resourceVersion is too old to resume from.
    const rapidjson::Value* code = JsonReader::member(object, "code");
    if (code != nullptr && code->IsInt() && code->GetInt() == 410) return WatchResult::kRelist;
    const rapidjson::Value* message = JsonReader::member(object, "message");
    return fail(message != nullptr && message->IsString() ? message->GetString() : "watch ERROR event");
  }
  const std::string version = metadata_resource_version(*object);
  if (kind == "BOOKMARK") {
    if (!version.empty()) resource_version_ = version;
    return WatchResult::kBookmark;
  }
  JsonReader reader;
  T value = decode_(reader, *object, JsonPath{nullptr, "object"});
  if (!reader.ok()) return fail(reader.error());
  if (kind == "ADDED" || kind == "MODIFIED") {
    std::string key = key_(value);
    if (const auto it = items_.find(key); it != items_.end() && it->second == value) {
      if (!version.empty()) resource_version_ = version;
      return WatchResult::kUnchanged;
    }
    items_.insert_or_assign(std::move(key), std::move(value));
  } else if (kind == "DELETED") {
    items_.erase(key_(value));
  } else {
    return fail("unknown watch event type " + std::string(kind));
  }
  if (!version.empty()) resource_version_ = version;
  return WatchResult::kChanged;
}

}  // namespace kubegap

#include "webhook/kube/watch_stream.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "webhook/core/object_decoder.h"
#include "webhook/core/trainjob_resolver.h"

namespace kubegap {

bool LineSplitter::feed(std::string_view data, const std::function<void(std::string_view)>& on_line) {
  while (!data.empty()) {
    const auto newline = data.find('\n');
    if (newline == std::string_view::npos) {
      if (pending_.size() + data.size() > kMaxLine) return false;
      pending_.append(data);
      return true;
    }
    // The limit holds wherever the stream was cut, also when the newline is in this chunk.
    if (pending_.size() + newline > kMaxLine) return false;
    if (pending_.empty()) {
      if (newline > 0) on_line(data.substr(0, newline));
    } else {
      pending_.append(data.substr(0, newline));
      on_line(pending_);
      pending_.clear();
    }
    data.remove_prefix(newline + 1);
  }
  return true;
}

bool parse_json_line(std::string_view text, rapidjson::Document& out, std::string& error) {
  out.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (out.HasParseError()) {
    error = std::string("invalid JSON: ") + rapidjson::GetParseError_En(out.GetParseError());
    return false;
  }
  if (!out.IsObject()) {
    error = "expected a JSON object";
    return false;
  }
  return true;
}

std::string metadata_resource_version(const rapidjson::Value& object) {
  const rapidjson::Value* meta = JsonReader::member(&object, "metadata");
  const rapidjson::Value* version = JsonReader::member(meta, "resourceVersion");
  return version != nullptr && version->IsString() ? version->GetString() : std::string();
}

DisruptionBudget decode_budget_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path) {
  return decode_disruption_budget(reader, object, path);
}
std::string budget_key(const DisruptionBudget& budget) { return budget.namespace_name + "/" + budget.name; }
NodeInfo decode_node_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path) {
  return decode_node(reader, object, path);
}
std::string node_key(const NodeInfo& node) { return node.name; }

std::string runtime_json(const rapidjson::Value& object) {
  rapidjson::StringBuffer text;
  rapidjson::Writer<rapidjson::StringBuffer> writer(text);
  if (!object.IsObject()) {
    object.Accept(writer);
    return {text.GetString(), text.GetSize()};
  }
  writer.StartObject();
  for (const auto& member : object.GetObject()) {
    writer.Key(member.name.GetString(), member.name.GetStringLength());
    const std::string_view key(member.name.GetString(), member.name.GetStringLength());
    if (key != "metadata" || !member.value.IsObject()) {
      member.value.Accept(writer);
      continue;
    }
    // Server-side apply's bookkeeping and the version: large, or changing on every write,
    // and nothing the resolver reads.
    writer.StartObject();
    for (const auto& field : member.value.GetObject()) {
      const std::string_view name(field.name.GetString(), field.name.GetStringLength());
      if (name == "managedFields" || name == "resourceVersion") continue;
      writer.Key(field.name.GetString(), field.name.GetStringLength());
      field.value.Accept(writer);
    }
    writer.EndObject();
  }
  writer.EndObject();
  return {text.GetString(), text.GetSize()};
}

namespace {
RuntimeObject decode_runtime_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path,
                                    std::string_view kind) {
  RuntimeObject out;
  out.info.kind = kind;
  const JsonPath meta_path{&path, "metadata"};
  const rapidjson::Value* meta = reader.object(JsonReader::member(&object, "metadata"), meta_path);
  out.info.name = reader.string(JsonReader::member(meta, "name"), JsonPath{&meta_path, "name"});
  // A ClusterTrainingRuntime has no namespace (RuntimeSet ignores one anyway).
  if (kind != kClusterTrainingRuntimeKind) {
    out.info.namespace_name = reader.string(JsonReader::member(meta, "namespace"), JsonPath{&meta_path, "namespace"});
  }
  if (reader.ok()) out.info.json = runtime_json(object);
  return out;
}
}  // namespace

RuntimeObject decode_cluster_runtime_object(JsonReader& reader, const rapidjson::Value& object, const JsonPath& path) {
  return decode_runtime_object(reader, object, path, kClusterTrainingRuntimeKind);
}
RuntimeObject decode_namespaced_runtime_object(JsonReader& reader, const rapidjson::Value& object,
                                               const JsonPath& path) {
  return decode_runtime_object(reader, object, path, kTrainingRuntimeKind);
}
std::string runtime_object_key(const RuntimeObject& runtime) {
  return runtime.info.namespace_name + "/" + runtime.info.name;
}

}  // namespace kubegap

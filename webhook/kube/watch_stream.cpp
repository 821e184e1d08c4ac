#include "webhook/kube/watch_stream.h"

#include <rapidjson/error/en.h>

#include "webhook/core/object_decoder.h"

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

}  // namespace kubegap

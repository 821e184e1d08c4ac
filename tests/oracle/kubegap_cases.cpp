// kubegap_oracle_cases: kubegap's side of the differential oracle (issue 29). Reads cases
// as JSON lines on stdin and writes one JSON line per case on stdout, in order:
// {"result": ...}, or {"error": "..."} for an input it cannot take at all. The Go oracle
// (tests/oracle/go) answers the same cases with Kubernetes' own code;
// tests/oracle/differential.py compares the two. The protocol, one relation a line:
//
//   tolerates     {toleration, taint}            -> bool          tolerates_taint
//   untolerated   {tolerations, taints}          -> index or -1   first_untolerated
//   eviction      {tolerations, taints}          -> -1, 0 or N s  eviction_delay
//   nodeaffinity  {nodeSelector?, affinity?, node: {name, labels}}
//                                                -> bool          pod_admits_node
//   selector      {selector: null | {...}, labels} -> bool        selects
//   quantity      {text}                         -> {valid, zero} read_quantity_text
//
// Pods, nodes and selectors go through the webhook's own decoders (decode_pod_template,
// decode_node, decode_label_selector), so what is compared is what kubegap makes of the
// object, defaults included (an absent toleration operator is Equal). Output is flushed
// whenever stdin has no complete line left, so a caller may stream cases.

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/label_selector.h"
#include "policies/node_affinity.h"
#include "policies/tolerations.h"
#include "webhook/core/json_reader.h"
#include "webhook/core/object_decoder.h"

namespace kubegap {
namespace {

using rapidjson::Value;
using Allocator = rapidjson::MemoryPoolAllocator<>;

// CaseError: an input the runner cannot take (malformed JSON, a wrong type).
struct CaseError {
  std::string what;
};

Value* member(Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  const auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string string_of(const Value* value, std::string_view what) {
  if (value == nullptr || value->IsNull()) return {};
  if (!value->IsString()) throw CaseError{std::string(what) + ": expected a string"};
  return {value->GetString(), value->GetStringLength()};
}

// decode_pod: the case's pod fields (tolerations, nodeSelector, affinity), moved into
// {"spec": {...}} and read by the webhook's pod decoder.
PodSpecView decode_pod(Value& input, std::initializer_list<const char*> fields, Allocator& alloc) {
  Value spec(rapidjson::kObjectType);
  for (const char* field : fields) {
    if (Value* v = member(input, field)) spec.AddMember(rapidjson::StringRef(field), *v, alloc);
  }
  Value pod(rapidjson::kObjectType);
  pod.AddMember("spec", spec, alloc);
  JsonReader reader;
  const JsonPath root{nullptr, "pod"};
  PodSpecView out = decode_pod_template(reader, pod, root);
  if (!reader.ok()) throw CaseError{reader.error()};
  return out;
}

Taint decode_taint(Value& value) {
  if (!value.IsObject()) throw CaseError{"taint: expected an object"};
  return {string_of(member(value, "key"), "taint.key"), string_of(member(value, "value"), "taint.value"),
          string_of(member(value, "effect"), "taint.effect")};
}

std::vector<Taint> decode_taints(Value* list) {
  std::vector<Taint> out;
  if (list == nullptr || list->IsNull()) return out;
  if (!list->IsArray()) throw CaseError{"taints: expected an array"};
  for (auto& taint : list->GetArray()) out.push_back(decode_taint(taint));
  return out;
}

// One case: writes its result (a JSON value) to `out`.
void answer(Value& input, Allocator& alloc, rapidjson::Writer<rapidjson::StringBuffer>& out) {
  const std::string relation = string_of(member(input, "relation"), "relation");
  if (relation == "tolerates") {
    Value* toleration = member(input, "toleration");
    Value* taint = member(input, "taint");
    if (toleration == nullptr || taint == nullptr) throw CaseError{"tolerates: toleration and taint expected"};
    Value list(rapidjson::kArrayType);
    list.PushBack(*toleration, alloc);
    Value holder(rapidjson::kObjectType);
    holder.AddMember("tolerations", list, alloc);
    const PodSpecView pod = decode_pod(holder, {"tolerations"}, alloc);
    const Taint decoded = decode_taint(*taint);
    if (pod.tolerations.size() != 1) throw CaseError{"toleration: expected an object"};
    out.Bool(tolerates_taint(pod.tolerations.front(), decoded));
  } else if (relation == "untolerated") {
    const PodSpecView pod = decode_pod(input, {"tolerations"}, alloc);
    const auto index = first_untolerated(decode_taints(member(input, "taints")), pod.tolerations);
    out.Int64(index ? static_cast<std::int64_t>(*index) : -1);
  } else if (relation == "eviction") {
    const PodSpecView pod = decode_pod(input, {"tolerations"}, alloc);
    out.Int64(eviction_delay(pod.tolerations, decode_taints(member(input, "taints"))));
  } else if (relation == "nodeaffinity") {
    const PodSpecView pod = decode_pod(input, {"nodeSelector", "affinity"}, alloc);
    Value* node = member(input, "node");
    if (node == nullptr || !node->IsObject()) throw CaseError{"node: expected an object"};
    Value meta(rapidjson::kObjectType);
    for (const char* field : {"name", "labels"}) {
      if (Value* v = member(*node, field)) meta.AddMember(rapidjson::StringRef(field), *v, alloc);
    }
    Value object(rapidjson::kObjectType);
    object.AddMember("metadata", meta, alloc);
    JsonReader reader;
    const NodeInfo decoded = decode_node(reader, object, JsonPath{nullptr, "node"});
    if (!reader.ok()) throw CaseError{reader.error()};
    out.Bool(pod_admits_node(pod, decoded));
  } else if (relation == "selector") {
    JsonReader reader;
    const auto selector = decode_label_selector(reader, member(input, "selector"), JsonPath{nullptr, "selector"});
    StringMap labels;
    reader.string_map(member(input, "labels"), JsonPath{nullptr, "labels"}, labels);
    if (!reader.ok()) throw CaseError{reader.error()};
    out.Bool(selects(selector, labels));
  } else if (relation == "quantity") {
    const Value* text = member(input, "text");
    if (text == nullptr || !text->IsString()) throw CaseError{"text: expected a string"};
    const QuantityText q = read_quantity_text({text->GetString(), text->GetStringLength()});
    out.StartObject();
    out.Key("valid");
    out.Bool(q.valid);
    out.Key("zero");
    out.Bool(q.zero);
    out.EndObject();
  } else {
    throw CaseError{"unknown relation \"" + relation + "\""};
  }
}

// one_case: the answer line for one case line (without its newline).
void one_case(std::string_view line, std::string& out) {
  // A pool with a first block on the stack: most cases need no heap block of their own.
  char first_block[16384];
  Allocator alloc(first_block, sizeof first_block);
  rapidjson::Document doc(&alloc);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  std::string error;
  try {
    doc.Parse(line.data(), line.size());
    if (doc.HasParseError() || !doc.IsObject()) throw CaseError{"not a JSON object"};
    writer.StartObject();
    writer.Key("result");
    answer(doc, alloc, writer);
    writer.EndObject();
  } catch (const CaseError& e) {
    error = e.what;
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    buffer.Clear();
    rapidjson::Writer<rapidjson::StringBuffer> failure(buffer);
    failure.StartObject();
    failure.Key("error");
    failure.String(error.data(), static_cast<rapidjson::SizeType>(error.size()));
    failure.EndObject();
  }
  out.append(buffer.GetString(), buffer.GetSize());
  out.push_back('\n');
}

bool write_all(std::string& out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  out.clear();
  return true;
}

int run() {
  std::string in;
  std::string out;
  std::vector<char> block(1 << 16);
  std::size_t start = 0;  // the first byte of `in` not yet answered
  for (;;) {
    for (std::size_t end; (end = in.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string_view line(in.data() + start, end - start);
      if (!line.empty()) one_case(line, out);
      if (out.size() >= (1 << 16) && !write_all(out)) return 1;
    }
    in.erase(0, start);
    start = 0;
    // Nothing complete left: flush before read() may block, so a streaming caller gets
    // every answer to what it has sent.
    if (!write_all(out)) return 1;
    const ssize_t n = ::read(STDIN_FILENO, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 1;
    if (n == 0) break;
    in.append(block.data(), static_cast<std::size_t>(n));
  }
  if (!in.empty()) one_case(in, out);  // a last line without its newline
  return write_all(out) ? 0 : 1;
}

}  // namespace
}  // namespace kubegap

int main() { return kubegap::run(); }

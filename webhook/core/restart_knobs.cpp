#include "webhook/core/restart_knobs.h"

#include <string>

#include "webhook/core/template_path.h"

namespace kubegap {
namespace {

using rapidjson::Value;

// read_count: an integer knob; an unrendered template ($RETRIES) is set at deploy time.
std::optional<std::int64_t> read_count(JsonReader& reader, const Value* value, const JsonPath& path,
                                       RestartKnobs& out) {
  if (value != nullptr && value->IsString() && is_placeholder({value->GetString(), value->GetStringLength()})) {
    out.placeholder = true;
  }
  return reader.int64(value, path);
}

// job_rule: a batch/v1 PodFailurePolicyRule; a condition with status False or Unknown
// does not match a pod that carries the condition (the status defaults to True).
RestartRule job_rule(JsonReader& reader, const Value& value, const JsonPath& path) {
  RestartRule rule;
  if (reader.object(&value, path) == nullptr) return rule;
  rule.action = reader.string(JsonReader::member(&value, "action"), JsonPath{&path, "action"});
  const JsonPath conditions_path{&path, "onPodConditions"};
  reader.each(JsonReader::member(&value, "onPodConditions"), conditions_path, [&](const Value& c, const JsonPath& p) {
    if (reader.object(&c, p) == nullptr) return;
    const std::string status = reader.string(JsonReader::member(&c, "status"), JsonPath{&p, "status"});
    std::string type = reader.string(JsonReader::member(&c, "type"), JsonPath{&p, "type"});
    if (status.empty() || status == "True") rule.on.push_back(std::move(type));
  });
  rule.narrowed = JsonReader::member(&value, "onExitCodes") != nullptr;
  return rule;
}

// jobset_rule: a JobSet FailurePolicyRule: reasons of the child Job's failure.
RestartRule jobset_rule(JsonReader& reader, const Value& value, const JsonPath& path) {
  RestartRule rule;
  if (reader.object(&value, path) == nullptr) return rule;
  rule.action = reader.string(JsonReader::member(&value, "action"), JsonPath{&path, "action"});
  rule.on =
      reader.string_list(JsonReader::member(&value, "onJobFailureReasons"), JsonPath{&path, "onJobFailureReasons"});
  for (const char* narrowing : {"targetReplicatedJobs", "onJobFailureMessagePatterns"}) {
    const Value* list = JsonReader::member(&value, narrowing);
    if (list != nullptr && list->IsArray() && !list->Empty()) rule.narrowed = true;
  }
  return rule;
}

// volcano_rule: a Volcano LifecyclePolicy: event or events; one keyed on an exit code
// only is narrowed (it matches some failures).
RestartRule volcano_rule(JsonReader& reader, const Value& value, const JsonPath& path) {
  RestartRule rule;
  if (reader.object(&value, path) == nullptr) return rule;
  rule.action = reader.string(JsonReader::member(&value, "action"), JsonPath{&path, "action"});
  std::string event = reader.string(JsonReader::member(&value, "event"), JsonPath{&path, "event"});
  if (!event.empty()) rule.on.push_back(std::move(event));
  for (auto& e : reader.string_list(JsonReader::member(&value, "events"), JsonPath{&path, "events"})) {
    rule.on.push_back(std::move(e));
  }
  rule.narrowed = rule.on.empty() && JsonReader::member(&value, "exitCode") != nullptr;
  return rule;
}

using RuleDecoder = RestartRule (*)(JsonReader&, const Value&, const JsonPath&);

void read_rules(JsonReader& reader, const Value* list, const JsonPath& path, RuleDecoder decode,
                std::vector<RestartRule>& out) {
  reader.each(list, path, [&](const Value& v, const JsonPath& p) { out.push_back(decode(reader, v, p)); });
}

RuleDecoder object_rule_decoder(const RestartRow& row) {
  if (row.model == "jobset") return jobset_rule;
  if (row.model == "volcano") return volcano_rule;
  return job_rule;
}

}  // namespace

RestartKnobs decode_object_restart(JsonReader& reader, const Value& object, const JsonPath& path,
                                   const RestartRow& row) {
  RestartKnobs out;
  const auto first = [&](const std::string& at, auto read) {
    if (at.empty()) return;
    walk_template_path(reader, object, path, at, read);
  };
  first(row.budget,
        [&](const Value& v, const JsonPath& p, const std::string&) { out.budget = read_count(reader, &v, p, out); });
  first(row.per_index_budget, [&](const Value& v, const JsonPath& p, const std::string&) {
    out.per_index_budget = read_count(reader, &v, p, out);
  });
  first(row.rules, [&](const Value& v, const JsonPath& p, const std::string&) {
    read_rules(reader, &v, p, object_rule_decoder(row), out.rules);
  });
  return out;
}

void decode_part_restart(JsonReader& reader, const Value& holder, const JsonPath& path, const RestartRow& row,
                         RestartKnobs& out) {
  if (reader.object(&holder, path) == nullptr) return;
  if (row.model == "jobset") {
    // The child Job: its own backoffLimit and podFailurePolicy decide when it fails.
    out.part_budget =
        read_count(reader, JsonReader::member(&holder, "backoffLimit"), JsonPath{&path, "backoffLimit"}, out);
    const JsonPath pfp_path{&path, "podFailurePolicy"};
    const Value* pfp = reader.object(JsonReader::member(&holder, "podFailurePolicy"), pfp_path);
    read_rules(reader, JsonReader::member(pfp, "rules"), JsonPath{&pfp_path, "rules"}, job_rule, out.part_rules);
  } else if (row.model == "replicas") {
    out.replica_restart_policy =
        reader.string(JsonReader::member(&holder, "restartPolicy"), JsonPath{&path, "restartPolicy"});
  } else if (row.model == "volcano") {
    // A task's policies are matched before the job's (volcano applyPolicies).
    read_rules(reader, JsonReader::member(&holder, "policies"), JsonPath{&path, "policies"}, volcano_rule,
               out.part_rules);
  }
}

std::optional<std::string_view> template_holder_path(std::string_view template_path) {
  const auto dot = template_path.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const TemplatePathSegment last = parse_template_segment(template_path.substr(dot + 1));
  if (last.array || last.field == "*") return std::nullopt;
  return template_path.substr(0, dot);
}

}  // namespace kubegap

#pragma once
// What the MCP server offers, as data: the tools with their input and output schemas and
// annotations, the resources (each case, the active policy) and the one prompt. Pure: the
// lists are built from the policy and the case library; nothing here reads a cluster.
//
//   const McpCatalog catalog(policy, policy_text, case_library());
//   send(rpc_result_line(id, catalog.tools_list_json()));

#include <rapidjson/document.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/policy.h"
#include "webhook/core/case_library.h"

namespace kubegap {

// ToolSpec: one tool. Every tool only reads: the annotations say so.
struct ToolSpec {
  std::string name, title, description;
  rapidjson::Document input_schema, output_schema;
  bool open_world = false;  // reaches the cluster (scan_cluster, explain by name)
};

// ResourceText: a resource's contents.
struct ResourceText {
  std::string uri, mime_type, text;
};

// PromptText: prompts/get's answer, or why not.
struct PromptText {
  std::string description, text;
};

inline constexpr std::string_view kPolicyUri = "kubegap://policy";
inline constexpr std::string_view kCaseUriPrefix = "kubegap://cases/";
inline constexpr std::string_view kAuditPrompt = "audit-training-reliability";

class McpCatalog {
 public:
  // `policy_text`: the --policy file's text, or the built-in policies/default-policy.yaml.
  McpCatalog(const Policy& policy, std::string policy_text, const CaseLibrary& library);

  const ToolSpec* tool(std::string_view name) const;
  const std::vector<ToolSpec>& tools() const { return tools_; }
  // The JSON of the list results (without the era's caching fields: the session adds them).
  std::string tools_list_json() const;
  std::string resources_list_json() const;
  std::string resource_templates_json() const;
  std::string prompts_list_json() const;
  // read_resource: nullopt for a URI that names nothing.
  std::optional<ResourceText> read_resource(std::string_view uri) const;
  // prompt: nullopt for an unknown name. `arguments`: the prompt's, by name.
  std::optional<PromptText> prompt(std::string_view name, const std::map<std::string, std::string>& arguments) const;

 private:
  std::vector<ToolSpec> tools_;
  std::string policy_text_;
  const CaseLibrary& library_;
};

// The built-in policy as YAML (policies/default-policy.yaml, compiled in).
std::string_view default_policy_yaml();

}  // namespace kubegap

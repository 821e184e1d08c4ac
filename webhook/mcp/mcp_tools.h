#pragma once
// The MCP tools' work: the same engine and reports as `check`, `scan` and `cases`, behind
// arguments already checked against each tool's inputSchema (argument_schema.h). A tool
// never throws: what goes wrong (no kubeconfig, an unreachable cluster, a path outside
// the roots) is a result with is_error and a message that says what to do.
//
//   ToolContext context{policy, cancelled, roots, relative_to, endpoint_for, std::chrono::seconds(120)};
//   ToolResult result = call_tool("check_manifests", arguments, context);

#include <rapidjson/document.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/policy.h"
#include "webhook/kube/kube_config.h"
#include "webhook/report/offline_check.h"

namespace kubegap {

struct ToolContext {
  const Policy& policy;
  // cancelled: the client cancelled the call (notifications/cancelled) or the server stops.
  std::function<bool()> cancelled;
  // roots: absolute, normalised directories that paths must lie under (the client's roots,
  // or the server's working directory).
  std::vector<std::string> roots;
  // relative_to: what relative paths are relative to: the first of the client's roots; empty
  // when the client has none (the working directory, and paths are reported as given).
  std::string relative_to;
  // endpoint: the API server of a kubeconfig context ("" for the current one); throws
  // ConfigError saying what is missing.
  std::function<KubeEndpoint(const std::string& context)> endpoint;
  std::chrono::seconds timeout{120};  // a cluster call ends by then, answered
};

// ToolResult: CallToolResult's parts: `text` for people (content), `structured` JSON for
// programs (structuredContent; empty when is_error).
struct ToolResult {
  bool is_error = false;
  std::string text;
  std::string structured;
};

ToolResult call_tool(std::string_view name, const rapidjson::Value& arguments, const ToolContext& context);

// The structured results, exposed for tests.
// explain_result_json: each object's classes and provenance, the errors, and `text`.
std::string explain_result_json(const CheckReport& report, const std::string& text);
// outside_roots: the first of `paths` (resolved against the working directory) that is not
// under one of `roots`, or "" when all are.
std::string outside_roots(const std::vector<std::string>& paths, const std::vector<std::string>& roots);

}  // namespace kubegap

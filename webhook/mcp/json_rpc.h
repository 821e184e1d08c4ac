#pragma once
// JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line. Pure: a line in,
// a parsed message or the error to answer out; and the response lines, always on one line
// (RapidJSON's compact writer escapes every newline inside strings).
//
//   RpcParse parsed = parse_rpc_line(line);
//   if (parsed.error) send(rpc_error_line(parsed.error->id, *parsed.error));
//   else if (parsed.message->is_request()) send(rpc_result_line(parsed.message->id, result));

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>

namespace kubegap {

// The JSON-RPC 2.0 error codes (jsonrpc.org/specification, section 5.1), and MCP's own.
namespace rpc_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;            // MCP: resources/read of an unknown URI
inline constexpr int kUnsupportedProtocolVersion = -32022;  // MCP 2026-07-28: version not served
}  // namespace rpc_code

// RpcError: an error answer. `id` is the request's id as JSON text ("null" when unknown);
// `data`, when not empty, is JSON text.
struct RpcError {
  int code = 0;
  std::string message;
  std::string data;
  std::string id = "null";
};

// RpcMessage: a request (method and id), a notification (method, no id) or a response to
// one of our own requests (id, and result or error).
struct RpcMessage {
  std::string id;  // JSON text of the id; empty for a notification
  std::string method;
  rapidjson::Document body;  // the whole message (params, result, error live in it)

  bool is_request() const { return !method.empty() && !id.empty(); }
  bool is_notification() const { return !method.empty() && id.empty(); }
  bool is_response() const { return method.empty(); }
  // params: the params object; nullptr when absent (a non-object params is an error at parse).
  const rapidjson::Value* params() const;
};

struct RpcParse {
  std::optional<RpcMessage> message;
  std::optional<RpcError> error;
};

// parse_rpc_line: one line. Not JSON: -32700. JSON that is not a JSON-RPC 2.0 message
// (not an object, no "jsonrpc": "2.0", a method that is not a string, an id that is not a
// string or an integer, params that are not an object or array, a batch): -32600 (batches
// were removed from MCP in 2025-06-18).
RpcParse parse_rpc_line(std::string_view line);

// to_json: `value` as compact JSON text.
std::string to_json(const rapidjson::Value& value);

// rpc_result_line: {"jsonrpc":"2.0","id":ID,"result":RESULT} where `result_json` is JSON.
std::string rpc_result_line(const std::string& id, std::string_view result_json);
// rpc_error_line: {"jsonrpc":"2.0","id":ID,"error":{code, message, data?}}.
std::string rpc_error_line(const RpcError& error);
// rpc_request_line: a request of ours to the client (roots/list).
std::string rpc_request_line(const std::string& id, std::string_view method, std::string_view params_json);

}  // namespace kubegap

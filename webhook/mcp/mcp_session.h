#pragma once
// McpSession: the Model Context Protocol server's logic, one message line at a time:
// version negotiation (the initialize handshake of 2024-11-05 to 2025-11-25, and
// 2026-07-28's server/discover with the version in each request's _meta), tools, resources
// and the prompt of McpCatalog, cancellation, and the client's roots. Tool calls run on
// threads of their own, so a long scan does not hold up a ping or a second call; every
// answer goes out through `send`, one line each, from whichever thread made it. The
// transport (stdio_server.h) owns the bytes; tests drive a session with strings.
//
//   McpSession session(options, [&](const std::string& line) { write_line(line); });
//   session.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
//   session.shutdown();   // cancels the calls in flight and waits for them

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "policies/policy.h"
#include "webhook/mcp/json_rpc.h"
#include "webhook/mcp/mcp_catalog.h"

namespace kubegap {

struct McpOptions {
  Policy policy;
  std::string policy_text;                 // served as kubegap://policy
  std::optional<std::string> kubeconfig;   // --kubeconfig; else $KUBECONFIG, ~/.kube/config, the pod's account
  std::string context;                     // --context: the default kubeconfig context
  bool allow_insecure_kubeconfig = false;  // --allow-insecure-kubeconfig
  std::chrono::seconds request_timeout{120};
  std::chrono::seconds roots_timeout{10};  // how long to wait for the client's roots/list answer
  std::size_t max_message_bytes = std::size_t{16} << 20;
  std::size_t max_calls = 8;      // tool calls in flight at once
  std::string working_directory;  // the root when the client has none (default: the process's)
};

// The protocol versions served: the handshake era, newest first, then the newest.
inline constexpr std::string_view kHandshakeVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
inline constexpr std::string_view kModernVersion = "2026-07-28";

class McpSession {
 public:
  using Send = std::function<void(const std::string& line)>;
  McpSession(McpOptions options, Send send);
  ~McpSession();
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  // handle_line: one message from the client (without its newline).
  void handle_line(std::string_view line);
  // oversized: the client sent a line of more than max_message_bytes (dropped unread).
  void oversized(std::size_t bytes);
  // shutdown: cancels every call in flight and waits for their threads; their answers
  // are dropped. Idempotent.
  void shutdown();
  std::size_t calls_in_flight() const;

 private:
  struct Call {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void handle(const RpcMessage& message);
  void handle_request(const RpcMessage& message, const std::string& version);
  void handle_response(const RpcMessage& message);
  void initialize(const RpcMessage& message);
  void call_tool(const RpcMessage& message, bool modern);
  // run_call: a tool call's thread: the roots it needs, the tool, the answer.
  void run_call(const std::string& id, const std::string& tool, const rapidjson::Value& arguments,
                const std::shared_ptr<std::atomic<bool>>& cancelled, bool modern);
  void read_resource(const RpcMessage& message, bool modern);
  void get_prompt(const RpcMessage& message, bool modern);
  void cancel(const rapidjson::Value* params);
  void reply(const std::string& id, std::string result_json, bool modern, bool cacheable);
  void fail(const std::string& id, int code, std::string message, std::string data = {});
  // roots: the directories paths may lie under: the client's roots when it has them,
  // else the working directory; nullopt (and `why`) when the client does not answer.
  std::optional<std::vector<std::string>> roots(bool modern, std::string& why);
  void reap_finished_calls();

  McpOptions options_;
  Send send_;
  McpCatalog catalog_;
  std::string negotiated_;  // the handshake's version; empty before initialize
  bool client_has_roots_ = false;

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable roots_answered_;
  std::vector<Call> calls_;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> in_flight_;            // request id -> cancelled
  std::map<std::string, std::optional<std::vector<std::string>>> roots_requests_;  // our id -> answer
  std::optional<std::vector<std::string>> client_roots_;  // the last answer, until list_changed
  unsigned long next_request_ = 0;
  bool stopping_ = false;
};

// roots_from_list: the directories of a roots/list result (file:// URIs, percent-decoded);
// other schemes are left out.
std::vector<std::string> roots_from_list(const rapidjson::Value& result);

}  // namespace kubegap

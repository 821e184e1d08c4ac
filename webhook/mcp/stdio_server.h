#pragma once
// The MCP stdio transport: messages are lines on stdin, answers lines on stdout (nothing
// else is ever written there: logs go to stderr). A line longer than the limit is dropped
// as it streams in, never held whole, and answered with an error; the next line is served.
// EOF on stdin, SIGTERM or SIGINT end the server cleanly: calls in flight are cancelled,
// their threads joined, and the exit code is 0.
//
//   return run_stdio_server(options);   // `kubegap-webhook mcp`

#include "webhook/mcp/mcp_session.h"

namespace kubegap {

// block_stop_signals: blocks SIGTERM and SIGINT in the calling thread and so in every
// thread it starts afterwards (the log flusher among them): call it first thing, so the
// signals reach the server's watcher instead of killing the process in another thread.
void block_stop_signals();

// run_stdio_server: serves `options` on stdin/stdout until EOF or a signal; the exit code.
int run_stdio_server(McpOptions options, int in_fd = 0, int out_fd = 1);

}  // namespace kubegap

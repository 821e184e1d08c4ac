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

// run_stdio_server: serves `options` on stdin/stdout until EOF or a signal; the exit code.
int run_stdio_server(McpOptions options, int in_fd = 0, int out_fd = 1);

}  // namespace kubegap

#pragma once
// The command line: `kubegap-webhook serve|check|scan|export|cases|completion|version`,
// each with --help. Exit codes: 0 success, 1 a runtime or configuration error, 2 a usage
// error. Run as `kubectl-kubegap` (a symlink on PATH), it is the kubectl plugin
// `kubectl kubegap ...`, and its help says so.

#include <string>
#include <string_view>
#include <vector>

namespace kubegap {

// run_cli: `args` without the program name; `program` is argv[0].
int run_cli(const std::vector<std::string>& args, std::string_view program = "kubegap-webhook");

}  // namespace kubegap

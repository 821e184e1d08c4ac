#pragma once
// The command line: `kubegap-webhook serve|cases|version`, each with --help.
// Exit codes: 0 success, 1 a runtime or configuration error, 2 a usage error.

#include <string>
#include <vector>

namespace kubegap {

int run_cli(const std::vector<std::string>& args);

}  // namespace kubegap

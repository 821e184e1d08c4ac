#pragma once
// Reading a whole file the operator named (a policy, a certificate, a manifest).

#include <string>

namespace kubegap {

// read_file: the whole file, or ConfigError naming it.
std::string read_file(const std::string& path);

}  // namespace kubegap

#pragma once
// Loading a policy file (YAML) over the compiled-in defaults.
//
//   Policy policy = load_policy_file("/etc/kubegap/policy.yaml");   // throws ConfigError
//
// Keys left out keep their defaults. An unknown key or a bad value is an error naming
// the file, the line and the key: a typo must not silently fall back to a default.

#include <string>
#include <string_view>

#include "policies/policy.h"
#include "webhook/core/errors.h"

namespace kubegap {

Policy load_policy_file(const std::string& path);
Policy parse_policy(std::string_view yaml_text, const std::string& source);

}  // namespace kubegap

#include "webhook/policy_loader.h"

#include <sstream>

#include "policies/checks.h"

namespace kubegap {
namespace {

class PolicyParser {
 public:
  explicit PolicyParser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key, const std::string& what) const {
    throw ConfigError(source_ + ":" + std::to_string(at.Mark().line + 1) + ": " + key + ": " + what);
  }

  std::vector<std::string> strings(const YAML::Node& node, const std::string& key) const {
    if (!node.IsSequence()) fail(node, key, "expected a list of strings");
    std::vector<std::string> out;
    for (const auto& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) fail(item, key, "expected a non-empty string");
      out.push_back(item.Scalar());
    }
    return out;
  }

  Policy parse(const YAML::Node& root) const {
    Policy policy = default_policy();
    if (!root || root.IsNull()) return policy;
    if (!root.IsMap()) fail(root, "(top level)", "expected a mapping of policy keys");
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "apiVersion") {
        if (value.Scalar() != "kubegap.io/v1alpha1") fail(value, key, "expected kubegap.io/v1alpha1");
      } else if (key == "kind") {
        if (value.Scalar() != "Policy") fail(value, key, "expected Policy");
      } else if (key == "enabledChecks") {
        policy.enabled_checks = strings(value, key);
        for (const auto& item : value) {
          if (find_check(item.Scalar()) == nullptr) {
            fail(item, key, "unknown check \"" + item.Scalar() + "\"" + known_checks());
          }
        }
      } else if (key == "acceleratorResources") {
        policy.accelerator_resources = strings(value, key);
      } else if (key == "frameworkLabels") {
        policy.framework_labels = strings(value, key);
      } else if (key == "durableCSIDrivers") {
        policy.durable_csi_drivers = strings(value, key);
      } else if (key == "gpuFaultTaints") {
        policy.gpu_fault_taints = strings(value, key);
      } else if (key == "excludedNamespaces") {
        policy.excluded_namespaces = strings(value, key);
      } else if (key == "checkpointPathHints") {
        policy.checkpoint_path_hints = strings(value, key);
      } else if (key == "healthTolerationSecondsBound") {
        policy.health_toleration_seconds_bound = positive_integer(value, key);
      } else {
        fail(entry.first, key,
             "unknown key (known: apiVersion, kind, enabledChecks, acceleratorResources, "
             "frameworkLabels, durableCSIDrivers, gpuFaultTaints, healthTolerationSecondsBound, "
             "excludedNamespaces, checkpointPathHints)");
      }
    }
    return policy;
  }

 private:
  std::int64_t positive_integer(const YAML::Node& value, const std::string& key) const {
    std::int64_t out = 0;
    if (!value.IsScalar() || !YAML::convert<std::int64_t>::decode(value, out) || out <= 0) {
      fail(value, key, "expected a positive integer (seconds)");
    }
    return out;
  }

  static std::string known_checks() {
    std::string out = " (known:";
    for (const auto& check : check_registry()) out += " " + std::string(check.id);
    return out + ")";
  }

  std::string source_;
};

}  // namespace

Policy parse_policy(std::string_view yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  return PolicyParser(source).parse(root);
}

Policy load_policy_file(const std::string& path) { return parse_policy(read_file(path), path); }

}  // namespace kubegap

// Fuzz target: a kubeconfig through parse_kubeconfig (contexts, clusters, users, server
// URLs, base64 data). Any bad file must be a ConfigError naming it: yaml-cpp's own
// exceptions for a wrong shape must not escape. The files a kubeconfig names are not
// read: a stand-in returns fixed text, so a fuzzed path can never reach /dev/zero.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "webhook/core/errors.h"
#include "webhook/kube/kube_config.h"

namespace {

std::string fake_file(const std::string& path) {
  if (path.find("missing") != std::string::npos) throw kubegap::ConfigError(path + ": cannot open file");
  return "-----BEGIN CERTIFICATE-----\nfuzz\n-----END CERTIFICATE-----\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)kubegap::parse_kubeconfig(std::string_view(reinterpret_cast<const char*>(data), size), "/fuzz/.kube/config",
                                    fake_file);
  } catch (const kubegap::ConfigError&) {
    // the documented failure; anything else escapes and is reported
  }
  return 0;
}

#include "webhook/kube/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <boost/beast/core/detail/base64.hpp>
#include <cstdlib>
#include <filesystem>

#include "webhook/core/file_io.h"
#include "webhook/core/yaml_json.h"

namespace kubegap {
namespace {

std::string decode_base64(const std::string& text, const std::string& what, const std::string& source) {
  namespace b64 = boost::beast::detail::base64;
  // decoded_size() assumes padded input; unpadded text decodes up to 2 bytes more.
  std::string out((text.size() + 3) / 4 * 3, '\0');
  const auto [written, read] = b64::decode(out.data(), text.data(), text.size());
  if (read != text.size() && text.find_first_not_of(" \n\r\t=", read) != std::string::npos) {
    throw ConfigError(source + ": " + what + " is not valid base64");
  }
  out.resize(written);
  return out;
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

// resolve: kubeconfig paths are relative to the file's directory.
std::string resolve(const std::string& path, const std::string& kubeconfig) {
  if (path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(kubeconfig).parent_path() / path).string();
}

YAML::Node named(const YAML::Node& list, const std::string& name, const char* what, const std::string& source) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (item["name"] && item["name"].Scalar() == name) return item;
    }
  }
  throw ConfigError(source + ": no " + std::string(what) + " named \"" + name + "\"");
}

std::string scalar(const YAML::Node& map, const char* key) {
  const YAML::Node node = map ? map[key] : YAML::Node();
  return node && node.IsScalar() ? node.Scalar() : std::string();
}

}  // namespace

std::string KubeEndpoint::bearer_token() const {
  if (!token_file.empty()) {
    try {
      return trim(read_file(token_file));
    } catch (const ConfigError&) {
      return token;  // a missing file mid-rotation: fall back, the next connection retries
    }
  }
  return token;
}

void split_server_url(const std::string& url, KubeEndpoint& out, const std::string& source) {
  constexpr std::string_view kScheme = "https://";
  if (url.rfind(kScheme, 0) != 0) throw ConfigError(source + ": server \"" + url + "\" must be an https:// URL");
  std::string rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    const auto close = rest.find(']');
    if (close == std::string::npos) throw ConfigError(source + ": bad server address \"" + url + "\"");
    out.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') out.port = rest.substr(close + 2);
  } else if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    out.host = rest.substr(0, colon);
    out.port = rest.substr(colon + 1);
  } else {
    out.host = rest;
  }
  if (out.host.empty() || out.port.empty()) throw ConfigError(source + ": bad server address \"" + url + "\"");
}

std::optional<KubeEndpoint> in_cluster_endpoint(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') return std::nullopt;
  KubeEndpoint out;
  out.host = host;
  out.port = port;
  out.token_file = sa_dir + "/token";
  out.ca_pem = read_file(sa_dir + "/ca.crt");
  out.source = "in-cluster";
  return out;
}

// A function-try-block: valid YAML of the wrong shape (a scalar where a mapping belongs)
// makes yaml-cpp throw from operator[]; report it as a ConfigError naming the file.
KubeEndpoint parse_kubeconfig(std::string_view text, const std::string& path, ReadFile read,
                              const std::string& context_wanted) try {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  const std::string context_name = context_wanted.empty() ? scalar(root, "current-context") : context_wanted;
  if (context_name.empty()) throw ConfigError(path + ": no current-context");
  const YAML::Node context = named(root["contexts"], context_name, "context", path)["context"];
  const YAML::Node cluster = named(root["clusters"], scalar(context, "cluster"), "cluster", path)["cluster"];
  const std::string user_name = scalar(context, "user");
  const YAML::Node user = user_name.empty() ? YAML::Node() : named(root["users"], user_name, "user", path)["user"];

  KubeEndpoint out;
  out.source = path;
  split_server_url(scalar(cluster, "server"), out, path);
  if (const auto data = scalar(cluster, "certificate-authority-data"); !data.empty()) {
    out.ca_pem = decode_base64(data, "certificate-authority-data", path);
  } else if (const auto file = scalar(cluster, "certificate-authority"); !file.empty()) {
    out.ca_pem = read(resolve(file, path));
  }
  out.insecure_skip_verify = scalar(cluster, "insecure-skip-tls-verify") == "true";
  if (const auto data = scalar(user, "client-certificate-data"); !data.empty()) {
    out.client_cert_pem = decode_base64(data, "client-certificate-data", path);
  } else if (const auto file = scalar(user, "client-certificate"); !file.empty()) {
    out.client_cert_pem = read(resolve(file, path));
  }
  if (const auto data = scalar(user, "client-key-data"); !data.empty()) {
    out.client_key_pem = decode_base64(data, "client-key-data", path);
  } else if (const auto file = scalar(user, "client-key"); !file.empty()) {
    out.client_key_pem = read(resolve(file, path));
  }
  out.token = scalar(user, "token");
  if (const auto file = scalar(user, "tokenFile"); !file.empty()) out.token_file = resolve(file, path);
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    throw ConfigError(path + ": user " + user_name +
                      " has a client certificate without a key, or a key without a certificate");
  }
  // A credential plugin (EKS, GKE, AKS logins) is not run here: without this, the requests
  // would go out anonymous and come back 403 with no word of why.
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (!out.has_credentials() && user && user[plugin]) {
      throw ConfigError(path + ": user " + user_name + " authenticates with " + plugin +
                        " (a credential plugin), which kubegap-webhook does not run: use a kubeconfig with a token "
                        "or a client certificate (docs/mcp.md#a-kubeconfig-for-the-agent makes one)");
    }
  }
  return out;
} catch (const YAML::Exception& e) {
  throw ConfigError(path + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) +
                    ": unexpected kubeconfig structure: " + e.msg);
}

std::optional<std::string> vet_tls_verification(const KubeEndpoint& endpoint, bool allowed) {
  if (!endpoint.insecure_skip_verify) return std::nullopt;
  const bool credentials = endpoint.has_credentials();
  if (credentials && !allowed) {
    throw ConfigError(endpoint.source +
                      ": insecure-skip-tls-verify is set while the user sends credentials, so anyone who can answer "
                      "at " +
                      endpoint.host + ":" + endpoint.port +
                      " receives them: give the cluster its certificate-authority, or pass "
                      "--allow-insecure-kubeconfig to accept the risk");
  }
  return endpoint.source + ": insecure-skip-tls-verify: the API server's certificate is not verified" +
         (credentials ? " and credentials are sent to it (--allow-insecure-kubeconfig)" : "");
}

KubeEndpoint find_endpoint(const std::optional<std::string>& kubeconfig, const std::string& context) {
  if (kubeconfig) return load_kubeconfig(*kubeconfig, context);
  if (auto in_cluster = in_cluster_endpoint()) return *in_cluster;
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    const std::string list = env;
    return load_kubeconfig(list.substr(0, list.find(':')), context);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return load_kubeconfig(std::string(home) + "/.kube/config", context);
  }
  throw ConfigError("no cluster: not in a pod, and no --kubeconfig, $KUBECONFIG or ~/.kube/config");
}

KubeEndpoint load_kubeconfig(const std::string& path, const std::string& context) {
  return parse_kubeconfig(read_file(path), path, read_file, context);
}

}  // namespace kubegap

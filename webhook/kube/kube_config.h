#pragma once
// Where the Kubernetes API server is and how to authenticate to it: in cluster (the
// service account's token and CA, KUBERNETES_SERVICE_HOST/PORT) or from a kubeconfig.
//
//   auto endpoint = load_kubeconfig("~/.kube/config");   // throws ConfigError
//   auto in_cluster = in_cluster_endpoint();             // nullopt outside a pod

#include <optional>
#include <string>
#include <string_view>

namespace kubegap {

struct KubeEndpoint {
  std::string host;  // name or IP, without brackets
  std::string port = "443";
  std::string ca_pem;  // empty: the system's trust store
  bool insecure_skip_verify = false;
  std::string client_cert_pem;  // client certificate authentication
  std::string client_key_pem;
  std::string token;       // a fixed bearer token
  std::string token_file;  // or a file re-read on every connection (rotation)
  std::string source;      // "in-cluster" or the kubeconfig path, for logs

  // has_credentials: whether requests carry a client certificate or a token.
  bool has_credentials() const { return !client_cert_pem.empty() || !token.empty() || !token_file.empty(); }

  // bearer_token: the current token; a projected service-account token is rotated by
  // the kubelet, so the file is read again each time. Empty when there is none.
  std::string bearer_token() const;
};

// in_cluster_endpoint: from KUBERNETES_SERVICE_HOST/PORT and the mounted service account
// (`sa_dir`, normally /var/run/secrets/kubernetes.io/serviceaccount); nullopt when the
// process does not run in a pod.
std::optional<KubeEndpoint> in_cluster_endpoint(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// load_kubeconfig: the cluster and user of `context` (empty: the current-context).
// Supports server, certificate-authority(-data), insecure-skip-tls-verify,
// client-certificate(-data), client-key(-data), token and tokenFile. Throws ConfigError
// naming the file (and the context when it is not there).
KubeEndpoint load_kubeconfig(const std::string& path, const std::string& context = {});

// vet_tls_verification: a kubeconfig whose cluster sets insecure-skip-tls-verify while its
// user sends credentials (a token, a client certificate) hands them to whoever answers
// at the server's address. Throws ConfigError for it unless `allowed`
// (--allow-insecure-kubeconfig); otherwise returns the warning to log whenever
// verification is skipped, with or without credentials; nullopt when it is not skipped.
std::optional<std::string> vet_tls_verification(const KubeEndpoint& endpoint, bool allowed);

// find_endpoint: the API server for a command run by a person or an agent: `kubeconfig`
// if given, else the pod's service account, else $KUBECONFIG's first file, else
// ~/.kube/config (kubectl's order, in-cluster first as client-go's); `context` picks a
// context of the kubeconfig (empty: its current-context). Throws ConfigError saying which
// file is missing or wrong.
KubeEndpoint find_endpoint(const std::optional<std::string>& kubeconfig, const std::string& context = {});

// ReadFile: how parse_kubeconfig reads the files a kubeconfig names (read_file, or a
// stand-in where touching the disk is unwanted: the fuzz target).
using ReadFile = std::string (*)(const std::string& path);

// parse_kubeconfig: load_kubeconfig's work on `text`, the content of the kubeconfig at
// `path` (relative file names resolve against its directory).
KubeEndpoint parse_kubeconfig(std::string_view text, const std::string& path, ReadFile read,
                              const std::string& context = {});

// split_server_url: "https://host:port" -> host, port (443 by default); throws ConfigError.
void split_server_url(const std::string& url, KubeEndpoint& out, const std::string& source);

}  // namespace kubegap

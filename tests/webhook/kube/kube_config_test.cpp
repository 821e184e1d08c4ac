// Where the API server is and how to authenticate (webhook/kube/kube_config.h): kubeconfig
// contexts, server URLs, CA and client credentials inline or by relative path, bearer
// tokens (a token file re-read on rotation), errors naming the file; the in-cluster
// endpoint from the environment and the service-account directory; and the helpers of
// the watch client that depend on it: url_encode and make_client_tls_context.
#include "webhook/kube/kube_config.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tests/webhook/test_util.h"
#include "webhook/core/errors.h"
#include "webhook/kube/kube_client.h"

namespace kgtest {
namespace {

namespace fs = std::filesystem;
using kubegap::ConfigError;
using kubegap::in_cluster_endpoint;
using kubegap::KubeEndpoint;
using kubegap::load_kubeconfig;
using kubegap::make_client_tls_context;
using kubegap::split_server_url;
using kubegap::url_encode;

// TempDir: a fresh directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kubegap-kubeconfig-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string file(const std::string& relative) const { return (path_ / relative).string(); }
  std::string write(const std::string& relative, std::string_view text) const {
    const fs::path target = path_ / relative;
    fs::create_directories(target.parent_path());
    write_text(target.string(), text);
    return target.string();
  }

 private:
  fs::path path_;
};

// EnvGuard: sets or unsets variables for one test and restores them afterwards.
class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::string> names) {
    for (auto& name : names) {
      const char* value = std::getenv(name.c_str());
      saved_.push_back({std::move(name), value ? std::optional<std::string>(value) : std::nullopt});
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// base64: an independent encoder (padded, like kubectl writes *-data fields).
std::string base64(std::string_view bytes, bool pad = true) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
    if (pad) out += rest == 2 ? "=" : "==";
  }
  return out;
}

// load_error: the ConfigError message of loading `path`; a test failure if it loads or
// throws anything else (the CLI reports only ConfigError with the file's name).
std::string load_error(const std::string& path) {
  try {
    load_kubeconfig(path);
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << " instead of ConfigError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "loaded " << path;
  return "";
}

const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n";
const std::string kCertPem = "-----BEGIN CERTIFICATE-----\nMIIBfakeClient\n-----END CERTIFICATE-----\n";
const std::string kKeyPem = "-----BEGIN EC PRIVATE KEY-----\nMHcfakeKey\n-----END EC PRIVATE KEY-----\n";

// kubeconfig: one cluster "c", one user "u", one context "ctx" (current).
std::string kubeconfig(const std::string& cluster_fields, const std::string& user_fields) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
         "clusters:\n- name: c\n  cluster:\n" +
         cluster_fields +
         "contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n"
         "users:\n- name: u\n  user:\n" +
         (user_fields.empty() ? "    {}\n" : user_fields);
}

const std::string kServer = "    server: https://api.example.com:6443\n";

// A kubeconfig as kubectl, kind and cloud CLIs leave them: several clusters, users and
// contexts; the current one picks the endpoint.
std::string multi_context(const std::string& current) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "preferences: {}\n"
         "current-context: " +
         current +
         "\n"
         "clusters:\n"
         "- name: prod\n"
         "  cluster:\n"
         "    server: https://prod.k8s.example.com:6443\n"
         "    certificate-authority-data: " +
         base64("PROD CA PEM") +
         "\n"
         "- name: staging\n"
         "  cluster:\n"
         "    server: https://staging.k8s.example.com:8443/\n"
         "    certificate-authority: pki/staging-ca.pem\n"
         "- name: kind-dev\n"
         "  cluster:\n"
         "    server: https://127.0.0.1:39211\n"
         "    insecure-skip-tls-verify: true\n"
         "contexts:\n"
         "- name: prod-admin\n"
         "  context: {cluster: prod, user: prod-admin}\n"
         "- name: staging\n"
         "  context:\n"
         "    cluster: staging\n"
         "    user: ci-bot\n"
         "    namespace: kubegap-system\n"
         "- name: kind-dev\n"
         "  context: {cluster: kind-dev, user: kind-dev}\n"
         "users:\n"
         "- name: prod-admin\n"
         "  user:\n"
         "    client-certificate-data: " +
         base64("PROD CLIENT CERT") +
         "\n"
         "    client-key-data: " +
         base64("PROD CLIENT KEY") +
         "\n"
         "- name: ci-bot\n"
         "  user:\n"
         "    token: staging-ci-token\n"
         "- name: kind-dev\n"
         "  user:\n"
         "    tokenFile: tokens/kind.token\n";
}

// =======================================================================================
// load_kubeconfig

TEST(LoadKubeconfig, ANamedContextOverridesTheCurrentOne) {
  TempDir dir;
  dir.write("pki/staging-ca.pem", "STAGING CA PEM");
  dir.write("tokens/kind.token", "kind-token\n");
  const std::string config = dir.write("config", multi_context("staging"));
  EXPECT_EQ(load_kubeconfig(config).host, "staging.k8s.example.com");
  EXPECT_EQ(load_kubeconfig(config, "kind-dev").host, "127.0.0.1");
  EXPECT_EQ(load_kubeconfig(config, "prod-admin").client_cert_pem, "PROD CLIENT CERT");
  try {
    load_kubeconfig(config, "nowhere");
    FAIL() << "an unknown context must be an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no context named \"nowhere\""), std::string::npos) << e.what();
  }
}

TEST(LoadKubeconfig, ACredentialPluginIsNamedNotSentAnonymous) {
  TempDir dir;
  const std::string config = dir.write("config",
                                       "apiVersion: v1\nkind: Config\ncurrent-context: eks\n"
                                       "clusters: [{name: c, cluster: {server: 'https://eks.example.com'}}]\n"
                                       "contexts: [{name: eks, context: {cluster: c, user: u}}]\n"
                                       "users: [{name: u, user: {exec: {command: aws, apiVersion: "
                                       "client.authentication.k8s.io/v1beta1}}}]\n");
  const std::string message = load_error(config);
  EXPECT_NE(message.find("user u authenticates with exec"), std::string::npos) << message;
}

TEST(LoadKubeconfig, CurrentContextPicksClusterAndUserAmongSeveral) {
  TempDir dir;
  dir.write("pki/staging-ca.pem", "STAGING CA PEM");
  dir.write("tokens/kind.token", "kind-token\n");

  const auto staging = load_kubeconfig(dir.write("config", multi_context("staging")));
  EXPECT_EQ(staging.host, "staging.k8s.example.com");
  EXPECT_EQ(staging.port, "8443");
  EXPECT_EQ(staging.ca_pem, "STAGING CA PEM");
  EXPECT_EQ(staging.token, "staging-ci-token");
  EXPECT_EQ(staging.bearer_token(), "staging-ci-token");
  EXPECT_TRUE(staging.client_cert_pem.empty());
  EXPECT_FALSE(staging.insecure_skip_verify);
  EXPECT_EQ(staging.source, dir.file("config"));

  const auto prod = load_kubeconfig(dir.write("config", multi_context("prod-admin")));
  EXPECT_EQ(prod.host, "prod.k8s.example.com");
  EXPECT_EQ(prod.port, "6443");
  EXPECT_EQ(prod.ca_pem, "PROD CA PEM");
  EXPECT_EQ(prod.client_cert_pem, "PROD CLIENT CERT");
  EXPECT_EQ(prod.client_key_pem, "PROD CLIENT KEY");
  EXPECT_EQ(prod.bearer_token(), "");

  const auto kind = load_kubeconfig(dir.write("config", multi_context("kind-dev")));
  EXPECT_EQ(kind.host, "127.0.0.1");
  EXPECT_EQ(kind.port, "39211");
  EXPECT_TRUE(kind.insecure_skip_verify);
  EXPECT_TRUE(kind.ca_pem.empty());
  EXPECT_EQ(kind.token_file, dir.file("tokens/kind.token"));
  EXPECT_EQ(kind.bearer_token(), "kind-token");
}

TEST(LoadKubeconfig, ServerUrlGivesHostAndPortWith443ByDefault) {
  struct Case {
    std::string server;
    std::string host;
    std::string port;
  };
  const std::vector<Case> cases = {
      {"https://api.example.com:6443", "api.example.com", "6443"},
      {"https://api.example.com", "api.example.com", "443"},
      {"https://api.example.com/", "api.example.com", "443"},
      {"https://api.example.com:8443/k8s/clusters/c-m-abc", "api.example.com", "8443"},
      {"https://10.96.0.1", "10.96.0.1", "443"},
      {"https://[::1]:6443", "::1", "6443"},
      {"https://[fd00:10:96::1]", "fd00:10:96::1", "443"},
      {"https://[2001:db8::1]/", "2001:db8::1", "443"},
  };
  TempDir dir;
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.server);
    const auto endpoint = load_kubeconfig(dir.write("config", kubeconfig("    server: " + tc.server + "\n", "")));
    EXPECT_EQ(endpoint.host, tc.host);
    EXPECT_EQ(endpoint.port, tc.port);
  }
}

TEST(SplitServerUrl, RejectsWhatIsNotAnHttpsHostAndNamesTheSource) {
  for (const std::string url :
       {"http://api.example.com:8080", "api.example.com:6443", "", "HTTP://x", "https://", "https://:6443",
        "https://api.example.com:", "https://[::1", "https://[]:6443", "https://[::1]:"}) {
    SCOPED_TRACE(url);
    KubeEndpoint endpoint;
    try {
      split_server_url(url, endpoint, "my.kubeconfig");
      ADD_FAILURE() << "accepted, host=" << endpoint.host << " port=" << endpoint.port;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("my.kubeconfig"), std::string::npos) << e.what();
    }
  }
}

TEST(LoadKubeconfig, CertificateAuthorityDataIsBase64Decoded) {
  TempDir dir;
  const auto endpoint = load_kubeconfig(
      dir.write("config", kubeconfig(kServer + "    certificate-authority-data: " + base64(kCaPem) + "\n", "")));
  EXPECT_EQ(endpoint.ca_pem, kCaPem);
}

TEST(LoadKubeconfig, CertificateAuthorityFileIsRelativeToTheKubeconfigsDirectory) {
  TempDir dir;
  dir.write("certs/ca.crt", kCaPem);
  const std::string config =
      dir.write("nested/../config", kubeconfig(kServer + "    certificate-authority: certs/ca.crt\n", ""));
  ASSERT_NE(fs::current_path(), dir.path()) << "the test must not run inside the kubeconfig's directory";
  EXPECT_EQ(load_kubeconfig(config).ca_pem, kCaPem);

  // An absolute path is used as it is.
  const std::string absolute = dir.write("elsewhere/ca.pem", "ABSOLUTE CA");
  EXPECT_EQ(load_kubeconfig(
                dir.write("sub/config", kubeconfig(kServer + "    certificate-authority: " + absolute + "\n", "")))
                .ca_pem,
            "ABSOLUTE CA");

  // A missing CA file is an error naming that file.
  const std::string error =
      load_error(dir.write("config", kubeconfig(kServer + "    certificate-authority: certs/missing.crt\n", "")));
  EXPECT_NE(error.find(dir.file("certs/missing.crt")), std::string::npos) << error;
}

// parse_kubeconfig: the same reading from text; the files it names go through the given
// reader (the fuzz target's stand-in never touches the disk), resolved as from the file.
TEST(ParseKubeconfig, ReadsTheNamedFilesThroughTheGivenReader) {
  static std::vector<std::string> asked;
  asked.clear();
  const auto reader = [](const std::string& path) {
    asked.push_back(path);
    return std::string("PEM OF ") + path;
  };
  const auto endpoint =
      kubegap::parse_kubeconfig(kubeconfig(kServer + "    certificate-authority: certs/ca.crt\n",
                                           "    client-certificate: /abs/admin.crt\n    client-key: admin.key\n"),
                                "/home/me/.kube/config", reader);
  EXPECT_EQ(endpoint.ca_pem, "PEM OF /home/me/.kube/certs/ca.crt");
  EXPECT_EQ(endpoint.client_cert_pem, "PEM OF /abs/admin.crt");
  EXPECT_EQ(endpoint.client_key_pem, "PEM OF /home/me/.kube/admin.key");
  EXPECT_EQ(asked.size(), 3U);
  EXPECT_EQ(endpoint.source, "/home/me/.kube/config");
}

TEST(LoadKubeconfig, CertificateAuthorityDataWinsOverTheFile) {
  TempDir dir;
  dir.write("ca.crt", "FROM FILE");
  const auto endpoint = load_kubeconfig(
      dir.write("config", kubeconfig(kServer + "    certificate-authority: ca.crt\n    certificate-authority-data: " +
                                         base64("FROM DATA") + "\n",
                                     "")));
  EXPECT_EQ(endpoint.ca_pem, "FROM DATA");
}

TEST(LoadKubeconfig, ClientCertificateAndKeyInlineOrByRelativePath) {
  TempDir dir;
  const auto inline_data =
      load_kubeconfig(dir.write("config", kubeconfig(kServer, "    client-certificate-data: " + base64(kCertPem) +
                                                                  "\n    client-key-data: " + base64(kKeyPem) + "\n")));
  EXPECT_EQ(inline_data.client_cert_pem, kCertPem);
  EXPECT_EQ(inline_data.client_key_pem, kKeyPem);
  EXPECT_TRUE(inline_data.token.empty());

  dir.write("users/admin.crt", kCertPem);
  dir.write("users/admin.key", kKeyPem);
  const auto files = load_kubeconfig(dir.write(
      "config", kubeconfig(kServer, "    client-certificate: users/admin.crt\n    client-key: users/admin.key\n")));
  EXPECT_EQ(files.client_cert_pem, kCertPem);
  EXPECT_EQ(files.client_key_pem, kKeyPem);
}

TEST(LoadKubeconfig, BearerTokenIsTheUsersToken) {
  TempDir dir;
  const auto endpoint =
      load_kubeconfig(dir.write("config", kubeconfig(kServer, "    token: eyJhbGciOiJSUzI1NiJ9.abc.def\n")));
  EXPECT_EQ(endpoint.token, "eyJhbGciOiJSUzI1NiJ9.abc.def");
  EXPECT_TRUE(endpoint.token_file.empty());
  EXPECT_EQ(endpoint.bearer_token(), "eyJhbGciOiJSUzI1NiJ9.abc.def");
}

TEST(LoadKubeconfig, TokenFileIsReadAgainSoARotatedTokenIsUsed) {
  TempDir dir;
  dir.write("sa/token", "first-token\n");
  const auto endpoint = load_kubeconfig(dir.write("config", kubeconfig(kServer, "    tokenFile: sa/token\n")));
  EXPECT_EQ(endpoint.token_file, dir.file("sa/token"));
  EXPECT_EQ(endpoint.bearer_token(), "first-token");
  dir.write("sa/token", "second-token\r\n");
  EXPECT_EQ(endpoint.bearer_token(), "second-token");
  // The kubelet swaps a symlink when it rotates a projected token.
  dir.write("sa/..2024_05_13/token", "third-token");
  fs::remove(dir.file("sa/token"));
  fs::create_symlink(dir.file("sa/..2024_05_13/token"), dir.file("sa/token"));
  EXPECT_EQ(endpoint.bearer_token(), "third-token");
}

TEST(LoadKubeconfig, MissingTokenFileFallsBackToTheFixedToken) {
  TempDir dir;
  const auto endpoint =
      load_kubeconfig(dir.write("config", kubeconfig(kServer, "    token: fixed\n    tokenFile: gone.token\n")));
  EXPECT_EQ(endpoint.bearer_token(), "fixed");
  dir.write("gone.token", "from-file");
  EXPECT_EQ(endpoint.bearer_token(), "from-file");
}

TEST(LoadKubeconfig, InsecureSkipTlsVerifyOnlyWhenTrue) {
  TempDir dir;
  EXPECT_TRUE(load_kubeconfig(dir.write("config", kubeconfig(kServer + "    insecure-skip-tls-verify: true\n", "")))
                  .insecure_skip_verify);
  EXPECT_FALSE(load_kubeconfig(dir.write("config", kubeconfig(kServer + "    insecure-skip-tls-verify: false\n", "")))
                   .insecure_skip_verify);
  EXPECT_FALSE(load_kubeconfig(dir.write("config", kubeconfig(kServer, ""))).insecure_skip_verify);
}

TEST(VetTlsVerification, CredentialsToAnUnverifiedServerAreRefusedUnlessAllowed) {
  KubeEndpoint endpoint;
  endpoint.source = "/home/me/.kube/config";
  endpoint.host = "10.0.0.1";
  endpoint.port = "6443";
  EXPECT_EQ(vet_tls_verification(endpoint, false), std::nullopt) << "verified: nothing to say";
  endpoint.insecure_skip_verify = true;
  const auto anonymous = vet_tls_verification(endpoint, false);
  ASSERT_TRUE(anonymous.has_value()) << "no credentials: allowed, with a warning";
  EXPECT_NE(anonymous->find("not verified"), std::string::npos) << *anonymous;
  for (const auto& [what, set] : std::vector<std::pair<std::string, void (*)(KubeEndpoint&)>>{
           {"token", [](KubeEndpoint& e) { e.token = "t"; }},
           {"tokenFile", [](KubeEndpoint& e) { e.token_file = "/tmp/t"; }},
           {"client certificate", [](KubeEndpoint& e) { e.client_cert_pem = "pem"; }}}) {
    KubeEndpoint with = endpoint;
    set(with);
    try {
      vet_tls_verification(with, false);
      ADD_FAILURE() << what << ": not refused";
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("/home/me/.kube/config: insecure-skip-tls-verify"), std::string::npos) << message;
      EXPECT_NE(message.find("10.0.0.1:6443"), std::string::npos) << message;
      EXPECT_NE(message.find("--allow-insecure-kubeconfig"), std::string::npos) << message;
    }
    const auto allowed = vet_tls_verification(with, true);
    ASSERT_TRUE(allowed.has_value()) << what << ": allowed, but still warned";
    EXPECT_NE(allowed->find("credentials are sent"), std::string::npos) << *allowed;
  }
}

TEST(LoadKubeconfig, ContextWithoutAUserHasNoCredentials) {
  TempDir dir;
  const auto endpoint =
      load_kubeconfig(dir.write("config", "current-context: ctx\nclusters:\n- name: c\n  cluster:\n" + kServer +
                                              "contexts:\n- name: ctx\n  context:\n    cluster: c\n"));
  EXPECT_EQ(endpoint.host, "api.example.com");
  EXPECT_EQ(endpoint.bearer_token(), "");
  EXPECT_TRUE(endpoint.client_cert_pem.empty());
}

TEST(LoadKubeconfig, ErrorsNameTheFileAndTheProblem) {
  struct Case {
    const char* name;
    std::string text;
    std::vector<std::string> mentions;
  };
  const std::string other_context = "current-context: ctx\nclusters:\n- name: c\n  cluster:\n" + kServer +
                                    "contexts:\n- name: elsewhere\n  context: {cluster: c}\n";
  const std::vector<Case> cases = {
      {"no current-context", "apiVersion: v1\nkind: Config\nclusters: []\n", {"no current-context"}},
      {"empty current-context", "current-context: \"\"\n", {"no current-context"}},
      {"empty file", "", {"no current-context"}},
      {"unknown context name", other_context, {"context", "\"ctx\""}},
      {"unknown cluster name",
       "current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: gone}\nclusters:\n- name: c\n  cluster:\n" +
           kServer,
       {"cluster", "\"gone\""}},
      {"unknown user name",
       "current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: c, user: nobody}\nclusters:\n- name: c\n"
       "  cluster:\n" +
           kServer,
       {"user", "\"nobody\""}},
      {"http:// server",
       kubeconfig("    server: http://api.example.com:8080\n", ""),
       {"http://api.example.com:8080", "https://"}},
      {"no server", kubeconfig("    certificate-authority-data: " + base64(kCaPem) + "\n", ""), {"server"}},
      {"certificate without key",
       kubeconfig(kServer, "    client-certificate-data: " + base64(kCertPem) + "\n"),
       {"without a key"}},
      {"key without certificate", kubeconfig(kServer, "    client-key-data: " + base64(kKeyPem) + "\n"), {"key"}},
      {"bad base64 CA",
       kubeconfig(kServer + "    certificate-authority-data: not*base64!\n", ""),
       {"certificate-authority-data", "base64"}},
      {"bad base64 after padding",
       kubeconfig(kServer + "    certificate-authority-data: QQ==QQ==\n", ""),
       {"certificate-authority-data", "base64"}},
      {"bad base64 client key",
       kubeconfig(kServer, "    client-certificate-data: " + base64(kCertPem) + "\n    client-key-data: \"%%%\"\n"),
       {"client-key-data", "base64"}},
      {"invalid YAML", "current-context: ctx\nclusters: [\n  - name: c\n    cluster: {server: \n", {"invalid YAML"}},
      {"tab-indented YAML", "current-context: ctx\nclusters:\n\t- name: c\n", {"invalid YAML"}},
      // Valid YAML of the wrong shape is a ConfigError too, not a yaml-cpp exception.
      {"a scalar document", "just some text\n", {}},
      {"a list document", "- current-context\n- ctx\n", {"current-context"}},
      {"contexts holding scalars", "current-context: ctx\ncontexts:\n- ctx\n", {}},
      {"context that is a scalar", "current-context: ctx\ncontexts:\n- name: ctx\n  context: prod\n", {}},
      {"cluster that is a scalar",
       "current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: c}\nclusters:\n- name: c\n  cluster: nope\n",
       {}},
      {"user that is a scalar",
       "current-context: ctx\ncontexts:\n- name: ctx\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  "
       "cluster:\n" +
           kServer + "users:\n- name: u\n  user: nope\n",
       {}},
  };
  TempDir dir;
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const std::string path = dir.write("bad-kubeconfig.yaml", tc.text);
    const std::string error = load_error(path);
    EXPECT_EQ(error.rfind(path, 0), 0u) << "error does not start with the file: " << error;
    for (const auto& mention : tc.mentions) EXPECT_NE(error.find(mention), std::string::npos) << error;
  }
}

TEST(LoadKubeconfig, InvalidYamlErrorGivesTheLine) {
  TempDir dir;
  const std::string path = dir.write("config", "current-context: ctx\nclusters:\n- name: c\n  cluster: {server: [\n");
  const std::string error = load_error(path);
  EXPECT_NE(error.find(path + ":"), std::string::npos) << error;
  EXPECT_NE(error.find("invalid YAML"), std::string::npos) << error;
}

TEST(LoadKubeconfig, MissingFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string error = load_error(dir.file("no-such-kubeconfig"));
  EXPECT_NE(error.find(dir.file("no-such-kubeconfig")), std::string::npos) << error;
}

TEST(LoadKubeconfig, Base64DataIsDecodedWhateverItsLength) {
  // Every length modulo 3, padded as kubectl writes it, and unpadded: decoding writes
  // into a buffer sized from the text, so the odd lengths must not overflow it.
  TempDir dir;
  for (std::size_t size = 40; size < 52; ++size) {
    std::string bytes;
    for (std::size_t i = 0; i < size; ++i) bytes += static_cast<char>('A' + i % 26);
    for (const bool pad : {true, false}) {
      SCOPED_TRACE(std::to_string(size) + (pad ? " padded" : " unpadded"));
      const auto endpoint = load_kubeconfig(dir.write(
          "config", kubeconfig(kServer + "    certificate-authority-data: " + base64(bytes, pad) + "\n", "")));
      EXPECT_EQ(endpoint.ca_pem, bytes);
    }
  }
}

TEST(LoadKubeconfig, Base64OfBinaryBytesRoundTrips) {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  const auto endpoint = load_kubeconfig(
      dir.write("config", kubeconfig(kServer + "    certificate-authority-data: " + base64(bytes) + "\n", "")));
  EXPECT_EQ(endpoint.ca_pem, bytes);
}

// =======================================================================================
// in_cluster_endpoint

TEST(InClusterEndpoint, UsesTheServiceEnvironmentAndTheServiceAccountDirectory) {
  EnvGuard env({"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"});
  TempDir sa;
  sa.write("token", "sa-token-1\n");
  sa.write("ca.crt", kCaPem);
  sa.write("namespace", "kubegap-system");
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);

  const auto endpoint = in_cluster_endpoint(sa.path().string());
  ASSERT_TRUE(endpoint.has_value());
  EXPECT_EQ(endpoint->host, "10.96.0.1");
  EXPECT_EQ(endpoint->port, "443");
  EXPECT_EQ(endpoint->ca_pem, kCaPem);
  EXPECT_EQ(endpoint->token_file, sa.file("token"));
  EXPECT_TRUE(endpoint->token.empty());
  EXPECT_FALSE(endpoint->insecure_skip_verify);
  EXPECT_EQ(endpoint->source, "in-cluster");
  EXPECT_EQ(endpoint->bearer_token(), "sa-token-1");
  // The kubelet rotates the projected token: the next connection uses the new one.
  sa.write("token", "sa-token-2\n");
  EXPECT_EQ(endpoint->bearer_token(), "sa-token-2");
}

TEST(InClusterEndpoint, KeepsAnIpv6ServiceHostWithoutBrackets) {
  EnvGuard env({"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"});
  TempDir sa;
  sa.write("token", "t");
  sa.write("ca.crt", kCaPem);
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1), 0);
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_PORT", "6443", 1), 0);
  const auto endpoint = in_cluster_endpoint(sa.path().string());
  ASSERT_TRUE(endpoint.has_value());
  EXPECT_EQ(endpoint->host, "fd00:10:96::1");
  EXPECT_EQ(endpoint->port, "6443");
}

TEST(InClusterEndpoint, OutsideAPodThereIsNone) {
  EnvGuard env({"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"});
  TempDir sa;
  sa.write("token", "t");
  sa.write("ca.crt", kCaPem);

  ASSERT_EQ(::unsetenv("KUBERNETES_SERVICE_HOST"), 0);
  ASSERT_EQ(::unsetenv("KUBERNETES_SERVICE_PORT"), 0);
  EXPECT_FALSE(in_cluster_endpoint(sa.path().string()).has_value());

  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
  EXPECT_FALSE(in_cluster_endpoint(sa.path().string()).has_value()) << "port without host";

  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_HOST", "", 1), 0);
  EXPECT_FALSE(in_cluster_endpoint(sa.path().string()).has_value()) << "empty host";

  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
  ASSERT_EQ(::unsetenv("KUBERNETES_SERVICE_PORT"), 0);
  EXPECT_FALSE(in_cluster_endpoint(sa.path().string()).has_value()) << "host without port";
}

TEST(InClusterEndpoint, EnvironmentWithoutAServiceAccountCaIsAConfigErrorNamingIt) {
  EnvGuard env({"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"});
  TempDir sa;
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
  ASSERT_EQ(::setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
  try {
    in_cluster_endpoint(sa.path().string());
    ADD_FAILURE() << "an endpoint without a CA";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(sa.file("ca.crt")), std::string::npos) << e.what();
  }
}

// =======================================================================================
// url_encode

TEST(UrlEncode, EscapesContinueTokenCharactersThatMeanSomethingInAQuery) {
  EXPECT_EQ(url_encode("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTAwfQ=="),
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTAwfQ%3D%3D");
  EXPECT_EQ(url_encode("a+b/c=d"), "a%2Bb%2Fc%3Dd");
  EXPECT_EQ(url_encode("&resourceVersion=1 #"), "%26resourceVersion%3D1%20%23");
  EXPECT_EQ(url_encode("%"), "%25");
  // Unreserved characters (RFC 3986) stay as they are; resource versions are digits.
  EXPECT_EQ(url_encode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(url_encode("48402"), "48402");
  EXPECT_EQ(url_encode(""), "");
  // Bytes above 0x7F are escaped byte by byte, in upper-case hex.
  EXPECT_EQ(url_encode("\xC3\xBC\xFF"), "%C3%BC%FF");
  EXPECT_EQ(url_encode(std::string_view("\0\n", 2)), "%00%0A");
}

// =======================================================================================
// make_client_tls_context, with certificates generated by certs/gen-certs.sh

class ClientTlsContext : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) return;
    dir_ = new TempDir();
    const std::string command =
        "'" + source_path("certs/gen-certs.sh") + "' --out '" + dir_->file("certs") + "' --force >/dev/null 2>&1";
    generated_ = std::system(command.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (dir_ == nullptr) GTEST_SKIP() << "openssl not installed";
    ASSERT_TRUE(generated_) << "certs/gen-certs.sh failed";
  }
  static std::string pem(const std::string& name) {
    const auto text = read_text(dir_->file("certs/" + name));
    EXPECT_TRUE(text.has_value()) << name;
    return text.value_or("");
  }
  static std::string config_error(const KubeEndpoint& endpoint) {
    try {
      make_client_tls_context(endpoint);
    } catch (const ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }

  static TempDir* dir_;
  static bool generated_;
};
TempDir* ClientTlsContext::dir_ = nullptr;
bool ClientTlsContext::generated_ = false;

std::vector<std::string> trusted_subjects(SSL_CTX* ctx) {
  std::vector<std::string> out;
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
  for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i) {
    X509* cert = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objects, i));
    if (cert == nullptr) continue;
    char name[256];
    X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof name);
    out.emplace_back(name);
  }
  return out;
}

TEST_F(ClientTlsContext, TrustsExactlyTheEndpointsCaAndVerifiesThePeer) {
  KubeEndpoint endpoint;
  endpoint.ca_pem = pem("ca.crt");
  endpoint.source = "test.kubeconfig";
  auto ctx = make_client_tls_context(endpoint);
  EXPECT_EQ(trusted_subjects(ctx.native_handle()), std::vector<std::string>{"/CN=kubegap-webhook dev CA"});
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx.native_handle()), SSL_VERIFY_PEER);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx.native_handle()), TLS1_2_VERSION);
  EXPECT_EQ(SSL_CTX_get0_certificate(ctx.native_handle()), nullptr) << "no client certificate was configured";
}

TEST_F(ClientTlsContext, InsecureSkipVerifyTurnsVerificationOff) {
  KubeEndpoint endpoint;
  endpoint.insecure_skip_verify = true;
  auto ctx = make_client_tls_context(endpoint);
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx.native_handle()), SSL_VERIFY_NONE);
}

TEST_F(ClientTlsContext, PresentsTheClientCertificateFromAKubeconfig) {
  TempDir dir;
  dir.write("ca.crt", pem("ca.crt"));
  const std::string config =
      dir.write("config", kubeconfig(kServer + "    certificate-authority: ca.crt\n",
                                     "    client-certificate-data: " + base64(pem("tls.crt")) +
                                         "\n    client-key-data: " + base64(pem("tls.key")) + "\n"));
  const auto endpoint = load_kubeconfig(config);
  auto ctx = make_client_tls_context(endpoint);
  X509* cert = SSL_CTX_get0_certificate(ctx.native_handle());
  ASSERT_NE(cert, nullptr);
  char name[256];
  X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof name);
  EXPECT_EQ(std::string(name), "/CN=kubegap-webhook.kubegap-system.svc");
  EXPECT_EQ(trusted_subjects(ctx.native_handle()), std::vector<std::string>{"/CN=kubegap-webhook dev CA"});
}

TEST_F(ClientTlsContext, GarbageCaPemIsAConfigErrorNamingTheSource) {
  for (const std::string& garbage :
       {std::string("not a certificate"), std::string("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        pem("ca.key")}) {
    KubeEndpoint endpoint;
    endpoint.ca_pem = garbage;
    endpoint.source = "/home/me/.kube/config";
    const std::string error = config_error(endpoint);
    EXPECT_EQ(error.rfind("/home/me/.kube/config: ", 0), 0u) << error;
    EXPECT_NE(error.find("CA"), std::string::npos) << error;
  }
}

TEST_F(ClientTlsContext, ClientKeyNotMatchingTheCertificateIsAConfigError) {
  KubeEndpoint endpoint;
  endpoint.ca_pem = pem("ca.crt");
  endpoint.client_cert_pem = pem("tls.crt");
  endpoint.client_key_pem = pem("ca.key");  // a valid key, but not this certificate's
  endpoint.source = "mismatch.kubeconfig";
  const std::string error = config_error(endpoint);
  EXPECT_EQ(error.rfind("mismatch.kubeconfig: ", 0), 0u) << error;
  EXPECT_NE(error.find("client certificate"), std::string::npos) << error;

  endpoint.client_key_pem = "garbage";
  EXPECT_EQ(config_error(endpoint).rfind("mismatch.kubeconfig: ", 0), 0u);
  endpoint.client_key_pem = pem("tls.key");
  endpoint.client_cert_pem = "garbage";
  EXPECT_EQ(config_error(endpoint).rfind("mismatch.kubeconfig: ", 0), 0u);
}

}  // namespace
}  // namespace kgtest

#pragma once
// The server's TLS settings: TLS 1.2 minimum (1.3 preferred by OpenSSL's negotiation),
// AEAD-only suites for 1.2, ALPN selecting http/1.1, and certificates that can be
// replaced while serving.

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

using X509 = struct x509_st;

namespace kubegap {

// make_server_tls_context: loads the certificate chain and key; throws ConfigError with
// the file name and OpenSSL's reason when they cannot be used, or when the key is
// readable by every user. With `client_ca_file`, a client must present a certificate
// signed by one of its CAs (the API server's, from its AdmissionConfiguration), and with
// `client_names` one whose subject CN or a DNS SAN is one of them (a cluster CA signs
// every kubelet's and user's client certificate too).
boost::asio::ssl::context make_server_tls_context(const std::string& cert_file, const std::string& key_file,
                                                  const std::string& client_ca_file = {},
                                                  const std::vector<std::string>& client_names = {});

// certificate_names: the subject CN and the DNS SANs of a certificate.
std::vector<std::string> certificate_names(X509* certificate);

// ServerTlsStore: the current server TLS context. Each new connection takes the current
// one and keeps it (a shared_ptr) for its life, so replacing the certificate changes
// new handshakes only and never drops an open connection.
class ServerTlsStore {
 public:
  // Loads the files; throws ConfigError when they cannot be used. An empty
  // `client_ca_file` accepts clients without a certificate.
  ServerTlsStore(std::string cert_file, std::string key_file, std::string client_ca_file = {},
                 std::vector<std::string> client_names = {});

  std::shared_ptr<boost::asio::ssl::context> current() const { return current_.load(); }

  // reload: loads the files again and swaps them in; on failure keeps the old
  // certificate and returns false with `error` set.
  bool reload(std::string& error);

  // not_after: when the current certificate expires.
  std::chrono::system_clock::time_point not_after() const {
    return std::chrono::system_clock::time_point(std::chrono::seconds(not_after_.load()));
  }
  const std::string& cert_file() const { return cert_file_; }
  const std::string& key_file() const { return key_file_; }
  const std::string& client_ca_file() const { return client_ca_file_; }
  const std::vector<std::string>& client_names() const { return client_names_; }

 private:
  std::string cert_file_;
  std::string key_file_;
  std::string client_ca_file_;
  std::vector<std::string> client_names_;
  std::atomic<std::shared_ptr<boost::asio::ssl::context>> current_;
  std::atomic<std::int64_t> not_after_{0};
};

// certificate_not_after: the leaf certificate's notAfter, in Unix seconds (0 if unknown).
std::int64_t certificate_not_after(boost::asio::ssl::context& context);

}  // namespace kubegap

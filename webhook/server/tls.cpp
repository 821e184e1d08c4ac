#include "webhook/server/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>

#include "webhook/core/errors.h"

namespace kubegap {
namespace {

// AEAD suites with forward secrecy only; TLS 1.3 suites are AEAD by definition.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// select_http11: the API server offers "h2,http/1.1" to loopback URLs; Beast speaks
// HTTP/1.1 only, so pick it, and carry on without ALPN when it is not offered.
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                  void*) {
  static constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof(kHttp11) && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

std::string openssl_reason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof(buffer));
  return buffer;
}

}  // namespace

namespace {

constexpr const char* kMakeCerts = "development certificates: certs/gen-certs.sh --out DIR (./dev run makes them)";

// require_readable: a missing or unreadable certificate or key names the file, why, and
// how to make a development pair (OpenSSL's own message gives only an error code).
void require_readable(const std::string& path, const char* what) {
  std::ifstream file(path);
  if (file) return;
  throw ConfigError(path + ": cannot read TLS " + what + " (" + std::strerror(errno) + "); " + kMakeCerts);
}

// require_private: refuses a key that every user on the node can read. stat follows the
// symlinks a Secret volume is made of, so the mode checked is the file's own.
void require_private(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IROTH) == 0) return;
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  throw ConfigError(path + ": TLS private key is readable by every user (mode " + mode +
                    "); make it private: chmod 600 " + path +
                    ", or in a pod give the Secret volume defaultMode: 0400 (0440 with an fsGroup)");
}

// require_client_certificates: the handshake fails unless the client presents a
// certificate that chains to one of the CAs in `ca_file`; the CAs' names are sent as
// the acceptable issuers, so a client holding several certificates picks the right one.
// The names a client certificate must carry one of, kept with its context (ex_data,
// freed with it).
int names_index() {
  static const int kIndex =
      SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, [](void*, void* names, CRYPTO_EX_DATA*, int, long, void*) {
        delete static_cast<std::vector<std::string>*>(names);
      });
  return kIndex;
}

// verify_client_name: OpenSSL's chain verification, then, for the client's own
// certificate (depth 0), one of the allowed names.
int verify_client_name(int preverified, X509_STORE_CTX* store) {
  if (preverified != 1 || X509_STORE_CTX_get_error_depth(store) != 0) return preverified;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* allowed =
      static_cast<const std::vector<std::string>*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), names_index()));
  if (allowed == nullptr || allowed->empty()) return 1;
  for (const auto& name : certificate_names(X509_STORE_CTX_get_current_cert(store))) {
    if (std::find(allowed->begin(), allowed->end(), name) != allowed->end()) return 1;
  }
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

void require_client_certificates(SSL_CTX* native, const std::string& ca_file,
                                 const std::vector<std::string>& allowed_names) {
  require_readable(ca_file, "client CA bundle");
  if (SSL_CTX_load_verify_locations(native, ca_file.c_str(), nullptr) != 1) {
    throw ConfigError(ca_file + ": cannot load client CA bundle (not PEM?): " + openssl_reason());
  }
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
  if (names == nullptr) throw ConfigError(ca_file + ": no CA certificate in the client CA bundle");
  SSL_CTX_set_client_CA_list(native, names);  // takes ownership
  SSL_CTX_set_ex_data(native, names_index(), new std::vector<std::string>(allowed_names));
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_client_name);
  // With peer verification, OpenSSL refuses to resume a TLS 1.2 session (fatally, not by
  // falling back to a full handshake) unless the context names its sessions.
  static constexpr unsigned char kSessionContext[] = {'k', 'u', 'b', 'e', 'g', 'a', 'p'};
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext));
}

}  // namespace

std::vector<std::string> certificate_names(X509* certificate) {
  std::vector<std::string> names;
  if (certificate == nullptr) return names;
  const X509_NAME* subject = X509_get_subject_name(certificate);
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)), ASN1_STRING_length(data));
  }
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* san = sk_GENERAL_NAME_value(sans, i);
    if (san->type != GEN_DNS) continue;
    names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(san->d.dNSName)),
                       ASN1_STRING_length(san->d.dNSName));
  }
  GENERAL_NAMES_free(sans);
  return names;
}

boost::asio::ssl::context make_server_tls_context(const std::string& cert_file, const std::string& key_file,
                                                  const std::string& client_ca_file,
                                                  const std::vector<std::string>& client_names) {
  require_readable(cert_file, "certificate");
  require_readable(key_file, "private key");
  require_private(key_file);
  namespace ssl = boost::asio::ssl;
  ssl::context ctx(ssl::context::tls_server);
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    throw ConfigError("TLS: cannot set cipher list: " + openssl_reason());
  }
  SSL_CTX_set_alpn_select_cb(native, select_http11, nullptr);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(native, cert_file.c_str()) != 1) {
    throw ConfigError(cert_file + ": cannot load TLS certificate chain (not PEM?): " + openssl_reason() + "; " +
                      kMakeCerts);
  }
  if (SSL_CTX_use_PrivateKey_file(native, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw ConfigError(key_file + ": cannot load TLS private key (not PEM?): " + openssl_reason() + "; " + kMakeCerts);
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    throw ConfigError(key_file + ": private key does not match " + cert_file + ": " + openssl_reason());
  }
  if (!client_ca_file.empty()) require_client_certificates(native, client_ca_file, client_names);
  return ctx;
}

std::int64_t certificate_not_after(boost::asio::ssl::context& context) {
  X509* certificate = SSL_CTX_get0_certificate(context.native_handle());
  if (certificate == nullptr) return 0;
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &tm) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&tm));
}

ServerTlsStore::ServerTlsStore(std::string cert_file, std::string key_file, std::string client_ca_file,
                               std::vector<std::string> client_names)
    : cert_file_(std::move(cert_file)),
      key_file_(std::move(key_file)),
      client_ca_file_(std::move(client_ca_file)),
      client_names_(std::move(client_names)) {
  auto context = std::make_shared<boost::asio::ssl::context>(
      make_server_tls_context(cert_file_, key_file_, client_ca_file_, client_names_));
  not_after_.store(certificate_not_after(*context));
  current_.store(std::move(context));
}

bool ServerTlsStore::reload(std::string& error) {
  try {
    auto context = std::make_shared<boost::asio::ssl::context>(
        make_server_tls_context(cert_file_, key_file_, client_ca_file_, client_names_));
    not_after_.store(certificate_not_after(*context));
    current_.store(std::move(context));
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

}  // namespace kubegap

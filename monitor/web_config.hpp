// SPDX-License-Identifier: MIT
// The monitor's --web-config-file, in the format of Prometheus' exporters (exporter-toolkit's
// web-config): TLS with a certificate and key, basic-auth users with bcrypt hashes, and
// response headers. A key ibqos does not implement is an error, never silently ignored.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ibqos::monitor {

struct WebConfig {
    // PEM text of the server's certificate chain and key (TLS when both are set).
    std::string certificate, key;
    // GnuTLS priorities that reflect min_version / max_version ("" for GnuTLS' defaults).
    std::string tlsPriorities;
    // Basic-auth users: name -> bcrypt hash ($2a$, $2b$ or $2y$).
    std::map<std::string, std::string> users;
    // Headers added to every response (http_server_config.headers).
    std::vector<std::pair<std::string, std::string>> headers;

    bool tls() const { return !certificate.empty(); }
};

// Reads a web-config file (YAML). Files it names (cert_file, key_file) are read relative to its
// folder. nullopt, with the reason (the file and what is wrong), when it cannot be used.
std::optional<WebConfig> loadWebConfig(const std::string& path, std::string& error);

// Whether password matches a bcrypt hash (libcrypt's crypt_rn; a compare in constant time).
bool bcryptMatches(const std::string& password, const std::string& hash);

}  // namespace ibqos::monitor

// SPDX-License-Identifier: MIT
// The web-config reader (yaml-cpp) and the bcrypt check (libcrypt). Like exporter-toolkit, a
// key the file holds but ibqos cannot honour stops the start: a configuration that seems to
// protect the port and does not is worse than none.
#include "monitor/web_config.hpp"

#include <crypt.h>
#include <yaml-cpp/yaml.h>

#include <cstring>
#include <set>

#include "common/source.hpp"

namespace ibqos::monitor {

namespace {

// A map's keys that ibqos does not read, as "a, b".
std::string unknownKeys(const YAML::Node& map, const std::set<std::string>& known) {
    std::string out;
    for (const auto& entry : map) {
        const std::string key = entry.first.as<std::string>();
        if (!known.count(key)) out += (out.empty() ? "" : ", ") + key;
    }
    return out;
}

std::string scalar(const YAML::Node& map, const char* key) {
    const YAML::Node value = map[key];
    if (!value) return "";
    if (!value.IsScalar()) throw YAML::Exception(value.Mark(), std::string(key) + " takes a value");
    return value.as<std::string>();
}

// GnuTLS' name of a web-config TLS version ("TLS12" -> "VERS-TLS1.2"), or "".
std::string gnutlsVersion(const std::string& version) {
    static const std::pair<const char*, const char*> versions[] = {{"TLS10", "VERS-TLS1.0"},
                                                                   {"TLS11", "VERS-TLS1.1"},
                                                                   {"TLS12", "VERS-TLS1.2"},
                                                                   {"TLS13", "VERS-TLS1.3"}};
    for (const auto& [name, gnutls] : versions)
        if (version == name) return gnutls;
    return "";
}

// Priorities that allow only the versions from min to max ("" for either: no bound).
std::string priorities(const std::string& min, const std::string& max) {
    static const char* order[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
    std::string out = "NORMAL";
    bool allowed = min.empty();
    for (const char* version : order) {
        if (version == min) allowed = true;
        if (!allowed) out += ":-" + gnutlsVersion(version);
        if (version == max) allowed = false;
    }
    return out;
}

void readTls(const YAML::Node& tls, const std::string& folder, WebConfig& config) {
    static const std::set<std::string> known = {"cert_file", "key_file", "min_version",
                                                "max_version"};
    if (std::string extra = unknownKeys(tls, known); !extra.empty())
        throw YAML::Exception(tls.Mark(), "tls_server_config: ibqos monitor does not implement " +
                                              extra + " (it reads cert_file, key_file, " +
                                              "min_version and max_version)");
    const std::string cert = scalar(tls, "cert_file"), key = scalar(tls, "key_file");
    if (cert.empty() || key.empty())
        throw YAML::Exception(tls.Mark(), "tls_server_config needs both cert_file and key_file");
    for (const char* name : {"min_version", "max_version"}) {
        std::string version = scalar(tls, name);
        if (!version.empty() && gnutlsVersion(version).empty())
            throw YAML::Exception(tls[name].Mark(), std::string(name) + " is TLS10, TLS11, " +
                                                        "TLS12 or TLS13, not '" + version + "'");
    }
    const std::string min = scalar(tls, "min_version"), max = scalar(tls, "max_version");
    if (!min.empty() || !max.empty()) config.tlsPriorities = priorities(min, max);
    std::string error;
    auto read = [&](const std::string& file) {
        const std::string path = file.front() == '/' ? file : folder + file;
        std::optional<std::string> text = SourceFile::readText(path, error);
        if (!text) throw YAML::Exception(YAML::Mark::null_mark(), error);
        return *text;
    };
    config.certificate = read(cert);
    config.key = read(key);
}

void readUsers(const YAML::Node& users, WebConfig& config) {
    if (!users.IsMap())
        throw YAML::Exception(users.Mark(), "basic_auth_users maps users to hashes");
    for (const auto& entry : users) {
        const std::string name = entry.first.as<std::string>();
        const std::string hash = entry.second.IsScalar() ? entry.second.as<std::string>() : "";
        if (hash.rfind("$2a$", 0) != 0 && hash.rfind("$2b$", 0) != 0 && hash.rfind("$2y$", 0) != 0)
            throw YAML::Exception(entry.second.Mark(), "the password of user '" + name +
                                                           "' is not a bcrypt hash ($2y$...; "
                                                           "htpasswd -nBC 10 \"\" makes one)");
        config.users[name] = hash;
    }
}

}  // namespace

std::optional<WebConfig> loadWebConfig(const std::string& path, std::string& error) {
    std::optional<std::string> text = SourceFile::readText(path, error);
    if (!text) return std::nullopt;
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    WebConfig config;
    try {
        const YAML::Node root = YAML::Load(*text);
        if (root.IsNull()) return config;  // an empty file: no TLS, no users, as exporters read it
        if (!root.IsMap()) throw YAML::Exception(root.Mark(), "not a web-config map");
        static const std::set<std::string> known = {"tls_server_config", "http_server_config",
                                                    "basic_auth_users"};
        if (std::string extra = unknownKeys(root, known); !extra.empty())
            throw YAML::Exception(root.Mark(), "unknown keys: " + extra);
        if (const YAML::Node tls = root["tls_server_config"]; tls && !tls.IsNull())
            readTls(tls, folder, config);
        if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull())
            readUsers(users, config);
        if (const YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
            if (std::string extra = unknownKeys(http, {"headers"}); !extra.empty())
                throw YAML::Exception(
                    http.Mark(), "http_server_config: ibqos monitor does not implement " + extra +
                                     " (it reads headers)");
            for (const auto& header : http["headers"])
                config.headers.emplace_back(header.first.as<std::string>(),
                                            header.second.as<std::string>());
        }
    } catch (const YAML::Exception& e) {
        error = path;
        if (!e.mark.is_null())
            error +=
                ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
        error += ": " + e.msg;
        return std::nullopt;
    }
    return config;
}

bool bcryptMatches(const std::string& password, const std::string& hash) {
    crypt_data data;
    std::memset(&data, 0, sizeof data);
    const char* result = crypt_rn(password.c_str(), hash.c_str(), &data, sizeof data);
    if (!result || result[0] == '*' || std::strlen(result) != hash.size()) return false;
    unsigned char differ = 0;
    for (size_t i = 0; i < hash.size(); ++i)
        differ |= static_cast<unsigned char>(result[i] ^ hash[i]);
    return differ == 0;
}

}  // namespace ibqos::monitor

// SPDX-License-Identifier: MIT
// Printing JSON documents and numbers.
#include "common/json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace ibqos {

std::string dumpJson(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string dumpJsonArray(const std::vector<std::string>& elements) {
    size_t size = 2;
    for (const std::string& e : elements) size += e.size() + 1;
    std::string out;
    out.reserve(size);
    out += '[';
    for (size_t i = 0; i < elements.size(); ++i) {
        if (i) out += ',';
        out += elements[i];
    }
    out += ']';
    return out;
}

std::string dumpJsonObject(const std::vector<std::pair<std::string, std::string>>& members) {
    size_t size = 2;
    for (const auto& [key, value] : members) size += key.size() + value.size() + 4;
    std::string out;
    out.reserve(size);
    out += '{';
    for (size_t i = 0; i < members.size(); ++i) {
        if (i) out += ',';
        const std::string& key = members[i].first;
        // A key of letters, digits and underscores (every key the commands write) as it is.
        if (std::all_of(key.begin(), key.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
            })) {
            out += '"';
            out += key;
            out += '"';
        } else {
            out += dumpJson(key);
        }
        out += ':';
        out += members[i].second;
    }
    out += '}';
    return out;
}

Json jsonNumber(double v) {
    if (!std::isfinite(v)) return nullptr;
    double rounded = std::round(v * 1000) / 1000;
    if (rounded == std::trunc(rounded) && std::fabs(rounded) < 9.0e15) {
        return static_cast<int64_t>(rounded);
    }
    return rounded;
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// JSON, written with nlohmann-json: the document type every command builds its output in, and
// the one way it is printed.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ibqos {

// Keys keep the order they are set in: the order the command-line contract lists them.
using Json = nlohmann::ordered_json;

// The document on one line, without a newline; invalid UTF-8 in a string becomes U+FFFD.
std::string dumpJson(const Json& value);
// A document too large to build whole (tens of thousands of regions), printed from its parts
// as dumpJson would print it whole: an array of printed elements, an object of printed members.
std::string dumpJsonArray(const std::vector<std::string>& elements);
std::string dumpJsonObject(const std::vector<std::pair<std::string, std::string>>& members);
// A measured quantity: rounded to three decimals, a whole number as an integer, null when not
// finite.
Json jsonNumber(double v);
// The value, or null.
template <typename T>
Json jsonOptional(const std::optional<T>& v) {
    return v ? Json(*v) : Json(nullptr);
}

// The text, or null when it is empty (a name that is not set).
inline Json jsonName(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

}  // namespace ibqos

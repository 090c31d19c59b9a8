// SPDX-License-Identifier: MIT
// Small text helpers shared by the readers, the emitters and the commands.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ibqos {

// v in hex with a 0x prefix, zero-padded to at least `digits` digits.
inline std::string hex(uint64_t v, int digits = 0) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
    return buf;
}

// s without the blanks (spaces, tabs, carriage returns...) at either end.
inline std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// Printing JSON documents and numbers.
#include "common/json.hpp"

#include <cmath>

namespace ibqos {

std::string dumpJson(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
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

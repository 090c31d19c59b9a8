// SPDX-License-Identifier: MIT
// Batch lines: fields split as every ibqos line format splits them, ports found as the other
// commands find them, numbers bounded by the request's fields.
#include "cli/query_batch.hpp"

#include <cstdint>
#include <vector>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos::cli {

namespace {

// At most this much of a bad value goes into a message.
std::string excerpt(const std::string& s) { return s.size() <= 60 ? s : s.substr(0, 57) + "..."; }

}  // namespace

std::optional<PathQuery> parseBatchLine(const Fabric& fabric, const std::string& line,
                                        std::string& error) {
    if (line.find('\0') != std::string::npos) {
        error = "the line holds a NUL byte";
        return std::nullopt;
    }
    std::vector<std::string> f;
    if (!splitFields(line, f, error)) return std::nullopt;
    if (f.size() != 6) {
        error = "expected 6 fields (SRC DST SERVICE_ID QOS_CLASS PKEY SL), found " +
                std::to_string(f.size());
        return std::nullopt;
    }
    PathQuery q;
    static const char* const names[] = {"SRC", "DST", "SERVICE_ID", "QOS_CLASS", "PKEY", "SL"};
    for (int i = 0; i < 2; ++i) {
        std::string why;
        uint32_t port = fabric.findEndpoint(f[i], why);
        if (port == NoPort) {
            // The whole reason, unless the field itself is too long to repeat.
            error =
                std::string(names[i]) + ": " +
                (f[i].size() <= 60 ? why : "'" + excerpt(f[i]) + "' is not a port of the fabric");
            return std::nullopt;
        }
        (i == 0 ? q.source : q.destination) = port;
    }
    static const uint64_t max[] = {0, 0, UINT64_MAX, ib::MaxQosClass, UINT16_MAX, ib::MaxSl};
    for (int i = 2; i < 6; ++i) {
        if (f[i] == "-") continue;
        auto v = parseNumber(f[i]);
        if (v && *v > max[i]) v.reset();
        if (!v) {
            error = std::string(names[i]) + " '" + excerpt(f[i]) + "' is not a number from 0 to " +
                    (i == 2 ? std::string("2^64-1") : std::to_string(max[i])) + " (or '-')";
            return std::nullopt;
        }
        if (i == 2) q.serviceId = *v;
        if (i == 3) q.qosClass = static_cast<uint16_t>(*v);
        if (i == 4) q.pkey = static_cast<uint16_t>(*v);
        if (i == 5) q.sl = static_cast<uint8_t>(*v);
    }
    return q;
}

bool LineReader::next(std::string& line, bool& tooLong) {
    line.clear();
    tooLong = false;
    bool any = false;
    char c;
    while (in_.get(c)) {
        any = true;
        if (c == '\n') break;
        if (line.size() < MaxLine) {
            line.push_back(c);
        } else {
            tooLong = true;
        }
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return any;
}

}  // namespace ibqos::cli

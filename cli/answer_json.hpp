// SPDX-License-Identifier: MIT
// AnswerWriter: the JSON object `ibqos query` prints for an SA answer (the contract's form),
// which `ibqos diff` prints too for the answers before and after.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/json.hpp"
#include "compiler/policy.hpp"
#include "ib/link.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos::cli {

// The JSON form of an answer, which `--batch` writes once a request: made of pieces prepared
// once per level and rejection with the JSON library (names escaped, PKey lists), and of
// numbers. Building one nlohmann document an answer costs 3.3 us a request, this 0.7 us
// (bench/query_batch.py); the contract allows 1 us.
class AnswerWriter {
  public:
    explicit AnswerWriter(const Policy& policy) : policy_(policy) {
        for (const QosLevel& level : policy.levels) {
            Json pkeys = nullptr;
            if (!level.pkeys.empty()) {
                pkeys = Json::array();
                for (const Range& r : level.pkeys.ranges()) pkeys.push_back({r.lo, r.hi});
            }
            levels_.push_back(",\"level\":" + dumpJson(level.name));
            pkeys_.push_back(",\"pkeys\":" + dumpJson(pkeys));
        }
    }

    void write(std::string& out, const PathAnswer& a) const { write(out, a, true, nullptr); }

    // The answer as `ibqos diff` prints it for a region: "rule" lists every rule that decides
    // it, and "pkey" is null where the region does not fix the PKey.
    void writeForRegion(std::string& out, const PathAnswer& a, bool pkeyKnown,
                        const std::vector<uint32_t>& rules) const {
        write(out, a, pkeyKnown, &rules);
    }

  private:
    void write(std::string& out, const PathAnswer& a, bool pkeyKnown,
               const std::vector<uint32_t>* rules) const {
        out += a.ok() ? "{\"status\":\"ok\"" : "{\"status\":\"rejected\"";
        out += levels_[a.match.level];
        number(out, ",\"sl\":", a.sl);
        optional(out, ",\"mtu_limit\":", a.mtuLimit);
        optional(out, ",\"mtu_limit_bytes\":", readable(a.mtuLimit, mtuBytes));
        optional(out, ",\"rate_limit\":", a.rateLimit);
        optional(out, ",\"rate_limit_gbps\":", readable(a.rateLimit, rateGbps));
        optional(out, ",\"packet_life\":", a.packetLife);
        out += pkeys_[a.match.level];
        if (a.ok() && pkeyKnown) {
            number(out, ",\"pkey\":", a.pkey);
        } else {
            out += ",\"pkey\":null";
        }
        if (rules) {
            out += ",\"rule\":[";
            for (size_t i = 0; i < rules->size(); ++i) {
                if (i) out += ',';
                rule(out, (*rules)[i]);
            }
            out += ']';
        } else {
            out += ",\"rule\":";
            rule(out, a.match.rule);
        }
        if (!a.ok()) out += ",\"reason\":" + dumpJson(rejectionText(a.rejection));
        out += '}';
    }
    void rule(std::string& out, uint32_t r) const {
        if (r == NoRule) {
            out += "null";
            return;
        }
        number(out, "{\"index\":", r);
        number(out, ",\"line\":", policy_.rules[r].location.line);
        out += '}';
    }
    static void number(std::string& out, const char* key, uint64_t v) {
        out += key;
        char digits[24];
        auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
        out.append(digits, end);
    }
    static void decimalNumber(std::string& out, const char* key, double v) {
        out += key;
        char digits[32];
        auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
        out.append(digits, end);
    }
    template <typename T>
    static void optional(std::string& out, const char* key, std::optional<T> v) {
        if (!v) {
            out += key;
            out += "null";
        } else if constexpr (std::is_floating_point_v<T>) {
            decimalNumber(out, key, *v);
        } else {
            number(out, key, uint64_t{*v});
        }
    }
    // An enum's readable companion (bytes, Gb/s), or nothing (also for a value the enum does
    // not define).
    template <typename Readable>
    static std::optional<double> readable(std::optional<uint8_t> v, Readable convert) {
        if (!v || convert(*v) == 0) return std::nullopt;
        return static_cast<double>(convert(*v));
    }

    const Policy& policy_;
    std::vector<std::string> levels_;
    std::vector<std::string> pkeys_;
};

}  // namespace ibqos::cli

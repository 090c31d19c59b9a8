// SPDX-License-Identifier: MIT
// What the SA answers for a path: the QoS level a request matched (and the rule that decided it),
// then what osm_sa_path_record.c makes of that level: the SL check, the PKey, the limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/policy.hpp"
#include "fabric/fabric.hpp"
#include "sa-matcher/path_request.hpp"

namespace ibqos {

constexpr uint32_t NoRule = UINT32_MAX;

// The level a request gets: from the first rule that matches it, or the default level.
struct QosMatch {
    uint32_t level = 0;      // index into Policy::levels
    uint32_t rule = NoRule;  // index into Policy::rules; NoRule for the default level

    bool operator==(const QosMatch&) const = default;
};

// Why the SA answers nothing, in the order osm_sa_path_record.c finds out.
enum class Rejection : uint8_t {
    None,
    NoSharedPartition,  // the ends share no PKey: the pair is disqualified before any path
    PkeyNotShared,      // the requested PKey is not shared by both ends (ERR 1F1A)
    PkeyNotInLevel,     // the requested PKey is not among the level's pkeys (ERR 1F1D)
    NoLevelPkeyShared,  // no PKey of the level is shared by both ends (ERR 1F1E)
    NoCommonPkey,       // no PKey is shared by both ends (ERR 1F1B)
    SlMismatch,         // the requested SL is not the level's SL (ERR 1F1F)
    InvalidSl,          // the level's sl is no usable SL (above 15: OpenSM answers no path)
};

// A sentence for people, naming OpenSM's log message id.
std::string_view rejectionText(Rejection rejection);

// The SA's answer as far as it can be judged offline (there are no routes: the MTU and rate
// are the level's limits, and an SL that a hop's SL2VL drops is not seen).
struct PathAnswer {
    Rejection rejection = Rejection::None;
    QosMatch match;
    uint8_t sl = 0;
    std::optional<uint8_t> mtuLimit;    // IB MTU enum; nullopt: the path's own MTU
    std::optional<uint8_t> rateLimit;   // IB rate enum; nullopt: the path's own rate
    std::optional<uint8_t> packetLife;  // nullopt: OpenSM's subnet_timeout (18 by default)
    uint16_t pkey = 0;                  // the PKey answered, as OpenSM writes it (0 if rejected)

    bool ok() const { return rejection == Rejection::None; }
};

// Every endpoint's PKey table as the SA sees it (one entry per partition, with the membership
// bit, after OpenSM's last-statement-wins membership), kept in the order of OpenSM's key map.
class PkeyTables {
  public:
    explicit PkeyTables(const Fabric& fabric);

    // osm_physp_share_this_pkey: both hold the PKey's base and at least one is a full member.
    bool share(uint32_t a, uint32_t b, uint16_t pkey) const;
    // osm_physp_find_common_pkey: the first shared entry of a's table in map order, or 0.
    uint16_t common(uint32_t a, uint32_t b) const;
    // osm_physp_share_pkey: the same port, a port without PKeys, or a common PKey.
    bool sharePartition(uint32_t a, uint32_t b) const;
    const std::vector<uint16_t>& table(uint32_t endpoint) const {
        return tables_[tableOf_[endpoint]];
    }
    // Ports with equal tables share a number, counted from 0 (the empty table's).
    uint32_t tableId(uint32_t endpoint) const { return tableOf_[endpoint]; }
    size_t tableCount() const { return tables_.size(); }

  private:
    // Each distinct table once: a fabric's ports have few, and an answer looks at two ports'
    // tables, which then stay in the cache.
    std::vector<uint32_t> tableOf_;              // per Fabric::ports index
    std::vector<std::vector<uint16_t>> tables_;  // by tableId
    const uint16_t* find(uint32_t endpoint, uint16_t base) const;
};

// The level's part of an answer: its SL (as OpenSM answers it), limits and packet life (for a
// path between two different ports), before anything of the ends is looked at.
PathAnswer levelAnswer(const Policy& policy, QosMatch match);

// The SA's post-processing of a matched level for a request (osm_sa_path_record.c).
PathAnswer answerPath(const Policy& policy, const PkeyTables& pkeys, const PathQuery& query,
                      QosMatch match);

}  // namespace ibqos

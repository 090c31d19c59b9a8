// SPDX-License-Identifier: MIT
// The SA's post-processing of a QoS level, read from pr_rcv_get_path_parms() in OpenSM 3.3.23's
// osm_sa_path_record.c (the MultiPathRecord code does the same), and the PKey tables it uses.
#include "sa-matcher/qos_answer.hpp"

#include <algorithm>
#include <map>

#include "ib/qos.hpp"

namespace ibqos {

namespace {

// OpenSM keeps a port's PKeys in a cl_map keyed by the PKey base in network byte order, read
// as a host integer: on the little-endian hosts OpenSM runs on, the map is ordered by the
// byte-swapped base. osm_physp_find_common_pkey() walks that order, so it decides which
// common PKey a path without a requested PKey gets (0x0100 comes before 0x0001).
constexpr uint16_t mapKey(uint16_t pkey) {
    uint16_t b = ib::pkeyBase(pkey);
    return static_cast<uint16_t>(b << 8 | b >> 8);
}

bool byMapKey(uint16_t a, uint16_t b) { return mapKey(a) < mapKey(b); }

}  // namespace

std::string_view rejectionText(Rejection rejection) {
    switch (rejection) {
        case Rejection::None:
            return "";
        case Rejection::NoSharedPartition:
            return "the two ports share no partition, so OpenSM answers no path between them";
        case Rejection::PkeyNotShared:
            return "the two ports do not share the requested PKey (OpenSM ERR 1F1A)";
        case Rejection::PkeyNotInLevel:
            return "the requested PKey is not among the level's pkeys (OpenSM ERR 1F1D)";
        case Rejection::NoLevelPkeyShared:
            return "the two ports share none of the level's pkeys (OpenSM ERR 1F1E)";
        case Rejection::NoCommonPkey:
            return "the two ports share no PKey (OpenSM ERR 1F1B)";
        case Rejection::SlMismatch:
            return "the requested SL is not the level's SL (OpenSM ERR 1F1F)";
        case Rejection::InvalidSl:
            return "the level's sl is above 15, and OpenSM answers no path for it";
    }
    return "";
}

PkeyTables::PkeyTables(const Fabric& fabric) : tableOf_(fabric.ports.size(), 0) {
    // A partition holds a port once (readPartitions keeps the last membership written), so
    // each table has one entry per partition. Base 0 is never a valid PKey.
    std::vector<std::vector<uint16_t>> ofPort(fabric.ports.size());
    for (const Partition& p : fabric.partitions) {
        if (ib::pkeyBase(p.pkey) == 0) continue;
        for (const PartitionMember& m : p.members) {
            ofPort[m.port].push_back(ib::pkeyOf(p.pkey, m.full));
        }
    }
    std::map<std::vector<uint16_t>, uint32_t> ids{{{}, 0}};
    tables_.emplace_back();
    for (size_t port = 0; port < ofPort.size(); ++port) {
        auto& t = ofPort[port];
        std::stable_sort(t.begin(), t.end(), byMapKey);
        // Two partitions with one PKey are one map entry, and the full membership takes
        // precedence, as in osm_pkey_tbl_set().
        std::vector<uint16_t> merged;
        for (uint16_t p : t) {
            if (!merged.empty() && ib::pkeyBase(merged.back()) == ib::pkeyBase(p)) {
                merged.back() |= p & ib::PkeyFullMember;
            } else {
                merged.push_back(p);
            }
        }
        auto [it, added] = ids.emplace(merged, static_cast<uint32_t>(tables_.size()));
        if (added) tables_.push_back(std::move(merged));
        tableOf_[port] = it->second;
    }
}

const uint16_t* PkeyTables::find(uint32_t endpoint, uint16_t pkey) const {
    const auto& t = table(endpoint);
    auto it = std::lower_bound(t.begin(), t.end(), pkey, byMapKey);
    return it != t.end() && ib::pkeyBase(*it) == ib::pkeyBase(pkey) ? &*it : nullptr;
}

bool PkeyTables::share(uint32_t a, uint32_t b, uint16_t pkey) const {
    const uint16_t* x = find(a, pkey);
    const uint16_t* y = find(b, pkey);
    return x && y && ((*x | *y) & ib::PkeyFullMember);
}

uint16_t PkeyTables::common(uint32_t a, uint32_t b) const {
    // Both tables in map order, the lower key advanced, as osm_physp_find_common_pkey() does.
    const auto& x = table(a);
    const auto& y = table(b);
    size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) {
        if (ib::pkeyBase(x[i]) == ib::pkeyBase(y[j]) && ((x[i] | y[j]) & ib::PkeyFullMember))
            return x[i];
        if (mapKey(x[i]) == mapKey(y[j])) {
            ++i;
            ++j;
        } else if (mapKey(y[j]) < mapKey(x[i])) {
            ++j;
        } else {
            ++i;
        }
    }
    return 0;
}

bool PkeyTables::sharePartition(uint32_t a, uint32_t b) const {
    if (a == b || tableOf_[a] == 0 || tableOf_[b] == 0) return true;
    return common(a, b) != 0;
}

PathAnswer levelAnswer(const Policy& policy, QosMatch match) {
    const QosLevel& level = policy.levels[match.level];
    PathAnswer a;
    a.match = match;
    a.sl = answeredSl(level.sl).value_or(level.sl);
    a.mtuLimit = level.mtuLimit;
    a.rateLimit = level.rateLimit;
    // The PathRecord field has six bits.
    a.packetLife = level.packetLife ? std::optional<uint8_t>(*level.packetLife & 63) : std::nullopt;
    return a;
}

PathAnswer answerPath(const Policy& policy, const PkeyTables& pkeys, const PathQuery& query,
                      QosMatch match) {
    const QosLevel& level = policy.levels[match.level];
    PathAnswer a = levelAnswer(policy, match);
    // IBA: a loopback path has packet lifetime 0, whatever the level says.
    if (query.source == query.destination) a.packetLife = 0;

    auto reject = [&a](Rejection r) {
        a.rejection = r;
        a.pkey = 0;
        return a;
    };
    // pr_rcv_get_path_parms() tests the level's SL before anything else.
    if (!answeredSl(level.sl)) return reject(Rejection::InvalidSl);
    uint32_t src = query.source, dst = query.destination;
    // pr_rcv_get_port_pair_paths(): a pair sharing no PKey has no path at all. (It also checks
    // the requester's port against both ends; offline the requester is not known.)
    if (!pkeys.sharePartition(src, dst)) return reject(Rejection::NoSharedPartition);

    if (query.pkey) {
        if (!pkeys.share(src, dst, *query.pkey)) return reject(Rejection::PkeyNotShared);
        if (!level.pkeys.empty() && !level.pkeys.contains(ib::pkeyBase(*query.pkey))) {
            return reject(Rejection::PkeyNotInLevel);
        }
        a.pkey = *query.pkey;
    } else if (!level.pkeys.empty()) {
        // osm_qos_level_get_shared_pkey(): the level's PKeys in ascending order, the first both
        // ends share, answered without the membership bit. Only PKeys in the source's table
        // can be shared, so those are the candidates.
        uint16_t best = 0;
        for (uint16_t p : pkeys.table(src)) {
            uint16_t b = ib::pkeyBase(p);
            if ((best == 0 || b < best) && level.pkeys.contains(b) && pkeys.share(src, dst, b))
                best = b;
        }
        if (best == 0) return reject(Rejection::NoLevelPkeyShared);
        a.pkey = best;
    } else {
        a.pkey = pkeys.common(src, dst);
        if (a.pkey == 0) return reject(Rejection::NoCommonPkey);
    }

    if (query.sl && *query.sl != level.sl) return reject(Rejection::SlMismatch);
    return a;
}

}  // namespace ibqos

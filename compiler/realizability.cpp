// SPDX-License-Identifier: MIT
// checkRealizability: what the tables make of the levels' SLs, port by port.
#include "compiler/realizability.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

namespace ibqos {

namespace {

class Realizability {
  public:
    Realizability(const BoundPolicy& bound, const FabricTables& tables, Diagnostics& diagnostics)
        : bound_(bound),
          policy_(*bound.policy),
          fabric_(*bound.fabric),
          tables_(tables),
          diagnostics_(diagnostics) {}

    void run() {
        levelSls();
        highLimits();
        weightMultiples();
        ipoibSls();
        unusedScopes();
    }

  private:
    const BoundPolicy& bound_;
    const Policy& policy_;
    const Fabric& fabric_;
    const FabricTables& tables_;
    Diagnostics& diagnostics_;

    // Ports that can send the level's traffic: its rules' source groups (every CA when a rule
    // has no source or the level is the default).
    bool mayBeSource(const std::vector<uint32_t>& levelRules, bool isDefault,
                     uint32_t endpoint) const {
        if (isDefault) return true;
        for (uint32_t r : levelRules) {
            const MatchRule& rule = policy_.rules[r];
            if (rule.sources.empty()) return true;
            for (uint32_t g : rule.sources) {
                if (bound_.groups[g].contains(fabric_, endpoint)) return true;
            }
        }
        return false;
    }

    std::bitset<16> weightedVls(const PortTables& t) const {
        std::bitset<16> vls;
        const VlArbTable& high = tables_.vlarbs[t.vlArbHigh];
        const VlArbTable& low = tables_.vlarbs[t.vlArbLow];
        for (unsigned i = 0; i < t.vlArbHighCap && i < 64; ++i) {
            if (high[i].weight) vls.set(high[i].vl);
        }
        for (unsigned i = 0; i < t.vlArbLowCap && i < 64; ++i) {
            if (low[i].weight) vls.set(low[i].vl);
        }
        return vls;
    }

    // Per SL, the ports where it is dropped (VL 15) or starved (no weight), found once for all
    // levels: a switch port counts when any linked in-port maps the SL so.
    struct SlProblems {
        // Indices into tables_.ports.
        std::array<std::vector<uint32_t>, ib::SlCount> dropped, starved;
    };

    SlProblems findSlProblems() const {
        SlProblems found;
        std::map<std::tuple<uint32_t, uint32_t, uint8_t, uint8_t>, std::bitset<16>> weightedCache;
        for (uint32_t i = 0; i < tables_.ports.size(); ++i) {
            const PortTables& t = tables_.ports[i];
            const FabricNode& node = fabric_.nodeOf(t.port);
            bool onSwitch = node.type == NodeType::Switch;
            if (onSwitch && fabric_.ports[t.port].number == 0)
                continue;  // the switch's own traffic
            std::bitset<16> weighted;
            if (t.hasVlArb) {
                auto key = std::make_tuple(t.vlArbHigh, t.vlArbLow, t.vlArbHighCap, t.vlArbLowCap);
                auto it = weightedCache.find(key);
                if (it == weightedCache.end())
                    it = weightedCache.emplace(key, weightedVls(t)).first;
                weighted = it->second;
            } else {
                weighted.set();
            }
            uint16_t dropped = 0, starved = 0;
            unsigned ins = onSwitch ? node.portCount + 1u : 1u;
            for (unsigned in = onSwitch ? 1 : 0; in < ins; ++in) {
                if (onSwitch && fabric_.ports[node.firstPort + in].peer == NoPort) continue;
                const Sl2VlTable& table = tables_.sl2vls[t.sl2vlFor(in)];
                for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
                    if (table[sl] == ib::DropVl)
                        dropped |= 1u << sl;
                    else if (!weighted.test(table[sl]))
                        starved |= 1u << sl;
                }
            }
            for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
                if (dropped & (1u << sl))
                    found.dropped[sl].push_back(i);
                else if (starved & (1u << sl))
                    found.starved[sl].push_back(i);
            }
        }
        return found;
    }

    // Where a port's problem with an SL shows, for the message.
    std::string example(const PortTables& t, unsigned sl, bool dropped) const {
        const FabricNode& node = fabric_.nodeOf(t.port);
        if (node.type != NodeType::Switch) {
            return fabric_.portName(t.port) +
                   (dropped ? "" : " VL " + std::to_string(tables_.sl2vls[t.sl2vl][sl]));
        }
        for (unsigned in = 1; in <= node.portCount; ++in) {
            if (fabric_.ports[node.firstPort + in].peer == NoPort) continue;
            uint8_t vl = tables_.sl2vls[t.sl2vlFor(in)][sl];
            if ((vl == ib::DropVl) == dropped) {
                return fabric_.portName(t.port) + " (from port " + std::to_string(in) + ")" +
                       (dropped ? "" : " VL " + std::to_string(vl));
            }
        }
        return fabric_.portName(t.port);
    }

    // Each SL a level hands out that the tables drop (VL 15) or starve (no weight) on ports its
    // traffic can cross: each(name of the level, where to report, sl, dropped, the ports as
    // indices into tables_.ports).
    template <typename Each>
    void forEachSlProblem(Each each) const {
        std::map<uint32_t, std::vector<uint32_t>> rulesOfLevel;
        for (uint32_t r = 0; r < policy_.rules.size(); ++r)
            rulesOfLevel[policy_.rules[r].level].push_back(r);
        if (policy_.hasDefaultLevel) rulesOfLevel[policy_.defaultLevel];
        SlProblems problems = findSlProblems();

        for (const auto& entry : rulesOfLevel) {
            uint32_t level = entry.first;
            const std::vector<uint32_t>& rules =
                entry.second;  // a lambda below uses it (no binding capture in clang 14)
            const QosLevel& l = policy_.levels[level];
            std::optional<uint8_t> sl = answeredSl(l.sl);
            if (!sl) continue;  // no path at all (an error already)
            bool isDefault = policy_.hasDefaultLevel && level == policy_.defaultLevel;
            std::string name = l.generated ? "the qos-ulps SL " + std::to_string(l.sl)
                                           : "qos-level '" + l.name + "'";
            SourceLocation at = l.location.line ? l.location
                                : rules.empty() ? SourceLocation{1, 1}
                                                : policy_.rules[rules[0]].location;
            auto pass = [&](const std::vector<uint32_t>& ports, bool dropped) {
                std::vector<uint32_t> crossed;
                for (uint32_t i : ports) {
                    // A host port matters only when it can send this level's traffic.
                    const uint32_t port = tables_.ports[i].port;
                    if (fabric_.nodeOf(port).type != NodeType::Switch &&
                        !mayBeSource(rules, isDefault, port))
                        continue;
                    crossed.push_back(i);
                }
                if (!crossed.empty()) each(name, at, *sl, dropped, crossed);
            };
            pass(problems.dropped[*sl], true);
            pass(problems.starved[*sl], false);
        }
    }

    static std::string portsText(size_t count, const std::string& first) {
        return std::to_string(count) + " port" + (count == 1 ? "" : "s") + ", e.g. " + first;
    }

    void levelSls() {
        forEachSlProblem([&](const std::string& name, SourceLocation at, uint8_t sl, bool dropped,
                             const std::vector<uint32_t>& ports) {
            const std::string where =
                portsText(ports.size(), example(tables_.ports[ports[0]], sl, dropped));
            if (dropped) {
                diagnostics_.stricterError("sl-dropped", policy_.file, at,
                                           "SL " + std::to_string(sl) + " of " + name +
                                               " maps to VL 15 (dropped) on " + where +
                                               ": requests matched to it get no path there");
            } else {
                diagnostics_.stricterError("sl-starved", policy_.file, at,
                                           "SL " + std::to_string(sl) + " of " + name +
                                               " maps to a VL with no arbitration weight on " +
                                               where + ": its packets are never sent");
            }
        });
    }

  public:
    // The qos-setup scopes that wrote a table of a port where a level's SL is dropped or
    // starved: the first harm found for each scope.
    std::vector<ScopeHarm> harmfulScopes() const {
        std::map<std::pair<bool, uint32_t>, ScopeHarm> found;
        forEachSlProblem([&](const std::string& name, SourceLocation, uint8_t sl, bool dropped,
                             const std::vector<uint32_t>& ports) {
            // A VL without weight is first the vlarb-scopes' doing; the sl2vl-scopes are
            // blamed where none wrote the port's tables (VL 15 is an SL2VL table's alone). When
            // leaving those out does not help, the next round finds the sl2vl-scopes.
            std::map<std::pair<bool, uint32_t>, std::vector<uint32_t>> byScope;
            for (uint32_t i : ports) {
                const PortTables& t = tables_.ports[i];
                bool vlarbScope = false;
                for (uint16_t o : {t.highOrigin, t.lowOrigin}) {
                    const TableOrigin& origin = tables_.origins[o];
                    if (dropped || origin.scope < 0 ||
                        (origin.kind != TableOrigin::Kind::Scope &&
                         origin.kind != TableOrigin::Kind::Bandwidth))
                        continue;
                    std::vector<uint32_t>& mine = byScope[{true, origin.scope}];
                    if (mine.empty() || mine.back() != i) mine.push_back(i);
                    vlarbScope = true;
                }
                if (vlarbScope) continue;
                for (uint16_t s : t.sl2vlScopes) byScope[{false, s}].push_back(i);
            }
            for (auto& [key, mine] : byScope) {
                if (found.count(key)) continue;
                ScopeHarm h;
                h.vlarb = key.first;
                h.scope = key.second;
                h.dropped = dropped;
                h.message = "SL " + std::to_string(sl) + " of " + name +
                            (dropped ? " maps to VL 15 (dropped) on "
                                     : " maps to a VL with no arbitration weight on ") +
                            portsText(mine.size(), example(tables_.ports[mine[0]], sl, dropped));
                found.emplace(key, std::move(h));
            }
        });
        std::vector<ScopeHarm> out;
        for (auto& entry : found) out.push_back(std::move(entry.second));
        return out;
    }

  private:
    void highLimits() {
        std::map<uint16_t, size_t> byOrigin;
        for (const PortTables& t : tables_.ports) {
            if (!t.hasVlArb || t.highLimit != 255) continue;
            const VlArbTable& high = tables_.vlarbs[t.vlArbHigh];
            bool weighted = false;
            for (unsigned i = 0; i < t.vlArbHighCap && i < 64; ++i) weighted |= high[i].weight > 0;
            if (weighted) ++byOrigin[t.limitOrigin];
        }
        for (const auto& [origin, count] : byOrigin) {
            const TableOrigin& o = tables_.origins[origin];
            diagnostics_.warning("high-limit-unbounded", o.file.empty() ? policy_.file : o.file,
                                 o.location,
                                 "a VL high limit of 255 is unbounded: with weighted high-priority "
                                 "VLs, low-priority VLs "
                                 "starve whenever high-priority traffic is continuous (" +
                                     std::to_string(count) + " port" + (count == 1 ? ")" : "s)"));
        }
    }

    void weightMultiples() {
        std::map<uint16_t, std::pair<size_t, std::string>> byOrigin;
        for (const PortTables& t : tables_.ports) {
            if (!t.hasVlArb) continue;
            unsigned mtu = mtuBytes(fabric_.ports[t.port].mtu);
            unsigned credits = (mtu ? mtu : 4096) / 64;
            auto check = [&](uint32_t table, unsigned cap, uint16_t origin) {
                TableOrigin::Kind kind = tables_.origins[origin].kind;
                if (kind == TableOrigin::Kind::BuiltIn || kind == TableOrigin::Kind::Bandwidth)
                    return;
                const VlArbTable& entries = tables_.vlarbs[table];
                for (unsigned i = 0; i < cap && i < 64; ++i) {
                    if (entries[i].weight && entries[i].weight % credits) {
                        auto& slot = byOrigin[origin];
                        if (slot.first++ == 0) {
                            slot.second = "VL " + std::to_string(entries[i].vl) + " weight " +
                                          std::to_string(entries[i].weight) +
                                          " is not a multiple of " + std::to_string(credits) +
                                          " credits (one " + std::to_string(credits * 64) +
                                          "-byte packet)";
                        }
                        return;
                    }
                }
            };
            check(t.vlArbHigh, t.vlArbHighCap, t.highOrigin);
            check(t.vlArbLow, t.vlArbLowCap, t.lowOrigin);
        }
        for (const auto& [origin, value] : byOrigin) {
            const TableOrigin& o = tables_.origins[origin];
            diagnostics_.warning("weight-not-mtu-multiple", o.file, o.location,
                                 value.second +
                                     ": a started packet always completes, so such weights give "
                                     "shares other than their ratio (" +
                                     std::to_string(value.first) + " port" +
                                     (value.first == 1 ? ")" : "s)"));
        }
    }

    // The SL the policy gives a partition's IPoIB PathRecords: the first rule that names the
    // PKey (or nothing that IPoIB requests lack) and takes in every member, else the default.
    void ipoibSls() {
        for (const Partition& p : fabric_.partitions) {
            if (!p.ipoib) continue;
            const QosLevel* level =
                policy_.hasDefaultLevel ? &policy_.levels[policy_.defaultLevel] : nullptr;
            SourceLocation at = level ? level->location : SourceLocation{1, 1};
            for (const MatchRule& rule : policy_.rules) {
                if (!rule.serviceIds.empty() || !rule.qosClasses.empty()) continue;
                if (!rule.pkeys.empty() && !rule.pkeys.contains(p.pkey)) continue;
                bool allMembers = true;
                for (const PartitionMember& m : p.members) {
                    auto inAny = [&](const std::vector<uint32_t>& groups) {
                        if (groups.empty()) return true;
                        for (uint32_t g : groups) {
                            if (bound_.groups[g].contains(fabric_, m.port)) return true;
                        }
                        return false;
                    };
                    allMembers &= inAny(rule.sources) && inAny(rule.destinations);
                }
                if (!allMembers) continue;
                level = &policy_.levels[rule.level];
                at = rule.location;
                break;
            }
            if (!level || answeredSl(level->sl) == p.sl) continue;
            char pkey[8];
            std::snprintf(pkey, sizeof pkey, "0x%04x", p.pkey);
            diagnostics_.warning(
                "ipoib-sl", policy_.file, at.line ? at : SourceLocation{1, 1},
                "IPoIB partition '" + p.name + "' (" + pkey + ") has broadcast-group SL " +
                    std::to_string(p.sl) +
                    (p.file.empty() ? ""
                                    : " (" + p.file + ":" + std::to_string(p.location.line) + ")") +
                    ", but the policy gives its PathRecords SL " + std::to_string(level->sl) +
                    ": IPoIB multicast and unicast would use different SLs");
        }
    }

    void unusedScopes() {
        for (size_t s = 0; s < policy_.vlarbScopes.size(); ++s) {
            if (tables_.vlarbScopeUse[s] == 0 && !tables_.withheld.has(true, s)) {
                diagnostics_.warning(
                    "scope-unused", policy_.file, policy_.vlarbScopes[s].location,
                    "no port keeps what this vlarb-scope sets: it selects no port, or later scopes "
                    "overwrite all of it");
            }
        }
        for (size_t s = 0; s < policy_.sl2vlScopes.size(); ++s) {
            if (tables_.sl2vlScopeUse[s] == 0 && !tables_.withheld.has(false, s)) {
                diagnostics_.warning("scope-unused", policy_.file, policy_.sl2vlScopes[s].location,
                                     "no port keeps this sl2vl-scope's table: it selects no (in, "
                                     "out) pair, or later "
                                     "scopes overwrite all of it");
            }
        }
    }
};

}  // namespace

void checkRealizability(const BoundPolicy& bound, const FabricTables& tables,
                        Diagnostics& diagnostics) {
    Realizability(bound, tables, diagnostics).run();
}

std::vector<ScopeHarm> findHarmfulScopes(const BoundPolicy& bound, const FabricTables& tables) {
    Diagnostics unused;
    return Realizability(bound, tables, unused).harmfulScopes();
}

}  // namespace ibqos

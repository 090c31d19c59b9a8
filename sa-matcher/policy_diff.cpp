// SPDX-License-Identifier: MIT
// The request space of two policies on one fabric, cell by cell, and the changed cells merged
// into products one dimension at a time (so every region is exactly a union of changed cells).
#include "sa-matcher/policy_diff.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "common/text.hpp"
#include "sa-matcher/classifier.hpp"

namespace ibqos {

namespace {

constexpr uint16_t FullMember = 0x8000;

// The elementary intervals of one field, and one more index, starts.size(), for a request
// without the field.
struct Cuts : ElementaryIntervals {
    using ElementaryIntervals::ElementaryIntervals;
    size_t absent() const { return starts.size(); }
    size_t count() const { return starts.size() + 1; }

    // The values of a set of interval indices (sorted), adjacent intervals joined.
    FieldValues values(const std::vector<uint32_t>& intervals) const {
        FieldValues out;
        if (!intervals.empty() && intervals.back() == absent()) {
            // A request without the field lies only where the field is `any`.
            out.any = true;
            return out;
        }
        for (uint32_t i : intervals) {
            if (!out.ranges.empty() && out.ranges.back().hi + 1 == starts[i]) {
                out.ranges.back().hi = last(i);
            } else {
                out.ranges.push_back({starts[i], last(i)});
            }
        }
        return out;
    }
};

// A request PKey matches by its base; both halves (limited and full member) are cut alike.
void addPkeyRange(Cuts& cuts, uint64_t lo, uint64_t hi) {
    cuts.add(lo, hi);
    cuts.add(lo | FullMember, hi | FullMember);
}

void addRuleCuts(const Policy& policy, Cuts& serviceIds, Cuts& qosClasses, Cuts& pkeys) {
    for (const MatchRule& rule : policy.rules) {
        for (const Range& r : rule.serviceIds.ranges()) serviceIds.add(r.lo, r.hi);
        for (const Range& r : rule.qosClasses.ranges()) qosClasses.add(r.lo, r.hi);
        for (const Range& r : rule.pkeys.ranges()) addPkeyRange(pkeys, r.lo, r.hi);
    }
    for (const QosLevel& level : policy.levels) {
        for (const Range& r : level.pkeys.ranges()) addPkeyRange(pkeys, r.lo, r.hi);
    }
}

// Endpoints with the same groups in both policies and the same PKey table get the same answers.
struct Classes {
    std::vector<std::vector<uint32_t>> members;  // endpoints of each class, in port order
};

Classes membershipClasses(const BoundPolicy& before, const BoundPolicy& after,
                          const PkeyTables& pkeys) {
    const Fabric& fabric = *before.fabric;
    std::vector<std::vector<uint32_t>> signature(fabric.ports.size());
    uint32_t tag = 0;
    for (const BoundPolicy* bound : {&before, &after}) {
        for (const GroupMembers& group : bound->groups) {
            for (uint32_t p : group.all(fabric)) signature[p].push_back(tag);
            ++tag;
        }
    }
    std::map<std::vector<uint32_t>, uint32_t> index;
    Classes classes;
    for (uint32_t p : fabric.endpoints()) {
        std::vector<uint32_t> key = std::move(signature[p]);
        key.push_back(UINT32_MAX);  // the PKey table follows
        for (uint16_t k : pkeys.table(p)) key.push_back(k);
        auto [it, fresh] = index.emplace(std::move(key), static_cast<uint32_t>(index.size()));
        if (fresh) classes.members.emplace_back();
        classes.members[it->second].push_back(p);
    }
    return classes;
}

// One side's answer with a loopback path's packet life put back to the level's, so that a
// region's loopback and other paths compare alike.
PathAnswer asNonLoopback(const Policy& policy, PathAnswer a) {
    const QosLevel& level = policy.levels[a.match.level];
    a.packetLife = level.packetLife ? std::optional<uint8_t>(*level.packetLife & 63) : std::nullopt;
    return a;
}

// What a merged region keeps apart: the two answers, without the deciding rule.
using AnswerKey = std::tuple<bool, uint32_t, uint8_t, std::optional<uint8_t>,
                             std::optional<uint8_t>, std::optional<uint8_t>, uint16_t, Rejection>;
AnswerKey keyOf(const PathAnswer& a) {
    return {a.ok(),      a.match.level, a.sl,   a.mtuLimit,
            a.rateLimit, a.packetLife,  a.pkey, a.rejection};
}

// A set of values along one dimension, with the rules that decide any cell of it.
struct Merged {
    std::vector<uint32_t> values;
    std::set<uint32_t> beforeRules, afterRules;

    void absorb(uint32_t value, const Merged& other) {
        values.push_back(value);
        beforeRules.insert(other.beforeRules.begin(), other.beforeRules.end());
        afterRules.insert(other.afterRules.begin(), other.afterRules.end());
    }
};

// Regions whose answers and all but one of sources and destinations are the same, as printed
// (a field "any" for several reasons is one value), joined into one.
std::vector<DiffRegion> joinRegions(std::vector<DiffRegion> regions) {
    using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
    auto form = [](const FieldValues& v) {
        Ranges out;
        for (const Range& r : v.ranges) out.emplace_back(r.lo, r.hi);
        return std::make_pair(v.any, out);
    };
    for (bool byDestination : {true, false}) {
        std::map<std::tuple<AnswerKey, AnswerKey, std::vector<uint32_t>, std::pair<bool, Ranges>,
                            std::pair<bool, Ranges>, std::pair<bool, Ranges>>,
                 size_t>
            index;
        std::vector<DiffRegion> joined;
        for (DiffRegion& r : regions) {
            auto& kept = byDestination ? r.sources : r.destinations;
            auto key = std::make_tuple(keyOf(r.before), keyOf(r.after), kept, form(r.serviceIds),
                                       form(r.qosClasses), form(r.pkeys));
            auto [it, fresh] = index.emplace(std::move(key), joined.size());
            if (fresh) {
                joined.push_back(std::move(r));
                continue;
            }
            DiffRegion& into = joined[it->second];
            auto& grown = byDestination ? into.destinations : into.sources;
            const auto& more = byDestination ? r.destinations : r.sources;
            grown.insert(grown.end(), more.begin(), more.end());
            std::sort(grown.begin(), grown.end());
            for (auto [rules, add] : {std::pair{&into.beforeRules, &r.beforeRules},
                                      std::pair{&into.afterRules, &r.afterRules}}) {
                rules->insert(rules->end(), add->begin(), add->end());
                std::sort(rules->begin(), rules->end());
                rules->erase(std::unique(rules->begin(), rules->end()), rules->end());
            }
            into.portPairs = static_cast<uint64_t>(into.sources.size()) * into.destinations.size();
        }
        regions = std::move(joined);
    }
    return regions;
}

}  // namespace

std::string describeAnswer(const Policy& policy, const PathAnswer& a) {
    if (!a.ok()) return "rejected: " + std::string(rejectionText(a.rejection));
    const QosLevel& level = policy.levels[a.match.level];
    std::string out =
        "level '" + level.name + "', SL " + std::to_string(a.sl) + ", PKey " + hex(a.pkey, 4);
    if (a.mtuLimit) out += ", mtu-limit " + std::to_string(*a.mtuLimit);
    if (a.rateLimit) out += ", rate-limit " + std::to_string(*a.rateLimit);
    if (a.packetLife) out += ", packet-life " + std::to_string(*a.packetLife);
    if (!level.pkeys.empty()) out += ", level pkeys " + level.pkeys.str(true);
    return out;
}

std::string describeValues(const FieldValues& values, bool hexValues) {
    if (values.any) return "any";
    return RangeSet::build(values.ranges).str(hexValues);
}

bool answersDiffer(const Policy& before, const PathAnswer& a, const Policy& after,
                   const PathAnswer& b) {
    if (!a.ok() && !b.ok()) return false;
    if (a.ok() != b.ok()) return true;
    return a.sl != b.sl || a.mtuLimit != b.mtuLimit || a.rateLimit != b.rateLimit ||
           a.packetLife != b.packetLife || a.pkey != b.pkey ||
           before.levels[a.match.level].pkeys != after.levels[b.match.level].pkeys;
}

std::optional<std::vector<DiffRegion>> diffRequests(const BoundPolicy& before,
                                                    const BoundPolicy& after, uint64_t maxCells) {
    const Fabric& fabric = *before.fabric;
    if (after.fabric->ports.size() != fabric.ports.size())
        throw std::logic_error("diffRequests: the policies are bound to different fabrics");
    const Policy& oldPolicy = *before.policy;
    const Policy& newPolicy = *after.policy;
    const PkeyTables pkeyTables(fabric);
    const Classifier oldClassifier(before), newClassifier(after);

    Cuts serviceIds(UINT64_MAX), qosClasses(4095), pkeys(0xffff);
    addRuleCuts(oldPolicy, serviceIds, qosClasses, pkeys);
    addRuleCuts(newPolicy, serviceIds, qosClasses, pkeys);
    for (const Partition& p : fabric.partitions)
        addPkeyRange(pkeys, p.pkey & 0x7fff, p.pkey & 0x7fff);
    serviceIds.finish();
    qosClasses.finish();
    pkeys.finish();
    const Classes classes = membershipClasses(before, after, pkeyTables);
    const double cells = static_cast<double>(classes.members.size()) * classes.members.size() *
                         serviceIds.count() * qosClasses.count() * pkeys.count();
    if (cells > static_cast<double>(maxCells)) return std::nullopt;

    // The changed cells, by the pair of answers they change between: (source class,
    // destination class, ServiceID, QoS class) -> the PKey intervals.
    using CellKey = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;
    std::map<std::pair<AnswerKey, AnswerKey>, std::map<CellKey, Merged>> changed;
    std::map<std::pair<AnswerKey, AnswerKey>, std::pair<PathAnswer, PathAnswer>> answers;

    auto field = [](const Cuts& cuts, size_t i) -> std::optional<uint64_t> {
        if (i == cuts.absent()) return std::nullopt;
        return cuts.starts[i];
    };
    const auto classCount = static_cast<uint32_t>(classes.members.size());
    for (uint32_t c = 0; c < classCount; ++c) {
        for (uint32_t d = 0; d < classCount; ++d) {
            const auto& sources = classes.members[c];
            const auto& destinations = classes.members[d];
            // A path between two different ports of the classes, and a loopback path when
            // they are one class.
            std::vector<std::pair<uint32_t, uint32_t>> paths;
            if (c != d) {
                paths.push_back({sources[0], destinations[0]});
            } else {
                if (sources.size() > 1) paths.push_back({sources[0], sources[1]});
                paths.push_back({sources[0], sources[0]});
            }
            for (uint32_t s = 0; s < serviceIds.count(); ++s) {
                for (uint32_t q = 0; q < qosClasses.count(); ++q) {
                    for (uint32_t k = 0; k < pkeys.count(); ++k) {
                        PathQuery query;
                        query.serviceId = field(serviceIds, s);
                        auto qosClass = field(qosClasses, q);
                        if (qosClass) query.qosClass = static_cast<uint16_t>(*qosClass);
                        auto pkey = field(pkeys, k);
                        if (pkey) query.pkey = static_cast<uint16_t>(*pkey);
                        for (auto [src, dst] : paths) {
                            query.source = src;
                            query.destination = dst;
                            PathAnswer a = answerPath(oldPolicy, pkeyTables, query,
                                                      oldClassifier.match(query));
                            PathAnswer b = answerPath(newPolicy, pkeyTables, query,
                                                      newClassifier.match(query));
                            if (!answersDiffer(oldPolicy, a, newPolicy, b)) continue;
                            a = asNonLoopback(oldPolicy, a);
                            b = asNonLoopback(newPolicy, b);
                            auto key = std::make_pair(keyOf(a), keyOf(b));
                            answers.emplace(key, std::make_pair(a, b));
                            Merged& cell = changed[key][{c, d, s, q}];
                            if (cell.values.empty() || cell.values.back() != k)
                                cell.values.push_back(k);
                            cell.beforeRules.insert(a.match.rule);
                            cell.afterRules.insert(b.match.rule);
                            break;  // the cell has changed: its other path adds nothing
                        }
                    }
                }
            }
        }
    }

    std::vector<DiffRegion> regions;
    for (auto& [key, cells] : changed) {
        // Join along QoS class, then ServiceID, then source class, then destination class,
        // each time only where every other dimension holds the same values.
        using V = std::vector<uint32_t>;
        std::map<std::tuple<uint32_t, uint32_t, uint32_t, V>, Merged> byQos;
        for (auto& [cell, m] : cells) {
            auto [c, d, s, q] = cell;
            byQos[{c, d, s, m.values}].absorb(q, m);
        }
        std::map<std::tuple<uint32_t, uint32_t, V, V>, Merged> byService;
        for (auto& [k, m] : byQos) {
            auto& [c, d, s, pk] = k;
            byService[{c, d, m.values, pk}].absorb(s, m);
        }
        std::map<std::tuple<uint32_t, V, V, V>, Merged> bySource;
        for (auto& [k, m] : byService) {
            auto& [c, d, qs, pk] = k;
            bySource[{d, m.values, qs, pk}].absorb(c, m);
        }
        std::map<std::tuple<V, V, V, V>, Merged> byDestination;
        for (auto& [k, m] : bySource) {
            auto& [d, ss, qs, pk] = k;
            byDestination[{m.values, ss, qs, pk}].absorb(d, m);
        }
        for (auto& [k, m] : byDestination) {
            auto& [cs, ss, qs, pk] = k;
            DiffRegion region;
            for (uint32_t c : cs) {
                const auto& ms = classes.members[c];
                region.sources.insert(region.sources.end(), ms.begin(), ms.end());
            }
            for (uint32_t d : m.values) {
                const auto& ms = classes.members[d];
                region.destinations.insert(region.destinations.end(), ms.begin(), ms.end());
            }
            std::sort(region.sources.begin(), region.sources.end());
            std::sort(region.destinations.begin(), region.destinations.end());
            region.portPairs =
                static_cast<uint64_t>(region.sources.size()) * region.destinations.size();
            region.serviceIds = serviceIds.values(ss);
            region.qosClasses = qosClasses.values(qs);
            region.pkeys = pkeys.values(pk);
            std::tie(region.before, region.after) = answers.at(key);
            region.beforeRules.assign(m.beforeRules.begin(), m.beforeRules.end());
            region.afterRules.assign(m.afterRules.begin(), m.afterRules.end());
            regions.push_back(std::move(region));
        }
    }
    return joinRegions(std::move(regions));
}

std::string witnessPartitions(const Policy& before, const Policy& after) {
    std::set<uint64_t> pkeys;
    auto add = [&pkeys](const RangeSet& set) {
        for (const Range& r : set.ranges()) {
            pkeys.insert(r.lo & 0x7fff);
            pkeys.insert(r.hi & 0x7fff);
        }
    };
    for (const Policy* policy : {&before, &after}) {
        for (const PortGroup& g : policy->groups) add(g.pkeys);
        for (const QosLevel& l : policy->levels) add(l.pkeys);
        for (const MatchRule& r : policy->rules) add(r.pkeys);
    }
    pkeys.erase(0);
    pkeys.erase(0x7fff);
    std::string out = "Default=0x7fff : ALL=full ;\n";
    size_t n = 0;
    for (uint64_t p : pkeys) {
        if (n++ == 256) break;
        out += "witness_" + hex(p, 4).substr(2) + "=" + hex(p, 4) + " : ALL=full ;\n";
    }
    return out;
}

std::string witnessTopology(const Policy& before, const Policy& after) {
    struct Witness {
        uint64_t portGuid;
        std::string description;
        uint32_t port;  // the CA port number the witness is
    };
    RangeSet named;  // every GUID a group names
    Cuts guids(UINT64_MAX);
    std::vector<std::pair<std::string, uint32_t>> names;
    for (const Policy* policy : {&before, &after}) {
        for (const PortGroup& g : policy->groups) {
            guids.add(g.guids);
            named.add(g.guids);
            for (const PortNameRef& n : g.portNames) {
                // ibnetdiscover quotes descriptions; one holding a quote has no witness.
                if (n.nodeDescription.find('"') == std::string::npos && n.port > 0 && n.port < 255)
                    names.emplace_back(n.nodeDescription, n.port);
            }
        }
    }
    guids.finish();
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());

    // GUIDs for everything that must be in no group: the first values no group names.
    uint64_t next = 0x0002c90000000000ULL;
    auto fresh = [&]() {
        for (int tries = 0; tries < 1 << 20 && named.contains(next); ++tries) ++next;
        return next++;
    };
    constexpr size_t MaxWitnesses = 20000;
    std::vector<Witness> witnesses;
    for (uint64_t start : guids.starts) {
        if (named.contains(start) && witnesses.size() < MaxWitnesses)
            witnesses.push_back({start, "witness " + hex(start, 16), 1});
    }
    witnesses.push_back({fresh(), "witness in no GUID range", 1});
    for (const auto& [description, port] : names) {
        if (witnesses.size() < MaxWitnesses) witnesses.push_back({fresh(), description, port});
    }

    // Leaves of up to 200 witnesses under one spine; LIDs in order.
    constexpr unsigned PerLeaf = 200;
    const unsigned leaves = static_cast<unsigned>((witnesses.size() + PerLeaf - 1) / PerLeaf);
    const uint64_t spine = fresh();
    std::vector<uint64_t> leafGuids, nodeGuids;
    for (unsigned l = 0; l < leaves; ++l) leafGuids.push_back(fresh());
    for (size_t i = 0; i < witnesses.size(); ++i) nodeGuids.push_back(fresh());
    auto leafLid = [](unsigned l) { return 2 + l; };
    auto caLid = [&](size_t i) { return 2 + leaves + i; };
    auto id = [](uint64_t guid) { return hex(guid, 16).substr(2); };
    auto header = [&](std::string& out, const char* kind, uint64_t guid) {
        out += "\nvendid=0x0\ndevid=0x0\nsysimgguid=" + hex(guid) + "\n" + kind + "=" + hex(guid);
    };

    std::string out = "# a witness fabric for ibqos diff\n";
    header(out, "switchguid", spine);
    out += "(" + hex(spine).substr(2) + ")\nSwitch\t" + std::to_string(std::max(leaves, 1u)) +
           " \"S-" + id(spine) + "\"\t\t# \"ibqos-witness-spine\" base port 0 lid 1 lmc 0\n";
    for (unsigned l = 0; l < leaves; ++l) {
        out += "[" + std::to_string(l + 1) + "]\t\"S-" + id(leafGuids[l]) + "\"[" +
               std::to_string(PerLeaf + 1) + "]\t\t# \"ibqos-witness-leaf-" + std::to_string(l) +
               "\" lid " + std::to_string(leafLid(l)) + " 4xSDR\n";
    }
    for (unsigned l = 0; l < leaves; ++l) {
        header(out, "switchguid", leafGuids[l]);
        out += "(" + hex(leafGuids[l]).substr(2) + ")\nSwitch\t" + std::to_string(PerLeaf + 1) +
               " \"S-" + id(leafGuids[l]) + "\"\t\t# \"ibqos-witness-leaf-" + std::to_string(l) +
               "\" base port 0 lid " + std::to_string(leafLid(l)) + " lmc 0\n";
        for (size_t i = l * PerLeaf; i < std::min(witnesses.size(), size_t{l + 1} * PerLeaf); ++i) {
            const Witness& w = witnesses[i];
            out += "[" + std::to_string(i - l * PerLeaf + 1) + "]\t\"H-" + id(nodeGuids[i]) +
                   "\"[" + std::to_string(w.port) + "](" + hex(w.portGuid).substr(2) +
                   ") \t\t# \"" + w.description + "\" lid " + std::to_string(caLid(i)) + " 4xSDR\n";
        }
        out += "[" + std::to_string(PerLeaf + 1) + "]\t\"S-" + id(spine) + "\"[" +
               std::to_string(l + 1) + "]\t\t# \"ibqos-witness-spine\" lid 1 4xSDR\n";
    }
    for (size_t i = 0; i < witnesses.size(); ++i) {
        const Witness& w = witnesses[i];
        const auto l = static_cast<unsigned>(i / PerLeaf);
        header(out, "caguid", nodeGuids[i]);
        out += "\nCa\t" + std::to_string(w.port) + " \"H-" + id(nodeGuids[i]) + "\"\t\t# \"" +
               w.description + "\"\n[" + std::to_string(w.port) + "](" + hex(w.portGuid).substr(2) +
               ") \t\"S-" + id(leafGuids[l]) + "\"[" + std::to_string(i % PerLeaf + 1) +
               "]\t\t# lid " + std::to_string(caLid(i)) + " lmc 0 \"ibqos-witness-leaf-" +
               std::to_string(l) + "\" lid " + std::to_string(leafLid(l)) + " 4xSDR\n";
    }
    return out;
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// computeTables: OpenSM's per-class templates, the qos-setup scopes in file order, OpenSM's
// folding of VLs beyond a port's OperVLs, and every distinct table stored once.
#include "compiler/tables.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "compiler/vlarb_sim.hpp"

namespace ibqos {

namespace {

constexpr const char* BuiltInVlArbHigh =
    "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
constexpr const char* BuiltInVlArbLow =
    "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
constexpr const char* BuiltInSl2Vl = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

// OpenSM's parse_one_unsigned: strtoul, then skip one delimiter character.
unsigned parseOne(const char*& p) {
    char* end = nullptr;
    unsigned long v = std::strtoul(p, &end, 0);
    if (*end) ++end;
    p = end;
    return static_cast<unsigned>(v);
}

}  // namespace

std::string TableOrigin::describe() const {
    switch (kind) {
        case Kind::BuiltIn:
            return "OpenSM's built-in default";
        case Kind::OpenSmConf:
            return file + ":" + std::to_string(location.line);
        case Kind::Scope:
        case Kind::Bandwidth:
            return "the scope at " + file + ":" + std::to_string(location.line);
    }
    return "";
}

VlArbTable parseVlArbOption(const std::string& text) {
    VlArbTable table{};
    const char* p = text.c_str();
    for (VlArbEntry& e : table) {
        e.vl = static_cast<uint8_t>(parseOne(p) % ib::DataVlCount);
        e.weight = static_cast<uint8_t>(parseOne(p));
    }
    return table;
}

Sl2VlTable parseSl2VlOption(const std::string& text) {
    Sl2VlTable table{};
    const char* p = text.c_str();
    for (uint8_t& vl : table) vl = ib::sl2VlEntry(parseOne(p));  // 4 bits, as OpenSM packs them
    return table;
}

void negotiateOperVls(Fabric& fabric, uint8_t maxOpVls) {
    for (FabricPort& port : fabric.ports) {
        uint8_t vls = std::min(port.vlCap, maxOpVls);
        if (port.peer != NoPort) vls = std::min(vls, fabric.ports[port.peer].vlCap);
        port.operVls = std::max<uint8_t>(vls, 1);
    }
}

namespace {

class TableBuilder {
  public:
    TableBuilder(const BoundPolicy& bound, const OpenSmConf& conf, Diagnostics& diagnostics,
                 const WithheldScopes& withheld)
        : bound_(bound),
          policy_(*bound.policy),
          fabric_(*bound.fabric),
          conf_(conf),
          diagnostics_(diagnostics) {
        out_.withheld = withheld;
    }

    FabricTables build() {
        out_.origins.push_back({});  // 0: built-in
        for (PortClass c : {PortClass::Ca, PortClass::Router, PortClass::SwitchPort0,
                            PortClass::SwitchExternal}) {
            templates_[static_cast<size_t>(c)] = buildTemplate(c);
        }
        collectPorts();
        out_.vlarbScopeUse.assign(policy_.vlarbScopes.size(), 0);
        out_.sl2vlScopeUse.assign(policy_.sl2vlScopes.size(), 0);
        for (size_t s = 0; s < policy_.vlarbScopes.size(); ++s) {
            if (!out_.withheld.has(true, s)) applyVlArbScope(s);
        }
        for (size_t s = 0; s < policy_.sl2vlScopes.size(); ++s) {
            if (!out_.withheld.has(false, s)) applySl2VlScope(s);
        }
        finish();
        return std::move(out_);
    }

  private:
    // A port's tables while they are being built (unfolded, with who wrote them).
    struct Draft {
        uint32_t port;
        PortClass portClass;
        uint8_t highLimit;
        uint32_t high, low;  // unfolded tables, indices into out_.vlarbs
        uint16_t highOrigin, lowOrigin, limitOrigin;
        int highScope = -1, lowScope = -1, limitScope = -1;
        std::vector<uint32_t> sl2vl;        // unfolded tables (indices into raw_) per in-port
        std::vector<uint16_t> sl2vlOrigin;  // per in-port
        std::vector<int> sl2vlScope;        // per in-port
    };

    const BoundPolicy& bound_;
    const Policy& policy_;
    const Fabric& fabric_;
    const OpenSmConf& conf_;
    Diagnostics& diagnostics_;
    FabricTables out_;
    std::array<TableTemplate, 4> templates_{};
    std::vector<Draft> drafts_;
    std::vector<uint32_t> draftOfPort_;  // Fabric port -> draft index, or NoPort
    TablePool<Sl2VlTable> raw_;          // unfolded SL2VL tables

    // One origin per place the administrator wrote something, however many classes use it.
    uint16_t origin(TableOrigin o) {
        for (size_t i = 0; i < out_.origins.size(); ++i) {
            const TableOrigin& x = out_.origins[i];
            if (x.kind == o.kind && x.file == o.file && x.location.line == o.location.line &&
                x.location.column == o.location.column && x.scope == o.scope) {
                return static_cast<uint16_t>(i);
            }
        }
        out_.origins.push_back(std::move(o));
        return static_cast<uint16_t>(out_.origins.size() - 1);
    }

    TableTemplate buildTemplate(PortClass c) {
        const QosOptionSet& own = conf_.forClass(c);
        const QosOptionSet& all = conf_.all;
        TableTemplate t;
        auto pick = [&](const std::optional<std::string>& a, SourceLocation aAt,
                        const std::optional<std::string>& b, SourceLocation bAt,
                        const char* builtIn, uint16_t& originOut) -> std::string {
            if (a) {
                originOut = origin({TableOrigin::Kind::OpenSmConf, conf_.file, aAt, -1});
                return *a;
            }
            if (b) {
                originOut = origin({TableOrigin::Kind::OpenSmConf, conf_.file, bAt, -1});
                return *b;
            }
            originOut = 0;
            return builtIn;
        };
        t.vlarbHigh = parseVlArbOption(pick(own.vlarbHigh, own.vlarbHighAt, all.vlarbHigh,
                                            all.vlarbHighAt, BuiltInVlArbHigh, t.highOrigin));
        t.vlarbLow = parseVlArbOption(pick(own.vlarbLow, own.vlarbLowAt, all.vlarbLow,
                                           all.vlarbLowAt, BuiltInVlArbLow, t.lowOrigin));
        t.sl2vl = parseSl2VlOption(
            pick(own.sl2vl, own.sl2vlAt, all.sl2vl, all.sl2vlAt, BuiltInSl2Vl, t.sl2vlOrigin));
        if (own.highLimit) {
            t.highLimit = static_cast<uint8_t>(*own.highLimit);
            t.limitOrigin =
                origin({TableOrigin::Kind::OpenSmConf, conf_.file, own.highLimitAt, -1});
        } else if (all.highLimit) {
            t.highLimit = static_cast<uint8_t>(*all.highLimit);
            t.limitOrigin =
                origin({TableOrigin::Kind::OpenSmConf, conf_.file, all.highLimitAt, -1});
        }
        return t;
    }

    void addDraft(uint32_t port, PortClass c, unsigned inPorts) {
        const TableTemplate& t = templates_[static_cast<size_t>(c)];
        Draft d{port,
                c,
                t.highLimit,
                out_.vlarbs.intern(t.vlarbHigh),
                out_.vlarbs.intern(t.vlarbLow),
                t.highOrigin,
                t.lowOrigin,
                t.limitOrigin,
                -1,
                -1,
                -1,
                {},
                {},
                {}};
        uint32_t table = raw_.intern(t.sl2vl);
        d.sl2vl.assign(inPorts, table);
        d.sl2vlOrigin.assign(inPorts, t.sl2vlOrigin);
        d.sl2vlScope.assign(inPorts, -1);
        if (c == PortClass::SwitchPort0) {
            // OpenSM programs (in, 0) for in != 0 with the external-port options, then (0, 0)
            // with the port-0 options.
            const TableTemplate& swe = templates_[static_cast<size_t>(PortClass::SwitchExternal)];
            uint32_t external = raw_.intern(swe.sl2vl);
            for (unsigned in = 1; in < inPorts; ++in) {
                d.sl2vl[in] = external;
                d.sl2vlOrigin[in] = swe.sl2vlOrigin;
            }
        }
        draftOfPort_[port] = static_cast<uint32_t>(drafts_.size());
        drafts_.push_back(std::move(d));
    }

    // The ports OpenSM programs: linked CA and router ports, linked switch external ports, and
    // switch port 0 when it is an enhanced port 0.
    void collectPorts() {
        draftOfPort_.assign(fabric_.ports.size(), NoPort);
        for (uint32_t n = 0; n < fabric_.nodes.size(); ++n) {
            const FabricNode& node = fabric_.nodes[n];
            if (node.type != NodeType::Switch) {
                for (unsigned p = 1; p <= node.portCount; ++p) {
                    uint32_t port = fabric_.portOf(n, p);
                    if (fabric_.ports[port].peer == NoPort) continue;
                    addDraft(port,
                             node.type == NodeType::Router ? PortClass::Router : PortClass::Ca, 1);
                }
                continue;
            }
            unsigned inPorts = node.portCount + 1u;
            if (node.enhancedPort0) addDraft(node.firstPort, PortClass::SwitchPort0, inPorts);
            for (unsigned p = 1; p <= node.portCount; ++p) {
                uint32_t port = fabric_.portOf(n, p);
                if (fabric_.ports[port].peer == NoPort) continue;
                addDraft(port, PortClass::SwitchExternal, inPorts);
            }
        }
    }

    bool inGroups(const std::vector<uint32_t>& groups, uint32_t endpoint) const {
        if (endpoint == NoPort) return false;
        for (uint32_t g : groups) {
            if (bound_.groups[g].contains(fabric_, endpoint)) return true;
        }
        return false;
    }

    // Whether the port at the other end of port's link belongs to one of the groups.
    bool peerIn(const std::vector<uint32_t>& groups, uint32_t port) const {
        uint32_t peer = fabric_.ports[port].peer;
        return peer != NoPort && inGroups(groups, fabric_.endpointFor(peer));
    }

    // The drafts of every port of the groups' members: a CA or router port itself, every
    // programmed port of a member switch.
    std::vector<uint32_t> memberDrafts(const std::vector<uint32_t>& groups) const {
        std::vector<uint32_t> out;
        std::set<uint32_t> switches;
        for (uint32_t g : groups) {
            for (uint32_t endpoint : bound_.groups[g].all(fabric_)) {
                const FabricNode& node = fabric_.nodeOf(endpoint);
                if (node.type != NodeType::Switch) {
                    if (draftOfPort_[endpoint] != NoPort) out.push_back(draftOfPort_[endpoint]);
                    continue;
                }
                if (!switches.insert(fabric_.ports[endpoint].node).second) continue;
                for (unsigned p = 0; p <= node.portCount; ++p) {
                    uint32_t port = node.firstPort + p;
                    if (draftOfPort_[port] != NoPort) out.push_back(draftOfPort_[port]);
                }
            }
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

    void applyVlArbScope(size_t s) {
        const VlArbScope& scope = policy_.vlarbScopes[s];
        std::vector<uint32_t> selected;
        if (!scope.groups.empty()) {
            selected = memberDrafts(scope.groups);
            if (!scope.across.empty()) {
                selected.erase(std::remove_if(selected.begin(), selected.end(),
                                              [&](uint32_t d) {
                                                  return !peerIn(scope.across, drafts_[d].port);
                                              }),
                               selected.end());
            }
        } else {
            for (uint32_t d = 0; d < drafts_.size(); ++d) {
                if (peerIn(scope.across, drafts_[d].port)) selected.push_back(d);
            }
        }
        auto originAt = [&](SourceLocation field) {
            return origin({TableOrigin::Kind::Scope, policy_.file,
                           field.line ? field : scope.location, static_cast<int>(s)});
        };
        const uint16_t highAt = originAt(scope.highLocation), lowAt = originAt(scope.lowLocation),
                       limitAt = originAt(scope.highLimitLocation);
        uint16_t bandwidthAt = scope.bandwidth
                                   ? origin({TableOrigin::Kind::Bandwidth, policy_.file,
                                             scope.bandwidthLocation, static_cast<int>(s)})
                                   : 0;
        auto toTable = [](const std::vector<VlArbEntry>& list) {
            VlArbTable t{};
            std::copy_n(list.begin(), std::min(list.size(), t.size()), t.begin());
            return t;
        };
        std::map<unsigned, uint32_t> bandwidthByCap;  // planned once per low-table size
        uint32_t high = scope.high ? out_.vlarbs.intern(toTable(*scope.high)) : 0;
        uint32_t low = scope.low ? out_.vlarbs.intern(toTable(*scope.low)) : 0;
        for (uint32_t d : selected) {
            Draft& draft = drafts_[d];
            if (scope.high) {
                draft.high = high;
                draft.highOrigin = highAt;
                draft.highScope = static_cast<int>(s);
            }
            if (scope.low) {
                draft.low = low;
                draft.lowOrigin = lowAt;
                draft.lowScope = static_cast<int>(s);
            }
            if (scope.bandwidth) {
                unsigned cap = std::max<unsigned>(1, fabric_.ports[draft.port].vlArbLowCap);
                auto it = bandwidthByCap.find(cap);
                if (it == bandwidthByCap.end()) {
                    BandwidthPlan plan = planBandwidth(*scope.bandwidth, std::min(cap, 64u));
                    VlArbTable t{};
                    std::copy(plan.entries.begin(), plan.entries.end(), t.begin());
                    it = bandwidthByCap.emplace(cap, out_.vlarbs.intern(t)).first;
                }
                draft.low = it->second;
                draft.lowOrigin = bandwidthAt;
                draft.lowScope = static_cast<int>(s);
            }
            if (scope.highLimit) {
                draft.highLimit = *scope.highLimit;
                draft.limitOrigin = limitAt;
                draft.limitScope = static_cast<int>(s);
            }
        }
    }

    void applySl2VlScope(size_t s) {
        const Sl2VlScope& scope = policy_.sl2vlScopes[s];
        uint16_t at =
            origin({TableOrigin::Kind::Scope, policy_.file, scope.location, static_cast<int>(s)});
        uint32_t table = raw_.intern(scope.table);
        // Nodes: the group's members (every node when no group is given).
        std::vector<uint32_t> candidates;
        if (scope.groups.empty()) {
            candidates.resize(drafts_.size());
            for (uint32_t d = 0; d < drafts_.size(); ++d) candidates[d] = d;
        } else {
            candidates = memberDrafts(scope.groups);
        }
        for (uint32_t d : candidates) {
            Draft& draft = drafts_[d];
            const FabricPort& out = fabric_.ports[draft.port];
            bool onSwitch = fabric_.nodeOf(draft.port).type == NodeType::Switch;
            // The out-port filters; a CA or router port's pair is (0, 0) but it is filtered by
            // its own port number and link peer.
            if (!scope.to.test(out.number)) continue;
            if (!scope.acrossTo.empty() && !peerIn(scope.acrossTo, draft.port)) continue;
            for (unsigned in = 0; in < draft.sl2vl.size(); ++in) {
                unsigned inNumber = onSwitch ? in : out.number;
                uint32_t inPort = onSwitch ? fabric_.nodeOf(draft.port).firstPort + in : draft.port;
                if (!scope.from.test(inNumber)) continue;
                if (!scope.acrossFrom.empty() && !peerIn(scope.acrossFrom, inPort)) continue;
                draft.sl2vl[in] = table;
                draft.sl2vlOrigin[in] = at;
                draft.sl2vlScope[in] = static_cast<int>(s);
            }
        }
    }

    // Folding exactly as OpenSM does it, and one warning per written table and VL count.
    struct FoldKey {
        uint16_t origin;
        uint8_t operVls;
        bool operator<(const FoldKey& o) const {
            return std::tie(origin, operVls) < std::tie(o.origin, o.operVls);
        }
    };
    struct FoldNote {
        size_t ports = 0;
        uint32_t lastPort = NoPort;
        std::string what;
    };
    std::map<FoldKey, FoldNote> foldWarnings_;

    // describe() says what folding does; it is called once per warning.
    template <typename Describe>
    void noteFold(uint16_t originIndex, uint8_t operVls, uint32_t port, Describe describe) {
        if (out_.origins[originIndex].kind == TableOrigin::Kind::BuiltIn)
            return;  // OpenSM's own default relies on it
        FoldNote& note = foldWarnings_[{originIndex, operVls}];
        if (note.lastPort == port) return;  // one port counts once, whatever its in-ports
        note.lastPort = port;
        if (note.ports++ == 0) note.what = describe();
    }

    // Per unfolded SL2VL table and OperVLs code: the folded table's index, the unfolded table's
    // index in the output pool, and whether folding changed it (computed once, used per pair).
    struct FoldedSl2Vl {
        uint32_t folded = NoPort;
        uint32_t raw = NoPort;
        bool folds = false;
    };
    std::vector<std::array<FoldedSl2Vl, ib::MaxVlEncoding + 1>> sl2vlFolds_;

    const FoldedSl2Vl& foldSl2Vl(uint32_t rawIndex, uint8_t operVls) {
        if (sl2vlFolds_.size() < raw_.size()) sl2vlFolds_.resize(raw_.size());
        FoldedSl2Vl& f = sl2vlFolds_[rawIndex][std::min(operVls, ib::MaxVlEncoding)];
        if (f.folded == NoPort) {
            Sl2VlTable table = raw_[rawIndex];
            uint8_t mask = vlMask(operVls);
            for (uint8_t& vl : table) {
                if (vl == ib::DropVl) continue;
                f.folds |= vl >= foldedDataVls(operVls);
                vl &= mask;
            }
            f.folded = out_.sl2vls.intern(table);
            f.raw = out_.sl2vls.intern(raw_[rawIndex]);
        }
        return f;
    }

    // Per unfolded VLArb table, OperVLs code and cap: the folded table and whether folding
    // changed an entry the port is sent.
    struct FoldedVlArb {
        uint32_t folded = NoPort;
        bool folds = false;
    };
    std::map<std::tuple<uint32_t, uint8_t, unsigned>, FoldedVlArb> vlarbFolds_;

    const FoldedVlArb& foldVlArb(uint32_t raw, uint8_t operVls, unsigned cap) {
        FoldedVlArb& f = vlarbFolds_[{raw, operVls, cap}];
        if (f.folded == NoPort) {
            VlArbTable table = out_.vlarbs[raw];
            for (unsigned i = 0; i < table.size(); ++i) {
                f.folds |= i < cap && table[i].weight && table[i].vl >= foldedDataVls(operVls);
                table[i].vl &= vlMask(operVls);
            }
            f.folded = out_.vlarbs.intern(table);
        }
        return f;
    }

    void finish() {
        out_.ports.reserve(drafts_.size());
        for (Draft& d : drafts_) {
            const FabricPort& port = fabric_.ports[d.port];
            PortTables t;
            t.port = d.port;
            t.portClass = d.portClass;
            t.operVls = port.operVls;
            uint8_t mask = vlMask(port.operVls);
            unsigned dataVls = foldedDataVls(port.operVls);
            t.hasVlArb = port.vlCap != 1;
            t.vlArbHighCap = port.vlArbHighCap;
            t.vlArbLowCap = port.vlArbLowCap;
            t.highLimit = t.hasVlArb ? d.highLimit : 0;
            t.highOrigin = d.highOrigin;
            t.lowOrigin = d.lowOrigin;
            t.limitOrigin = d.limitOrigin;
            auto fold = [&](uint32_t raw, unsigned cap, uint16_t from) {
                const FoldedVlArb& f = foldVlArb(raw, port.operVls, cap);
                if (f.folds) {
                    noteFold(from, port.operVls, d.port, [&] {
                        const VlArbTable& table = out_.vlarbs[raw];
                        for (unsigned i = 0; i < cap && i < table.size(); ++i) {
                            if (table[i].weight && table[i].vl >= dataVls) {
                                return "VL " + std::to_string(table[i].vl) + " becomes VL " +
                                       std::to_string(table[i].vl & mask);
                            }
                        }
                        return std::string();
                    });
                }
                return f.folded;
            };
            t.vlArbHigh = fold(d.high, port.vlArbHighCap, d.highOrigin);
            t.vlArbLow = fold(d.low, port.vlArbLowCap, d.lowOrigin);
            t.rawHigh = d.high;
            t.rawLow = d.low;
            if (d.highScope >= 0) ++out_.vlarbScopeUse[d.highScope];
            if (d.lowScope >= 0 && d.lowScope != d.highScope) ++out_.vlarbScopeUse[d.lowScope];
            if (d.limitScope >= 0 && d.limitScope != d.highScope && d.limitScope != d.lowScope)
                ++out_.vlarbScopeUse[d.limitScope];

            std::vector<uint32_t> folded(d.sl2vl.size()), raws(d.sl2vl.size());
            for (size_t in = 0; in < d.sl2vl.size(); ++in) {
                const FoldedSl2Vl& f = foldSl2Vl(d.sl2vl[in], port.operVls);
                folded[in] = f.folded;
                raws[in] = f.raw;
                if (f.folds) {
                    noteFold(d.sl2vlOrigin[in], port.operVls, d.port,
                             [&] { return describeSl2VlFold(raw_[d.sl2vl[in]], mask); });
                }
                if (d.sl2vlScope[in] >= 0) {
                    ++out_.sl2vlScopeUse[d.sl2vlScope[in]];
                    const auto scope = static_cast<uint16_t>(d.sl2vlScope[in]);
                    if (std::find(t.sl2vlScopes.begin(), t.sl2vlScopes.end(), scope) ==
                        t.sl2vlScopes.end())
                        t.sl2vlScopes.push_back(scope);
                }
            }
            auto uniform = [](const std::vector<uint32_t>& v) {
                return std::all_of(v.begin(), v.end(), [&](uint32_t x) { return x == v[0]; });
            };
            t.sl2vl = folded[0];
            if (!uniform(folded)) t.sl2vlByIn = std::move(folded);
            t.rawSl2vl = raws[0];
            if (!uniform(raws)) t.rawSl2vlByIn = std::move(raws);
            out_.ports.push_back(std::move(t));
        }
        for (auto& [key, note] : foldWarnings_) {
            const TableOrigin& o = out_.origins[key.origin];
            unsigned vls = foldedDataVls(key.operVls);
            diagnostics_.warning("vl-folded", o.file, o.location,
                                 "on " + std::to_string(note.ports) +
                                     (note.ports == 1 ? " port" : " ports") + " with " +
                                     std::to_string(vls) + " data VL" + (vls == 1 ? "" : "s") +
                                     " this table relies on OpenSM's folding of VLs: " + note.what);
        }
    }

    std::string describeSl2VlFold(const Sl2VlTable& raw, uint8_t mask) const {
        // Which SLs now share a VL because of the folding.
        std::string out;
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (raw[sl] == ib::DropVl || (raw[sl] & mask) == raw[sl]) continue;
            unsigned vl = raw[sl] & mask;
            std::string sharing;
            for (unsigned other = 0; other < ib::SlCount; ++other) {
                if (other != sl && raw[other] != ib::DropVl && (raw[other] & mask) == vl)
                    sharing += (sharing.empty() ? "" : ",") + std::to_string(other);
            }
            if (!out.empty()) out += "; ";
            out += "SL " + std::to_string(sl) + " (VL " + std::to_string(raw[sl]) +
                   ") lands on VL " + std::to_string(vl);
            if (!sharing.empty()) out += ", shared with SL " + sharing;
        }
        return out;
    }
};

}  // namespace

FabricTables computeTables(const BoundPolicy& bound, const OpenSmConf& conf,
                           Diagnostics& diagnostics, const WithheldScopes& withheld) {
    return TableBuilder(bound, conf, diagnostics, withheld).build();
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// The SL2VL and VL-arbitration tables every port of a fabric receives, as OpenSM would program
// them from opensm.conf, with the policy's qos-setup applied on top.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "common/diagnostics.hpp"
#include "common/text.hpp"
#include "compiler/bind.hpp"
#include "fabric/opensm_conf.hpp"
#include "ib/link.hpp"
#include "ib/sl2vl_vlarb.hpp"

namespace ibqos {

// Distinct tables stored once and referred to by index: a fabric has few distinct tables and
// millions of (in, out) pairs.
template <typename Table>
class TablePool {
  public:
    uint32_t intern(const Table& table) {
        auto [it, fresh] = index_.emplace(table, static_cast<uint32_t>(tables_.size()));
        if (fresh) tables_.push_back(table);
        return it->second;
    }
    const Table& operator[](uint32_t index) const { return tables_[index]; }
    size_t size() const { return tables_.size(); }

  private:
    // The tables are arrays of plain bytes.
    struct Hash {
        size_t operator()(const Table& t) const {
            return static_cast<size_t>(
                fnv1a(std::string_view(reinterpret_cast<const char*>(t.data()), sizeof(Table))));
        }
    };
    std::vector<Table> tables_;
    std::unordered_map<Table, uint32_t, Hash> index_;
};

// Where a table or value came from, so that warnings can point at what the administrator wrote.
struct TableOrigin {
    enum class Kind : uint8_t { BuiltIn, OpenSmConf, Scope, Bandwidth } kind = Kind::BuiltIn;
    std::string file;
    SourceLocation location;
    int scope = -1;  // index of the vlarb-scope or sl2vl-scope for Kind::Scope and Bandwidth
    std::string describe() const;
};

// The tables of one physical port that receives them (its output side).
struct PortTables {
    uint32_t port = 0;  // index into Fabric::ports
    PortClass portClass = PortClass::Ca;
    uint8_t operVls = 4;  // OperVLs encoding the folding used
    uint8_t highLimit = 0;
    bool hasVlArb = true;  // false when the port has a single data VL (OpenSM sends no VLArb)
    uint8_t vlArbHighCap = 8;
    uint8_t vlArbLowCap = 8;
    uint32_t vlArbHigh = 0;  // indices into FabricTables::vlarbs (folded, as sent)
    uint32_t vlArbLow = 0;
    uint32_t sl2vl = 0;  // the table when every in-port has the same (indices into sl2vls)
    std::vector<uint32_t> sl2vlByIn;  // switch ports: one per in-port 0..N, empty when uniform
    // The same tables before OpenSM's folding, as the options or scopes wrote them.
    uint32_t rawHigh = 0, rawLow = 0, rawSl2vl = 0;
    std::vector<uint32_t> rawSl2vlByIn;
    uint16_t highOrigin = 0, lowOrigin = 0, limitOrigin = 0;  // indices into FabricTables::origins
    std::vector<uint16_t> sl2vlScopes;  // the sl2vl-scopes that wrote some of its pairs

    uint32_t sl2vlFor(unsigned in) const { return sl2vlByIn.empty() ? sl2vl : sl2vlByIn[in]; }
    uint32_t rawSl2vlFor(unsigned in) const {
        return rawSl2vlByIn.empty() ? rawSl2vl : rawSl2vlByIn[in];
    }
};

// qos-setup scopes left out of the tables, by scope index (empty: none): their ports keep what
// opensm.conf gives them, as a stock OpenSM programs them.
struct WithheldScopes {
    std::vector<bool> vlarb, sl2vl;
    bool has(bool isVlArb, size_t scope) const {
        const std::vector<bool>& v = isVlArb ? vlarb : sl2vl;
        return scope < v.size() && v[scope];
    }
};

struct FabricTables {
    std::vector<PortTables> ports;  // every port that receives tables, in port order
    TablePool<VlArbTable> vlarbs;   // folded and unfolded tables alike
    TablePool<Sl2VlTable> sl2vls;
    std::vector<TableOrigin> origins;
    // For each vlarb-scope and sl2vl-scope: how many ports (pairs) finally hold what it set.
    std::vector<size_t> vlarbScopeUse, sl2vlScopeUse;
    WithheldScopes withheld;
};

// OpenSM's qos_build_config: the template of one port class from its options, the qos_
// options, and the built-in defaults, parsed exactly as OpenSM parses them (vl % 15, weight
// truncated to 8 bits, missing entries 0:0).
struct TableTemplate {
    uint8_t highLimit = 0;
    VlArbTable vlarbHigh{};
    VlArbTable vlarbLow{};
    Sl2VlTable sl2vl{};
    uint16_t highOrigin = 0, lowOrigin = 0, limitOrigin = 0, sl2vlOrigin = 0;
};
VlArbTable parseVlArbOption(const std::string& text);
Sl2VlTable parseSl2VlOption(const std::string& text);

// OperVLs as OpenSM's link manager negotiates them: min(own VLCap, peer VLCap, max_op_vls).
void negotiateOperVls(Fabric& fabric, uint8_t maxOpVls);

// Computes every port's tables, leaving the withheld scopes out. Warnings about folding (VLs
// beyond a port's OperVLs) point at the table the administrator wrote (an opensm.conf option or
// a qos-setup scope).
FabricTables computeTables(const BoundPolicy& bound, const OpenSmConf& conf,
                           Diagnostics& diagnostics, const WithheldScopes& withheld = {});

// What an arbiter makes of VLArb entries: them in order, without those of weight 0 (which it
// skips), so that tables that arbitrate alike compare equal.
std::vector<VlArbEntry> arbitrated(const std::vector<VlArbEntry>& entries);

// Tables as people read them: an SL2VL table "0,1,2,...,7", VLArb entries "1:128,2:64".
std::string sl2vlText(const Sl2VlTable& table);
std::string vlarbText(const std::vector<VlArbEntry>& entries);

// One table of a port as it is sent (an SL2VL table, the VLArb entries of the port's cap), or
// its VL high limit: what a difference between two ports' tables is about.
using PortTable = std::variant<Sl2VlTable, std::vector<VlArbEntry>, uint8_t>;
// As people read it: "0,1,2,...,7", "1:128,2:64", "4".
std::string tableText(const PortTable& table);

// One table of a port that differs: which ("sl2vl in 3", "vlarb high", "vlarb low",
// "vl-high-limit"), and both forms.
struct TableDifference {
    std::string table;
    PortTable before, after;
};

// A port whose tables differ between two computations on one fabric.
struct TableChange {
    uint32_t before = 0, after = 0;  // indices into each FabricTables::ports
    bool sl2vl = false;              // some in-port's SL2VL table
    bool vlarb = false;              // the VLArb tables as sent, or the high limit
    std::vector<TableDifference> differences;
};
std::vector<TableChange> changedTables(const Fabric& fabric, const FabricTables& before,
                                       const FabricTables& after);

// The VL mask OpenSM applies on a port: (1 << (OperVLs - 1)) - 1.
constexpr uint8_t vlMask(uint8_t operVls) {
    return operVls == 0 ? 0 : static_cast<uint8_t>((1u << (operVls - 1)) - 1);
}
// The data VLs a port keeps after OpenSM's folding: those its OperVLs put in operation, and VL0
// where OperVLs is 0 (reserved, no VL in operation: vlMask folds every VL onto VL0).
constexpr unsigned foldedDataVls(uint8_t operVls) { return std::max(1u, ib::dataVls(operVls)); }

}  // namespace ibqos

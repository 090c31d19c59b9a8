// SPDX-License-Identifier: MIT
// Emitters: what `ibqos compile` writes — the tables as JSON or for people, the long-run VL
// shares (text and SVG), and a plain OpenSM configuration doing the same thing.
#pragma once

#include <string>
#include <vector>

#include "common/diagnostics.hpp"
#include "common/json.hpp"
#include "compiler/bind.hpp"
#include "compiler/tables.hpp"
#include "fabric/opensm_conf.hpp"

namespace ibqos {

// {"ports": [...], "diagnostics": [...]} exactly as the command-line contract gives it.
std::string emitTablesJson(const BoundPolicy& bound, const FabricTables& tables,
                           const std::vector<Diagnostic>& diagnostics);

// One port's object of that document: its identity, OperVLs, SL2VL pairs and VLArb lists.
Json portTablesJson(const Fabric& fabric, const FabricTables& tables, const PortTables& port);
// One table in that document's form: an SL2VL table as its 16 VLs, VLArb entries as
// [[vl, weight], ...], a high limit as a number.
Json tableJson(const PortTable& table);

// The tables for people: ports with identical tables grouped, each distinct table once.
std::string emitTablesText(const BoundPolicy& bound, const FabricTables& tables);

// One distinct arbitration setup (high table, low table, high limit) and where it is used.
struct ArbitrationSetup {
    uint32_t high = 0, low = 0;
    uint8_t highCap = 8, lowCap = 8, highLimit = 0;
    std::vector<uint32_t> ports;        // indices into FabricTables::ports
    std::array<double, 15> shares{};    // long-run share of the link per VL, full-size packets
    std::array<double, 15> intended{};  // from bandwidth:, share of the low-priority bandwidth
    bool hasIntended = false;
};
std::vector<ArbitrationSetup> arbitrationSetups(const BoundPolicy& bound,
                                                const FabricTables& tables);

// A share of the link (0 to 1) as a percentage: in a column, one decimal, 6 wide (" 25.0%",
// the shares table), or short, three significant digits ("25%", "33.3%": ibqos diff's lines).
enum class PercentForm : uint8_t { Column, Short };
std::string percentText(double share, PercentForm form);

// The long-run share of each VL for every distinct arbitration setup: a table, and an SVG bar
// chart of the same.
std::string emitSharesText(const BoundPolicy& bound, const FabricTables& tables);
std::string emitSharesSvg(const BoundPolicy& bound, const FabricTables& tables);

// A plain OpenSM configuration with the same meaning: a qos-policy.conf with every port group
// as an explicit GUID list and qos-ulps lowered to match rules, and the opensm.conf qos_* lines.
// Ports that need tables no per-class option can express are listed in the options file and
// reported as a warning.
struct OpenSmFiles {
    std::string policy;   // qos-policy.conf
    std::string options;  // opensm.conf lines
};
OpenSmFiles emitOpenSm(const BoundPolicy& bound, const FabricTables& tables,
                       Diagnostics& diagnostics);

// What per-class opensm.conf options can express: for each port class, the (unfolded) tables
// most of its ports receive, and the ports that need other tables (per-port programming).
struct ClassTemplate {
    bool present = false;
    uint32_t high = 0, low = 0, sl2vl = 0;  // indices into FabricTables' pools
    uint8_t highLimit = 0;
};
struct ClassPlan {
    std::array<ClassTemplate, 4> classes;  // indexed by PortClass
    std::vector<uint32_t> specialPorts;    // indices into FabricTables::ports
};
ClassPlan planClassOptions(const Fabric& fabric, const FabricTables& tables);
// The option strings OpenSM reads back as these tables ("0:64,1:128", "0,1,2,...").
std::string vlarbOptionString(const VlArbTable& table);
std::string sl2vlOptionString(const Sl2VlTable& table);

}  // namespace ibqos

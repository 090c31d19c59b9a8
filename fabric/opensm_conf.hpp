// SPDX-License-Identifier: MIT
// The QoS options of an opensm.conf, read with OpenSM's own rules.
#pragma once

#include <optional>
#include <string>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "ib/link.hpp"

namespace ibqos {

// One set of QoS options (qos_, qos_ca_, qos_sw0_, qos_swe_ or qos_rtr_), as written; an unset
// option falls back to the qos_ set, then to OpenSM's built-in default.
struct QosOptionSet {
    std::optional<unsigned> maxVls;  // stored and never used by OpenSM
    std::optional<int> highLimit;
    std::optional<std::string> vlarbHigh;
    std::optional<std::string> vlarbLow;
    std::optional<std::string> sl2vl;
    SourceLocation vlarbHighAt, vlarbLowAt, sl2vlAt, highLimitAt;
};

// The port classes OpenSM builds a table template for.
enum class PortClass : uint8_t { Ca, Router, SwitchPort0, SwitchExternal };
const char* portClassPrefix(PortClass c);  // "qos_ca_", "qos_rtr_", "qos_sw0_", "qos_swe_"

struct OpenSmConf {
    std::string file;  // empty: no file (OpenSM's built-in defaults)
    bool qos = false;
    uint8_t maxOpVls = ib::MaxVlEncoding;  // OperVLs code limit (VL0-14)
    QosOptionSet all;                      // qos_*
    QosOptionSet ca, router, switchPort0, switchExternal;
    // The event plugins OpenSM loads (names separated by blanks) and their options.
    std::optional<std::string> eventPluginName, eventPluginOptions;
    SourceLocation eventPluginNameAt, eventPluginOptionsAt;

    const QosOptionSet& forClass(PortClass c) const;
};

// Reads the QoS options, max_op_vls and the event plugin lines of an opensm.conf; everything
// else is ignored. Values OpenSM would reject or silently replace are warnings located in the
// file.
OpenSmConf readOpenSmConf(const SourceFile& source, Diagnostics& diagnostics);

// The event plugin lines, as far as ibqos can tell on this machine: each plugin's library on the
// dynamic loader's path, and, where the ibqos plugin is named, options it can read (else an
// error: it would do nothing) with a policy file that exists (else a warning).
void checkPluginLines(const OpenSmConf& conf, Diagnostics& diagnostics);

}  // namespace ibqos

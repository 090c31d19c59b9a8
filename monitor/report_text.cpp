// SPDX-License-Identifier: MIT
// A Monitor's last report for people.
#include <cstdio>

#include "common/text.hpp"
#include "monitor/exposition.hpp"

namespace ibqos::monitor {

using ib::perf::PortCounter;

std::string reportText(const Monitor& m) {
    const Report& r = m.last();
    const ScrapeStats& s = r.stats;
    const Fabric& fabric = m.fabric();
    char line[256];
    std::string out;
    std::snprintf(line, sizeof line,
                  "scrape %llu: %zu MADs (%zu answered, %zu timeouts, %zu errors) in %.3f s, %zu "
                  "of %zu ports read%s\n",
                  static_cast<unsigned long long>(s.scrape), s.sent, s.answered, s.timedOut,
                  s.errors, s.seconds, s.portsRead, s.portsPlanned,
                  s.budgetReached ? " (MAD budget reached)" : "");
    out += line;
    // Only the ports that did something are listed; the count says so, so that a port left out
    // does not read as a port not read.
    std::string ports;
    size_t listed = 0;
    for (const PortReport& p : r.ports) {
        const Delta& xmit = p.counters[unsigned(PortCounter::XmitData)];
        const Delta& rcv = p.counters[unsigned(PortCounter::RcvData)];
        if (!p.congested && !p.hasVlMix && !(xmit.ok() && xmit.value > 0)) continue;
        ++listed;
        std::snprintf(line, sizeof line, "%-28s tx %s B/s  rx %s B/s%s\n",
                      fabric.portName(p.port).c_str(),
                      xmit.ok() ? decimal(xmit.rate()).c_str() : deltaStateName(xmit.state),
                      rcv.ok() ? decimal(rcv.rate()).c_str() : deltaStateName(rcv.state),
                      p.congested ? "  congested" : "");
        ports += line;
        if (!p.hasVlMix) continue;
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            const VlShare& v = p.vls[vl];
            if (v.achieved <= 0 && !v.competing) continue;
            std::snprintf(
                line, sizeof line, "    VL %-2u %5.1f%% of the link%s\n", vl, v.achieved * 100,
                p.judged && v.competing ? (", intended " + decimal(v.intended * 100) + "%").c_str()
                                        : "");
            ports += line;
        }
    }
    std::snprintf(line, sizeof line,
                  "%zu of the %zu ports read transmitted, or were congested, in the interval%s\n",
                  listed, s.portsRead, listed ? ":" : "");
    out += line + ports;
    for (const Finding& f : r.findings)
        out += std::string(findingKindName(f.kind)) + ": " + f.message + "\n";
    return out;
}

}  // namespace ibqos::monitor

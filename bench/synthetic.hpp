// SPDX-License-Identifier: MIT
// The benchmarks' synthetic fabric: a two-level fat tree of 48,000 single-port hosts under 2,000
// 36-port leaf switches (24 hosts down, 12 links up) and 667 36-port spines: 50,667 endpoints.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ibqos::bench {

struct FatTree {
    unsigned hosts = 48000;
    unsigned leaves = 2000;
    unsigned spines = 667;
    unsigned down = 24;  // hosts per leaf
    unsigned up = 12;    // uplinks per leaf
    unsigned radix = 36;

    static constexpr uint64_t HostGuid = 0x0002c90300000000ULL;  // node GUID; its port is +1
    static constexpr uint64_t LeafGuid = 0x0002c90400000000ULL;
    static constexpr uint64_t SpineGuid = 0x0002c90500000000ULL;

    uint64_t hostPortGuid(unsigned h) const { return HostGuid + 2ull * h + 1; }
    uint16_t hostLid(unsigned h) const { return static_cast<uint16_t>(1 + h); }
    uint16_t leafLid(unsigned l) const { return static_cast<uint16_t>(1 + hosts + l); }
    uint16_t spineLid(unsigned s) const { return static_cast<uint16_t>(1 + hosts + leaves + s); }
    // Uplink k of leaf l goes to spine (l * up + k) % spines, port (l * up + k) / spines + 1.
    unsigned spineOf(unsigned l, unsigned k) const { return (l * up + k) % spines; }
    unsigned spinePortOf(unsigned l, unsigned k) const { return (l * up + k) / spines + 1; }

    // One switch's first lines as ibnetdiscover writes them.
    void switchHeader(std::string& out, uint64_t guid, const char* role, unsigned index,
                      unsigned lid) const {
        char line[160];
        auto g = static_cast<unsigned long long>(guid);
        std::snprintf(line, sizeof line,
                      "\nswitchguid=0x%llx(%llx)\nSwitch\t%u \"S-%016llx\"\t\t# \"%s%u\" "
                      "base port 0 lid %u lmc 0\n",
                      g, g, radix, g, role, index, lid);
        out += line;
    }

    // The fabric as ibnetdiscover writes it (both ends of every link, LIDs, 4xEDR links).
    std::string ibnetdiscover() const {
        std::string out;
        out.reserve(size_t{hosts} * 160 + size_t{leaves + spines} * radix * 90);
        char line[256];
        out += "#\n# Topology file: a synthetic two-level fat tree\n#\n";
        for (unsigned s = 0; s < spines; ++s) {
            switchHeader(out, SpineGuid + s, "spine", s, spineLid(s));
            for (unsigned l = 0; l < leaves; ++l) {
                for (unsigned k = 0; k < up; ++k) {
                    if (spineOf(l, k) != s) continue;
                    std::snprintf(line, sizeof line,
                                  "[%u]\t\"S-%016llx\"[%u]\t\t# \"leaf%u\" lid %u 4xEDR\n",
                                  spinePortOf(l, k), (unsigned long long)(LeafGuid + l),
                                  down + 1 + k, l, leafLid(l));
                    out += line;
                }
            }
        }
        for (unsigned l = 0; l < leaves; ++l) {
            switchHeader(out, LeafGuid + l, "leaf", l, leafLid(l));
            for (unsigned d = 0; d < down; ++d) {
                unsigned h = l * down + d;
                std::snprintf(line, sizeof line,
                              "[%u]\t\"H-%016llx\"[1](%llx)\t\t# \"host%u HCA-1\" lid %u 4xEDR\n",
                              d + 1, (unsigned long long)(HostGuid + 2ull * h),
                              (unsigned long long)hostPortGuid(h), h, hostLid(h));
                out += line;
            }
            for (unsigned k = 0; k < up; ++k) {
                unsigned s = spineOf(l, k);
                std::snprintf(line, sizeof line,
                              "[%u]\t\"S-%016llx\"[%u]\t\t# \"spine%u\" lid %u 4xEDR\n",
                              down + 1 + k, (unsigned long long)(SpineGuid + s), spinePortOf(l, k),
                              s, spineLid(s));
                out += line;
            }
        }
        for (unsigned h = 0; h < hosts; ++h) {
            uint64_t g = HostGuid + 2ull * h;
            unsigned l = h / down;
            std::snprintf(line, sizeof line,
                          "\ncaguid=0x%llx\nCa\t1 \"H-%016llx\"\t\t# \"host%u "
                          "HCA-1\"\n[1](%llx)\t\"S-%016llx\"[%u]\t\t# lid %u lmc 0 "
                          "\"leaf%u\" lid %u 4xEDR\n",
                          (unsigned long long)g, (unsigned long long)g, h,
                          (unsigned long long)hostPortGuid(h), (unsigned long long)(LeafGuid + l),
                          h % down + 1, hostLid(h), l, leafLid(l));
            out += line;
        }
        return out;
    }
};

}  // namespace ibqos::bench

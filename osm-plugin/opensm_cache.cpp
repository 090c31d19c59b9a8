// SPDX-License-Identifier: MIT
// expectedQosMads: osm_qos.c's rules against OpenSM's cached copies.
#include "osm-plugin/opensm_cache.hpp"

#include "fabric/opensm_subnet.hpp"
#include "osm-plugin/qos_mads.hpp"

namespace ibqos::osm {

size_t expectedQosMads(const osm_subn_t& subnet, const Fabric& fabric,
                       const std::vector<osm_node_t*>& nodeOf, const FabricTables& tables) {
    size_t mads = 0;
    for (const PortTables& t : tables.ports) {
        const FabricPort& port = fabric.ports[t.port];
        osm_physp_t* physp = physpOf(nodeOf[port.node], port.number);
        if (!physp) continue;
        bool force = physp->need_update || subnet.need_update;
        if (t.hasVlArb) {
            auto blocks = [&](uint32_t table, unsigned cap, unsigned first) {
                const VlArbTable& entries = tables.vlarbs[table];
                for (unsigned b = 0; b < 2; ++b) {
                    unsigned length = vlArbBlockLength(cap, b);
                    if (length == 0) continue;
                    bool differs = force;
                    for (unsigned i = 0; i < length && !differs; ++i) {
                        const ib_vl_arb_element_t& cached = physp->vl_arb[first + b].vl_entry[i];
                        differs = (cached.vl & 0xf) != entries[b * 32 + i].vl ||
                                  cached.weight != entries[b * 32 + i].weight;
                    }
                    mads += differs;
                }
            };
            blocks(t.vlArbLow, t.vlArbLowCap, 0);
            blocks(t.vlArbHigh, t.vlArbHighCap, 2);
        }
        for (unsigned in = 0; in < sl2vlInPorts(fabric.nodes[port.node]); ++in) {
            const Sl2VlTable& want = tables.sl2vls[t.sl2vlFor(in)];
            const ib_slvl_table_t* cached = osm_physp_get_slvl_tbl(physp, static_cast<uint8_t>(in));
            bool differs = force || !cached;
            for (unsigned i = 0; i < 8 && !differs; ++i) {
                differs = cached->raw_vl_by_sl[i] !=
                          static_cast<uint8_t>((want[2 * i] << 4) | want[2 * i + 1]);
            }
            mads += differs;
        }
    }
    return mads;
}

}  // namespace ibqos::osm

// SPDX-License-Identifier: MIT
// expectedQosMads: osm_qos.c's rules against OpenSM's cached copies.
#include "osm-plugin/opensm_cache.hpp"

#include <array>

#include "fabric/opensm_subnet.hpp"
#include "ib/sl2vl_vlarb.hpp"
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
            auto blocks = [&](uint32_t table, unsigned cap, bool high) {
                const VlArbTable& entries = tables.vlarbs[table];
                for (unsigned half = 0; half < 2; ++half) {
                    unsigned length = vlArbBlockLength(cap, half);
                    if (length == 0) continue;
                    unsigned block = ib::vlArbBlock(high, half);
                    unsigned first = ib::vlArbFirstEntry(block);
                    bool differs = force;
                    for (unsigned i = 0; i < length && !differs; ++i) {
                        const ib_vl_arb_element_t& cached = physp->vl_arb[block].vl_entry[i];
                        differs = ib::vlArbEntry(cached.vl, cached.weight) != entries[first + i];
                    }
                    mads += differs;
                }
            };
            blocks(t.vlArbLow, t.vlArbLowCap, false);
            blocks(t.vlArbHigh, t.vlArbHighCap, true);
        }
        for (unsigned in = 0; in < sl2vlInPorts(fabric.nodes[port.node]); ++in) {
            const ib_slvl_table_t* cached = osm_physp_get_slvl_tbl(physp, static_cast<uint8_t>(in));
            mads +=
                force || !cached ||
                ib::packSl2Vl(tables.sl2vls[t.sl2vlFor(in)]) != std::to_array(cached->raw_vl_by_sl);
        }
    }
    return mads;
}

}  // namespace ibqos::osm

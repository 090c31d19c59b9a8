// SPDX-License-Identifier: MIT
// RoutingHooks: installing update_sl2vl and update_vlarb on OpenSM's routing engines, and the
// hooks that give the overridden ports their tables.
#include "osm-plugin/routing_hooks.hpp"

#include <algorithm>
#include <utility>

#include "ib/sl2vl_vlarb.hpp"

namespace ibqos::osm {

namespace {

// The hooks' way back (OpenSM passes the engine's own context). The plugin is created once per
// OpenSM; the hooks run on its state-manager thread.
RoutingHooks* g_hooks = nullptr;

extern "C" void hookSl2Vl(void* context, osm_physp_t* port, uint8_t in, uint8_t out,
                          ib_slvl_table_t* table) {
    if (g_hooks) g_hooks->updateSl2Vl(context, port, in, out, table);
}

extern "C" void hookVlArb(void* context, osm_physp_t* port, uint8_t portNumber,
                          ib_vl_arb_table_t* block, unsigned length, unsigned blockNumber) {
    if (g_hooks) g_hooks->updateVlArb(context, port, portNumber, block, length, blockNumber);
}

}  // namespace

RoutingHooks::RoutingHooks(osm_opensm_t* osm, Log log) : osm_(osm), log_(std::move(log)) {
    g_hooks = this;
}

RoutingHooks::~RoutingHooks() {
    if (g_hooks == this) g_hooks = nullptr;
}

RoutingHooks::EngineHooks* RoutingHooks::engineByContext(void* context) {
    for (EngineHooks& e : engines_) {
        if (e.engine->context == context) return &e;
    }
    return nullptr;
}

void RoutingHooks::install(bool sl2vl, bool vlarb, size_t overriddenPorts) {
    std::vector<osm_routing_engine_t*> engines;
    for (osm_routing_engine_t* e = osm_->routing_engine_list; e; e = e->next) engines.push_back(e);
    if (osm_->default_routing_engine) engines.push_back(osm_->default_routing_engine);
    bool changed = false;
    for (osm_routing_engine_t* engine : engines) {
        auto it = std::find_if(engines_.begin(), engines_.end(),
                               [&](const EngineHooks& e) { return e.engine == engine; });
        if (it == engines_.end()) {
            if (!sl2vl && !vlarb) continue;
            engines_.push_back({engine, engine->update_sl2vl, engine->update_vlarb, false, false});
            it = engines_.end() - 1;
            if (engine->update_sl2vl || engine->update_vlarb) {
                log_(OSM_LOG_INFO, "0032",
                     std::string("routing engine ") + (engine->name ? engine->name : "?") +
                         " has table hooks of its own: ibqos calls them first, then gives the "
                         "ports the policy's own tables");
            }
        }
        EngineHooks& e = *it;
        if (sl2vl != e.ownSl2Vl) {
            engine->update_sl2vl = sl2vl ? hookSl2Vl : e.sl2vl;
            e.ownSl2Vl = sl2vl;
            changed = true;
        }
        if (vlarb != e.ownVlArb) {
            engine->update_vlarb = vlarb ? hookVlArb : e.vlarb;
            e.ownVlArb = vlarb;
            changed = true;
        }
    }
    if (!changed) return;
    if (sl2vl || vlarb) {
        log_(OSM_LOG_INFO, "0030",
             std::to_string(overriddenPorts) +
                 " ports need tables their class options cannot give: hooks for " +
                 (sl2vl && vlarb ? "SL2VL and VLArb"
                  : sl2vl        ? "SL2VL"
                                 : "VLArb") +
                 " installed on " + std::to_string(engines.size()) + " routing engines" +
                 (sl2vl ? " (OpenSM's one-MAD-per-switch SL2VL programming is off while the SL2VL "
                          "hook is)"
                        : ""));
    } else {
        log_(OSM_LOG_INFO, "0031",
             "no port needs per-port tables any more: routing-engine hooks removed");
    }
}

void RoutingHooks::updateSl2Vl(void* context, osm_physp_t* port, uint8_t in, uint8_t out,
                               ib_slvl_table_t* table) noexcept {
    try {
        if (EngineHooks* e = engineByContext(context); e && e->sl2vl)
            e->sl2vl(context, port, in, out, table);
        if (!sweep_ || !port || !port->p_node) return;
        const PortTables* t =
            sweep_->overrideFor(cl_ntoh64(port->p_node->node_info.node_guid), port->port_num);
        if (!t) return;
        const ib::PackedSl2Vl bytes = ib::packSl2Vl(sweep_->sl2vl(t->rawSl2vlFor(in)));
        std::copy(bytes.begin(), bytes.end(), table->raw_vl_by_sl);
        ++calls_;
    } catch (...) {
        // A hook must never fail OpenSM: the table stays as OpenSM built it.
    }
}

void RoutingHooks::updateVlArb(void* context, osm_physp_t* port, uint8_t portNumber,
                               ib_vl_arb_table_t* block, unsigned length,
                               unsigned blockNumber) noexcept {
    try {
        if (EngineHooks* e = engineByContext(context); e && e->vlarb) {
            e->vlarb(context, port, portNumber, block, length, blockNumber);
        }
        if (!sweep_ || !port || !port->p_node || blockNumber >= ib::VlArbBlockCount) return;
        const PortTables* t =
            sweep_->overrideFor(cl_ntoh64(port->p_node->node_info.node_guid), port->port_num);
        if (!t) return;
        const VlArbTable& entries =
            sweep_->vlarb(ib::vlArbBlockIsHigh(blockNumber) ? t->rawHigh : t->rawLow);
        unsigned first = ib::vlArbFirstEntry(blockNumber);
        for (unsigned i = 0; i < length && i < ib::VlArbBlockEntries; ++i) {
            block->vl_entry[i].vl = entries[first + i].vl;
            block->vl_entry[i].weight = entries[first + i].weight;
        }
        // OpenSM set the class's high limit on the port just before; the link manager sends it
        // later.
        port->vl_high_limit = t->highLimit;
        ++calls_;
    } catch (...) {
    }
}

}  // namespace ibqos::osm

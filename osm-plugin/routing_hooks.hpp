// SPDX-License-Identifier: MIT
// The routing-engine hooks (update_sl2vl, update_vlarb) through which the plugin gives the ports
// whose tables their class options cannot give their own tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/osm.hpp"
#include "osm-plugin/sweep.hpp"

namespace ibqos::osm {

class RoutingHooks {
  public:
    // How the hooks log: OpenSM level, IBQOS id, message.
    using Log = std::function<void(int level, const char* id, const std::string& message)>;

    RoutingHooks(osm_opensm_t* osm, Log log);
    ~RoutingHooks();
    RoutingHooks(const RoutingHooks&) = delete;
    RoutingHooks& operator=(const RoutingHooks&) = delete;

    // Installs or removes the hooks on every routing engine and the default one, chaining an
    // engine's own hooks (call with OpenSM's lock held exclusively).
    void install(bool sl2vl, bool vlarb, size_t overriddenPorts);
    // The sweep whose tables the hooks give (nullptr: none), and the count of hook calls that
    // changed a table since (call with OpenSM's lock held exclusively).
    void setSweep(const CompiledSweep* sweep) {
        sweep_ = sweep;
        calls_ = 0;
    }
    size_t calls() const { return calls_; }

    // The hooks themselves (run under OpenSM's lock, from osm_qos_setup()). Never throw.
    void updateSl2Vl(void* context, osm_physp_t* port, uint8_t in, uint8_t out,
                     ib_slvl_table_t* table) noexcept;
    void updateVlArb(void* context, osm_physp_t* port, uint8_t portNumber, ib_vl_arb_table_t* block,
                     unsigned length, unsigned blockNumber) noexcept;

  private:
    // A routing engine's own hooks, kept to be chained and restored.
    struct EngineHooks {
        osm_routing_engine_t* engine = nullptr;
        decltype(osm_routing_engine_t::update_sl2vl) sl2vl = nullptr;
        decltype(osm_routing_engine_t::update_vlarb) vlarb = nullptr;
        bool ownSl2Vl = false;  // ibqos's hook is installed in place of sl2vl
        bool ownVlArb = false;
    };
    EngineHooks* engineByContext(void* context);

    osm_opensm_t* osm_;
    Log log_;
    std::vector<EngineHooks> engines_;
    const CompiledSweep* sweep_ = nullptr;
    size_t calls_ = 0;
};

}  // namespace ibqos::osm

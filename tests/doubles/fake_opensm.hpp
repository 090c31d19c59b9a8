// SPDX-License-Identifier: MIT
// A test double of a running OpenSM for the PathRecord responder: OpenSM's subnet structures
// built in memory from a Fabric (nodes, ports, LIDs, forwarding tables by shortest paths, SL2VL
// tables, the Default partition), and the OpenSM executable's functions the responder calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/osm.hpp"

namespace ibqos::doubles {

// What OpenSM would have sent or done for one request.
struct FakeSaOutcome {
    std::vector<uint8_t> answer;  // the MAD osm_sa_respond would send (empty: none)
    size_t records = 0;           // PathRecords in it
    bool delegated = false;       // handed to OpenSM's own PathRecord handler
};

// One OpenSM subnet at a time (OpenSM's functions are global): the last one made is the one the
// fake functions see. Every endpoint is a full member of the Default partition; the routing
// engine is none (no path_sl); the SM's port is the fabric's smPort, the requester of every
// request.
class FakeOpenSm {
  public:
    // The fabric's LIDs must be set (ibnetdiscover output carries them).
    explicit FakeOpenSm(const Fabric& fabric);
    ~FakeOpenSm();
    FakeOpenSm(const FakeOpenSm&) = delete;
    FakeOpenSm& operator=(const FakeOpenSm&) = delete;

    osm_opensm_t& osm() { return *osm_; }
    // A request MAD from the requester's LID, wrapped as OpenSM's dispatcher hands it over.
    osm_madw_t* wrap(std::span<const uint8_t> mad, uint16_t requesterLid);
    // What happened to the last request wrapped.
    const FakeSaOutcome& outcome() const { return outcome_; }

    // For the fake OpenSM functions.
    static FakeOpenSm* current();
    osm_port_t* portByLid(uint16_t lid) const;
    void respond(osm_madw_t* madw, cl_qlist_t* records);
    void delegate() { outcome_.delegated = true; }

  private:
    osm_opensm_t* osm_ = nullptr;
    std::vector<osm_node_t*> nodes_;
    std::vector<std::unique_ptr<osm_port_t>> ports_;
    std::vector<std::unique_ptr<osm_alias_guid_t>> aliases_;
    std::vector<std::unique_ptr<osm_switch_t>> switches_;
    std::vector<std::unique_ptr<ib_slvl_table_t>> sl2vl_;
    std::vector<std::vector<uint8_t>> lfts_;
    std::vector<osm_port_t*> byLid_;
    std::vector<uint8_t> mad_;
    osm_madw_t madw_{};
    FakeSaOutcome outcome_;
};

}  // namespace ibqos::doubles

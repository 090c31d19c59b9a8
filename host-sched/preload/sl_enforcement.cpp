// SPDX-License-Identifier: MIT
// SlEnforcer: the facts a decision needs, read from the device and cached, and the agent's
// table looked up before any question is asked.
#include "host-sched/preload/sl_enforcement.hpp"

#include <atomic>

#include <arpa/inet.h>

#include "host-sched/preload/next_symbol.hpp"

namespace ibqos::host {

namespace {

using QueryPortFn = int (*)(ibv_context*, uint8_t, ibv_port_attr*);  // the 1.1 (compat) layout
using QueryPkeyFn = int (*)(ibv_context*, uint8_t, int, __be16*);
using QueryGidFn = int (*)(ibv_context*, uint8_t, int, ibv_gid*);

// How long the facts of a port (LID, LMC, link layer, P_Keys) are trusted: the SM may move LIDs.
constexpr auto PortFactsLifetime = std::chrono::seconds(1);

}  // namespace

void SlEnforcer::configure(SlMode mode, std::chrono::milliseconds resolveTimeout,
                           std::string tablePath) {
    mode_ = mode;
    resolveTimeout_ = resolveTimeout;
    tablePath_ = std::move(tablePath);
    if (mode_ != SlMode::Respect) table_ = PathTable::open(tablePath_);
}

void SlEnforcer::reopenTable() {
    if (mode_ != SlMode::Respect) table_ = PathTable::open(tablePath_);
}

SlEnforcer::PortState* SlEnforcer::portState(ibv_context* context, uint8_t port,
                                             const std::string& device) {
    static std::atomic<void*> queryPortSlot{nullptr}, queryGidSlot{nullptr};
    const auto queryPort = cachedSymbol<QueryPortFn>(queryPortSlot, "ibv_query_port");
    const auto queryGid = cachedSymbol<QueryGidFn>(queryGidSlot, "ibv_query_gid");
    auto now = std::chrono::steady_clock::now();
    auto it = ports_.find({context, port});
    if (it != ports_.end() && now - it->second.at < PortFactsLifetime) return &it->second;
    ibv_port_attr attr{};
    ibv_gid gid{};
    if (!queryPort || !queryGid || queryPort(context, port, &attr) != 0 ||
        (attr.link_layer != IBV_LINK_LAYER_ETHERNET && queryGid(context, port, 0, &gid) != 0)) {
        log_("port:" + device + ":" + std::to_string(port),
             "cannot query " + device + " port " + std::to_string(port) +
                 "; its QPs keep the application's SL");
        return nullptr;
    }
    PortState& state = ports_[{context, port}];
    state.at = now;
    state.pkeys.clear();
    state.facts.ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    state.facts.lid = attr.lid;
    state.facts.lmc = attr.lmc;
    state.facts.subnetPrefix = subnetPrefixOf(gid);
    return &state;
}

std::optional<uint16_t> SlEnforcer::pkeyOf(ibv_context* context, uint8_t port,
                                           const std::string& device, uint16_t index) {
    static std::atomic<void*> queryPkeySlot{nullptr};
    const auto queryPkey = cachedSymbol<QueryPkeyFn>(queryPkeySlot, "ibv_query_pkey");
    PortState* state = portState(context, port, device);
    if (!state) return std::nullopt;
    if (auto it = state->pkeys.find(index); it != state->pkeys.end()) return it->second;
    __be16 pkey = 0;
    if (!queryPkey || queryPkey(context, port, index, &pkey) != 0) return std::nullopt;
    return state->pkeys[index] = ntohs(pkey);
}

SlEnforcer::Begun SlEnforcer::begin(ibv_context* context, const std::string& device, uint8_t port,
                                    const ibv_ah_attr& av, std::optional<uint16_t> pkey,
                                    bool fromCm) {
    Begun begun;
    if (fromCm) {
        begun.decided = SlDecision{av.sl, SlOutcome::CmPath, std::nullopt};
        return begun;
    }
    PortState* state = portState(context, port, device);
    if (!state) {
        begun.decided = finish(av.sl, std::nullopt);
        return begun;
    }
    if (auto exempt = exemptionOf(state->facts, av)) {
        begun.decided = SlDecision{av.sl, *exempt, std::nullopt};
        return begun;
    }
    AgentMessage& q = begun.question;
    q.kind = MessageKind::Resolve;
    q.device = device;
    q.port = port;
    q.slid = sourceLidOf(state->facts, av.src_path_bits);
    q.dlid = av.dlid;
    q.pkey = pkey;
    if (q.slid == 0 || q.dlid == 0) {
        begun.decided = finish(av.sl, std::nullopt);
        return begun;
    }
    // The agent's published answer, when it has one: no round trip.
    if (table_) {
        PathKey path{q.device, q.port, q.slid, q.dlid, q.pkey};
        if (std::optional<TableAnswer> known = table_->find(path)) {
            AgentMessage m;
            m.kind = MessageKind::Path;
            m.answer = known->found ? PathAnswer::Found : PathAnswer::NoPath;
            if (known->found) m.sl = known->sl;
            begun.decided = finish(av.sl, m);
        }
    }
    return begun;
}

}  // namespace ibqos::host

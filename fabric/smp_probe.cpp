// SPDX-License-Identifier: MIT
// LiveFabric: ibnd_discover_fabric into a Fabric, SMP reads of SL2VL and VLArb, the comparison.
#include "fabric/smp_probe.hpp"

#include <cstring>
#include <span>
#include <unordered_map>

extern "C" {
#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
}

namespace ibqos::probe {

struct LiveFabric::Native {
    ibnd_fabric_t* discovered = nullptr;
    ibmad_port* port = nullptr;
    unsigned timeoutMs = 500;
    std::vector<ibnd_node_t*> nodeOf;  // Fabric node -> discovered node
    ~Native() {
        if (discovered) ibnd_destroy_fabric(discovered);
        if (port) mad_rpc_close_port(port);
    }
};

namespace {

// Port `number` of a discovered node, in the Fabric as port of node `index`: a switch's ports
// have its LID and its port 0's GUID.
FabricPort discoveredPort(ibnd_node_t* node, NodeType type, uint32_t index, unsigned number) {
    FabricPort port;
    port.node = index;
    port.number = static_cast<uint8_t>(number);
    ibnd_port_t* p = node->ports ? node->ports[number] : nullptr;
    if (type == NodeType::Switch) {
        port.lid = node->smalid;
        port.guid = node->ports && node->ports[0] ? node->ports[0]->guid : node->guid;
    }
    if (p) {
        if (type != NodeType::Switch) {
            port.lid = p->base_lid;
            port.lmc = p->lmc;
            port.guid = p->guid;
        }
        port.vlCap = static_cast<uint8_t>(mad_get_field(p->info, 0, IB_PORT_VL_CAP_F));
        port.operVls = static_cast<uint8_t>(mad_get_field(p->info, 0, IB_PORT_OPER_VLS_F));
        port.vlArbHighCap =
            static_cast<uint8_t>(mad_get_field(p->info, 0, IB_PORT_VL_ARBITRATION_HIGH_CAP_F));
        port.vlArbLowCap =
            static_cast<uint8_t>(mad_get_field(p->info, 0, IB_PORT_VL_ARBITRATION_LOW_CAP_F));
        port.mtu = static_cast<uint8_t>(mad_get_field(p->info, 0, IB_PORT_NEIGHBOR_MTU_F));
    }
    return port;
}

// The discovered nodes and ports into f, in the discovery's order, linked, with the SM's port;
// nodeOf gets each Fabric node's discovered node.
void readDiscovery(ibnd_fabric_t* discovered, Fabric& f, std::vector<ibnd_node_t*>& nodeOf) {
    f.source = "the live fabric";
    std::unordered_map<const ibnd_port_t*, uint32_t> portIndex;
    for (ibnd_node_t* node = discovered->nodes; node; node = node->next) {
        FabricNode fn;
        fn.type = node->type == IB_NODE_SWITCH   ? NodeType::Switch
                  : node->type == IB_NODE_ROUTER ? NodeType::Router
                                                 : NodeType::Ca;
        fn.guid = node->guid;
        fn.description = std::string(node->nodedesc, strnlen(node->nodedesc, IB_SMP_DATA_SIZE));
        fn.portCount = static_cast<uint8_t>(node->numports);
        fn.firstPort = static_cast<uint32_t>(f.ports.size());
        fn.enhancedPort0 = node->smaenhsp0 != 0;
        fn.vendorId = mad_get_field(node->info, 0, IB_NODE_VENDORID_F);
        fn.deviceId = static_cast<uint16_t>(mad_get_field(node->info, 0, IB_NODE_DEVID_F));
        fn.revision = mad_get_field(node->info, 0, IB_NODE_REVISION_F);
        uint32_t index = static_cast<uint32_t>(f.nodes.size());
        for (unsigned number = fn.lowestPort(); number <= fn.portCount; ++number) {
            if (ibnd_port_t* p = node->ports ? node->ports[number] : nullptr)
                portIndex.emplace(p, static_cast<uint32_t>(f.ports.size()));
            f.ports.push_back(discoveredPort(node, fn.type, index, number));
        }
        if (fn.type == NodeType::Switch && node->ports && node->ports[0]) {
            // Switch port 0's capabilities are those of the switch's management port.
            ibnd_port_t* p0 = node->ports[0];
            FabricPort& port0 = f.ports[fn.firstPort];
            port0.vlCap = static_cast<uint8_t>(mad_get_field(p0->info, 0, IB_PORT_VL_CAP_F));
            port0.operVls = static_cast<uint8_t>(mad_get_field(p0->info, 0, IB_PORT_OPER_VLS_F));
        }
        f.nodes.push_back(std::move(fn));
        nodeOf.push_back(node);
    }
    for (const auto& [p, index] : portIndex) {
        auto peer = p->remoteport ? portIndex.find(p->remoteport) : portIndex.end();
        if (peer != portIndex.end() && p->portnum != 0) f.ports[index].peer = peer->second;
    }
    f.index();
    // The SM is where the local port's MasterSMLID points.
    ibnd_node_t* from = discovered->from_node;
    if (from && from->ports && discovered->from_portnum <= from->numports &&
        from->ports[discovered->from_portnum]) {
        auto smLid = static_cast<uint16_t>(
            mad_get_field(from->ports[discovered->from_portnum]->info, 0, IB_PORT_SMLID_F));
        if (smLid) f.smPort = f.endpointByLid(smLid);
    }
}

}  // namespace

LiveFabric::~LiveFabric() = default;

std::unique_ptr<LiveFabric> LiveFabric::discover(const ProbeOptions& options, std::string& error) {
    std::unique_ptr<LiveFabric> live(new LiveFabric());
    live->native_ = std::make_unique<Native>();
    Native& n = *live->native_;
    n.timeoutMs = options.timeoutMs;
    char* ca = options.ca.empty() ? nullptr : const_cast<char*>(options.ca.c_str());
    ibnd_config_t config{};
    config.timeout_ms = options.timeoutMs;
    config.retries = options.retries;
    // Discovery opens and closes its own port; ours for the queries is opened after it.
    n.discovered = ibnd_discover_fabric(ca, options.port, nullptr, &config);
    if (!n.discovered) {
        error = "the fabric could not be discovered from the local port" +
                (options.ca.empty() ? std::string() : " of " + options.ca) +
                " (is an HCA present, with umad access?)";
        return nullptr;
    }
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
    n.port = mad_rpc_open_port(ca, options.port, classes, 2);
    if (!n.port) {
        error = "cannot open the local port for SMPs";
        return nullptr;
    }
    mad_rpc_set_timeout(n.port, static_cast<int>(options.timeoutMs));
    mad_rpc_set_retries(n.port, static_cast<int>(options.retries));

    readDiscovery(n.discovered, live->fabric_, n.nodeOf);
    return live;
}

std::optional<Sl2VlTable> LiveFabric::readSl2Vl(uint32_t port, unsigned in, std::string& error) {
    const FabricPort& p = fabric_.ports[port];
    const FabricNode& node = fabric_.nodes[p.node];
    ib_portid_t id{};
    ib_portid_set(&id, p.lid, 0, 0);
    uint32_t mod =
        node.type == NodeType::Switch ? ib::sl2VlModifier(static_cast<uint8_t>(in), p.number) : 0;
    uint8_t data[IB_SMP_DATA_SIZE] = {0};
    ++queries_;
    if (!smp_query_via(data, &id, IB_ATTR_SLVL_TABLE, mod, native_->timeoutMs, native_->port)) {
        error = "no answer to the SL2VL query";
        return std::nullopt;
    }
    return ib::unpackSl2Vl(std::span(data).first<ib::Sl2VlBytes>());
}

std::optional<std::vector<VlArbEntry>> LiveFabric::readVlArb(uint32_t port, bool high, unsigned cap,
                                                             std::string& error) {
    const FabricPort& p = fabric_.ports[port];
    const FabricNode& node = fabric_.nodes[p.node];
    ib_portid_t id{};
    ib_portid_set(&id, p.lid, 0, 0);
    std::vector<VlArbEntry> entries;
    for (unsigned half = 0; half * ib::VlArbBlockEntries < cap; ++half) {
        uint8_t data[IB_SMP_DATA_SIZE] = {0};
        uint32_t mod = ib::vlArbModifier(ib::vlArbBlock(high, half),
                                         node.type == NodeType::Switch ? p.number : 0);
        ++queries_;
        if (!smp_query_via(data, &id, IB_ATTR_VL_ARBITRATION, mod, native_->timeoutMs,
                           native_->port)) {
            error = "no answer to the VLArb query";
            return std::nullopt;
        }
        for (unsigned i = 0; i < ib::VlArbBlockEntries && entries.size() < cap; ++i)
            entries.push_back(ib::vlArbEntry(data[2 * i], data[2 * i + 1]));
    }
    return entries;
}

}  // namespace ibqos::probe

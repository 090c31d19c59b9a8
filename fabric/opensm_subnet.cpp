// SPDX-License-Identifier: MIT
// fabricFromSubnet, livePartitionsKey, confFromOptions: OpenSM's structures read, never written.
#include "fabric/opensm_subnet.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <unordered_map>

#include "ib/qos.hpp"

namespace ibqos::osm {

namespace {

std::string nodeDescription(const osm_node_t& node) {
    const char* text = reinterpret_cast<const char*>(node.node_desc.description);
    return std::string(text, strnlen(text, IB_NODE_DESCRIPTION_SIZE));
}

NodeType nodeType(const osm_node_t& node) {
    switch (node.node_info.node_type) {
        case IB_NODE_TYPE_SWITCH:
            return NodeType::Switch;
        case IB_NODE_TYPE_ROUTER:
            return NodeType::Router;
        default:
            return NodeType::Ca;
    }
}

}  // namespace

osm_physp_t* physpOf(osm_node_t* node, unsigned number) {
    if (number >= node->physp_tbl_size) return nullptr;
    return osm_node_get_physp_ptr(node, number);
}

namespace {

// Calls visit(partition, port GUID, full) for every member of every partition OpenSM made.
template <typename Visit>
void forEachLiveMember(const osm_subn_t& subnet, Visit visit) {
    auto* partitions = const_cast<cl_qmap_t*>(&subnet.prtn_pkey_tbl);
    for (cl_map_item_t* item = cl_qmap_head(partitions); item != cl_qmap_end(partitions);
         item = cl_qmap_next(item)) {
        auto* prtn = reinterpret_cast<osm_prtn_t*>(item);
        visit(*prtn, std::optional<std::pair<uint64_t, bool>>());  // the partition itself
        for (auto [guids, full] : {std::pair<cl_map_t*, bool>{&prtn->full_guid_tbl, true},
                                   {&prtn->part_guid_tbl, false}}) {
            for (cl_map_iterator_t it = cl_map_head(guids); it != cl_map_end(guids);
                 it = cl_map_next(it)) {
                auto* physp = static_cast<osm_physp_t*>(cl_map_obj(it));
                if (physp)
                    visit(*prtn, std::optional(std::pair(cl_ntoh64(physp->port_guid), full)));
            }
        }
    }
}

std::string partitionName(const osm_prtn_t& prtn) {
    return std::string(prtn.name, strnlen(prtn.name, sizeof prtn.name));
}

void sortKey(PartitionsKey& key) {
    for (auto& partition : key)
        std::sort(std::get<2>(partition).begin(), std::get<2>(partition).end());
    std::sort(key.begin(), key.end());
}

std::vector<Partition> livePartitions(const osm_subn_t& subnet, const Fabric& fabric) {
    std::vector<Partition> out;
    forEachLiveMember(subnet, [&](const osm_prtn_t& prtn, auto member) {
        if (!member) {
            Partition p;
            p.name = partitionName(prtn);
            p.pkey = ib::pkeyBase(cl_ntoh16(prtn.pkey));
            p.sl = prtn.sl;
            out.push_back(std::move(p));
            return;
        }
        uint32_t endpoint = fabric.endpointByGuid(member->first);
        if (endpoint != NoPort) out.back().members.push_back({endpoint, member->second});
    });
    return out;
}

}  // namespace

Fabric fabricFromSubnet(const osm_subn_t& subnet, std::vector<osm_node_t*>* nodeOf) {
    Fabric fabric;
    fabric.source = "OpenSM's subnet";
    std::unordered_map<uint64_t, uint32_t> nodeByGuid;
    std::vector<osm_node_t*> nodes;
    auto* table = const_cast<cl_qmap_t*>(&subnet.node_guid_tbl);
    for (cl_map_item_t* item = cl_qmap_head(table); item != cl_qmap_end(table);
         item = cl_qmap_next(item)) {
        auto* node = reinterpret_cast<osm_node_t*>(item);
        FabricNode n;
        n.type = nodeType(*node);
        n.guid = cl_ntoh64(node->node_info.node_guid);
        n.description = nodeDescription(*node);
        n.portCount = node->node_info.num_ports;
        n.firstPort = static_cast<uint32_t>(fabric.ports.size());
        n.enhancedPort0 = node->sw && ib_switch_info_is_enhanced_port0(&node->sw->switch_info);
        uint32_t index = static_cast<uint32_t>(fabric.nodes.size());
        nodeByGuid.emplace(n.guid, index);
        for (unsigned number = n.lowestPort(); number <= n.portCount; ++number) {
            FabricPort port;
            port.node = index;
            port.number = static_cast<uint8_t>(number);
            if (osm_physp_t* physp = physpOf(node, number)) {
                const ib_port_info_t& info = physp->port_info;
                port.guid = cl_ntoh64(physp->port_guid);
                port.lid = cl_ntoh16(info.base_lid);
                port.lmc = ib_port_info_get_lmc(&info);
                port.vlCap = ib_port_info_get_vl_cap(&info);
                port.operVls = ib_port_info_get_op_vls(&info);
                port.vlArbHighCap = info.vl_arb_high_cap;
                port.vlArbLowCap = info.vl_arb_low_cap;
                port.mtu = ib_port_info_get_neighbor_mtu(&info);
            } else if (n.type == NodeType::Switch) {
                port.guid = cl_ntoh64(node->node_info.port_guid);
            }
            fabric.ports.push_back(port);
        }
        if (n.type == NodeType::Switch) {
            // Every port of a switch answers to the switch's LID.
            uint16_t lid = fabric.ports[n.firstPort].lid;
            for (unsigned p = 1; p <= n.portCount; ++p) fabric.ports[n.firstPort + p].lid = lid;
        }
        fabric.nodes.push_back(std::move(n));
        nodes.push_back(node);
    }
    // Links whose both ends are up.
    for (uint32_t index = 0; index < fabric.nodes.size(); ++index) {
        const FabricNode& n = fabric.nodes[index];
        for (unsigned number = std::max(1u, unsigned{n.lowestPort()}); number <= n.portCount;
             ++number) {
            osm_physp_t* physp = physpOf(nodes[index], number);
            if (!physp || !physp->p_remote_physp) continue;
            if (ib_port_info_get_port_state(&physp->port_info) == IB_LINK_DOWN) continue;
            const osm_physp_t* remote = physp->p_remote_physp;
            auto it = nodeByGuid.find(cl_ntoh64(remote->p_node->node_info.node_guid));
            if (it == nodeByGuid.end()) continue;
            uint32_t peer = fabric.portOf(it->second, remote->port_num);
            if (peer != NoPort) fabric.ports[fabric.portOf(index, number)].peer = peer;
        }
    }
    fabric.index();
    fabric.smPort = fabric.endpointByGuid(cl_ntoh64(subnet.sm_port_guid));
    fabric.partitions = livePartitions(subnet, fabric);
    if (nodeOf) *nodeOf = std::move(nodes);
    return fabric;
}

PartitionsKey partitionsKey(const Fabric& fabric) {
    PartitionsKey key;
    for (const Partition& p : fabric.partitions) {
        std::vector<std::pair<uint64_t, bool>> members;
        for (const PartitionMember& m : p.members)
            members.emplace_back(fabric.ports[m.port].guid, m.full);
        key.emplace_back(p.pkey, p.name, std::move(members));
    }
    sortKey(key);
    return key;
}

PartitionsKey livePartitionsKey(const osm_subn_t& subnet) {
    PartitionsKey key;
    forEachLiveMember(subnet, [&](const osm_prtn_t& prtn, auto member) {
        if (!member) {
            key.emplace_back(ib::pkeyBase(cl_ntoh16(prtn.pkey)), partitionName(prtn),
                             std::vector<std::pair<uint64_t, bool>>{});
        } else {
            std::get<2>(key.back()).push_back(*member);
        }
    });
    sortKey(key);
    return key;
}

OpenSmConf confFromOptions(const osm_subn_opt_t& options) {
    OpenSmConf conf;
    conf.file = options.config_file ? options.config_file : "opensm.conf";
    conf.qos = options.qos;
    conf.maxOpVls = options.max_op_vls;
    auto copy = [](const osm_qos_options_t& from, QosOptionSet& to) {
        if (from.max_vls > 0) to.maxVls = from.max_vls;
        if (from.high_limit >= 0) to.highLimit = from.high_limit;
        if (from.vlarb_high) to.vlarbHigh = from.vlarb_high;
        if (from.vlarb_low) to.vlarbLow = from.vlarb_low;
        if (from.sl2vl) to.sl2vl = from.sl2vl;
    };
    copy(options.qos_options, conf.all);
    copy(options.qos_ca_options, conf.ca);
    copy(options.qos_rtr_options, conf.router);
    copy(options.qos_sw0_options, conf.switchPort0);
    copy(options.qos_swe_options, conf.switchExternal);
    // Where each option is written, for what is said of it: the file's line where it holds the
    // value OpenSM uses (OpenSM may also take options from its command line).
    std::string error;
    if (auto source = SourceFile::load(conf.file, error)) {
        Diagnostics unused;
        const OpenSmConf written = readOpenSmConf(*source, unused);
        auto place = [](const QosOptionSet& from, QosOptionSet& to) {
            if (from.highLimit == to.highLimit) to.highLimitAt = from.highLimitAt;
            if (from.vlarbHigh == to.vlarbHigh) to.vlarbHighAt = from.vlarbHighAt;
            if (from.vlarbLow == to.vlarbLow) to.vlarbLowAt = from.vlarbLowAt;
            if (from.sl2vl == to.sl2vl) to.sl2vlAt = from.sl2vlAt;
        };
        place(written.all, conf.all);
        place(written.ca, conf.ca);
        place(written.router, conf.router);
        place(written.switchPort0, conf.switchPort0);
        place(written.switchExternal, conf.switchExternal);
    }
    return conf;
}

}  // namespace ibqos::osm

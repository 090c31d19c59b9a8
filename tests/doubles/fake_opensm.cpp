// SPDX-License-Identifier: MIT
// FakeOpenSm: OpenSM's subnet in memory, and the opensm executable's functions the responder
// calls (in the executable they resolve when OpenSM loads the plugin; here, from this file).
#include "tests/doubles/fake_opensm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/qos.hpp"
#include "ib/sl2vl_vlarb.hpp"

namespace ibqos::doubles {

namespace {

FakeOpenSm* instance = nullptr;

constexpr uint64_t LinkLocal = 0xfe80000000000000ULL;

uint8_t nodeType(NodeType type) {
    switch (type) {
        case NodeType::Switch:
            return IB_NODE_TYPE_SWITCH;
        case NodeType::Router:
            return IB_NODE_TYPE_ROUTER;
        case NodeType::Ca:
            break;
    }
    return IB_NODE_TYPE_CA;
}

// The pkey every endpoint holds (the Default partition, full membership).
ib_net16_t defaultPkey = 0;

}  // namespace

FakeOpenSm* FakeOpenSm::current() { return instance; }

FakeOpenSm::FakeOpenSm(const Fabric& fabric) {
    osm_ = static_cast<osm_opensm_t*>(std::calloc(1, sizeof(osm_opensm_t)));
    // A zeroed rwlock is an unlocked one (PTHREAD_RWLOCK_INITIALIZER).
    osm_->lock.state = CL_INITIALIZED;
    osm_subn_t& subn = osm_->subn;
    subn.p_osm = osm_;
    subn.opt.qos = TRUE;
    subn.opt.subnet_prefix = cl_hton64(LinkLocal);
    cl_qmap_init(&subn.port_guid_tbl);
    cl_qmap_init(&subn.alias_port_guid_tbl);
    cl_qmap_init(&subn.prtn_pkey_tbl);
    defaultPkey = cl_hton16(ib::pkeyOf(ib::DefaultPkey, true));
    if (fabric.smPort != NoPort) subn.sm_port_guid = cl_hton64(fabric.ports[fabric.smPort].guid);

    // Every SL on data VLs, but SL 15 dropped (VL15) by the first switch's tables: the
    // responder's VL15 check has something to find.
    Sl2VlTable usual{}, dropping{};
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) usual[sl] = dropping[sl] = sl % 8;
    dropping[ib::MaxSl] = ib::DropVl;
    bool firstSwitch = true;

    uint16_t maxLid = 0;
    for (const FabricPort& p : fabric.ports)
        maxLid = std::max<uint16_t>(maxLid, p.lid + (1u << p.lmc) - 1);
    byLid_.assign(maxLid + 1u, nullptr);

    for (const FabricNode& n : fabric.nodes) {
        const unsigned physps = n.portCount + 1u;
        auto* node = static_cast<osm_node_t*>(
            std::calloc(1, sizeof(osm_node_t) + sizeof(osm_physp_t) * physps));
        nodes_.push_back(node);
        node->physp_tbl_size = physps;
        node->node_info.node_type = nodeType(n.type);
        node->node_info.num_ports = n.portCount;
        node->node_info.node_guid = cl_hton64(n.guid);
        const bool isSwitch = n.type == NodeType::Switch;
        const bool drops = isSwitch && firstSwitch;
        firstSwitch &= !isSwitch;
        for (unsigned number = n.lowestPort(); number <= n.portCount; ++number) {
            const FabricPort& port = fabric.ports[n.firstPort + number - n.lowestPort()];
            osm_physp_t& physp = node->physp_table[number];
            physp.port_guid = cl_hton64(port.guid);
            physp.port_num = static_cast<uint8_t>(number);
            physp.p_node = node;
            ib_port_info_t& info = physp.port_info;
            info.subnet_prefix = cl_hton64(LinkLocal);
            if (!isSwitch || number == 0) info.base_lid = cl_hton16(port.lid);
            info.mkey_lmc = port.lmc;
            info.mtu_cap = port.mtu ? port.mtu : IB_MTU_LEN_2048;
            info.link_width_active = IB_LINK_WIDTH_ACTIVE_4X;
            info.link_speed = IB_LINK_SPEED_ACTIVE_10 << IB_PORT_LINK_SPEED_SHIFT;
            ib_port_info_set_port_state(&info, IB_LINK_ACTIVE);
            // One SL2VL table per in-port (a switch's out-ports), one for a CA's port.
            const unsigned ins = isSwitch ? physps : 1;
            cl_ptr_vector_construct(&physp.slvl_by_port);
            cl_ptr_vector_init(&physp.slvl_by_port, ins, 1);
            cl_ptr_vector_set_size(&physp.slvl_by_port, ins);
            for (unsigned in = 0; in < ins; ++in) {
                auto& table = sl2vl_.emplace_back(std::make_unique<ib_slvl_table_t>());
                auto packed = ib::packSl2Vl(drops && number != 0 ? dropping : usual);
                std::copy(packed.begin(), packed.end(), table->raw_vl_by_sl);
                cl_ptr_vector_set(&physp.slvl_by_port, in, table.get());
            }
            cl_map_construct(&physp.pkeys.keys);
            cl_map_init(&physp.pkeys.keys, 1);
            cl_map_insert(&physp.pkeys.keys, defaultPkey, &defaultPkey);
        }
        if (isSwitch) node->node_info.port_guid = cl_hton64(fabric.ports[n.firstPort].guid);
    }
    // Links.
    for (const FabricPort& port : fabric.ports) {
        if (port.peer == NoPort) continue;
        const FabricPort& peer = fabric.ports[port.peer];
        nodes_[port.node]->physp_table[port.number].p_remote_physp =
            &nodes_[peer.node]->physp_table[peer.number];
    }
    // Endpoints: the port tables by GUID (no alias GUIDs: the alias table holds each port once)
    // and by LID.
    for (uint32_t i = 0; i < fabric.ports.size(); ++i) {
        if (!fabric.isEndpoint(i)) continue;
        const FabricPort& p = fabric.ports[i];
        auto& port = ports_.emplace_back(std::make_unique<osm_port_t>());
        port->p_node = nodes_[p.node];
        port->p_physp = &nodes_[p.node]->physp_table[p.number];
        port->guid = cl_hton64(p.guid);
        port->lid = cl_hton16(p.lid);
        cl_qmap_insert(&subn.port_guid_tbl, port->guid, &port->map_item);
        auto& alias = aliases_.emplace_back(std::make_unique<osm_alias_guid_t>());
        alias->alias_guid = port->guid;
        alias->p_base_port = port.get();
        cl_qmap_insert(&subn.alias_port_guid_tbl, alias->alias_guid, &alias->map_item);
        for (unsigned l = 0; p.lid && l < (1u << p.lmc); ++l) byLid_[p.lid + l] = port.get();
    }
    // Forwarding tables: for each destination endpoint, a breadth-first search from its node
    // gives every switch the port towards it.
    std::vector<int> switchOf(fabric.nodes.size(), -1);
    for (uint32_t n = 0; n < fabric.nodes.size(); ++n) {
        if (fabric.nodes[n].type != NodeType::Switch) continue;
        switchOf[n] = static_cast<int>(switches_.size());
        auto& sw = switches_.emplace_back(std::make_unique<osm_switch_t>());
        auto& lft = lfts_.emplace_back(maxLid + 1u, OSM_NO_PATH);
        sw->p_node = nodes_[n];
        sw->max_lid_ho = maxLid;
        sw->lft = sw->new_lft = lft.data();
        sw->num_ports = static_cast<uint8_t>(fabric.nodes[n].portCount + 1);
        nodes_[n]->sw = sw.get();
    }
    for (uint32_t i = 0; i < fabric.ports.size(); ++i) {
        if (!fabric.isEndpoint(i) || !fabric.ports[i].lid) continue;
        const FabricPort& target = fabric.ports[i];
        std::vector<int> hop(fabric.nodes.size(), -1);  // the port a node leaves by
        std::vector<bool> seen(fabric.nodes.size(), false);
        std::deque<uint32_t> queue{target.node};
        seen[target.node] = true;
        if (switchOf[target.node] >= 0) hop[target.node] = 0;
        while (!queue.empty()) {
            uint32_t at = queue.front();
            queue.pop_front();
            // Paths go on only through switches (a CA does not forward).
            if (at != target.node && fabric.nodes[at].type != NodeType::Switch) continue;
            const FabricNode& node = fabric.nodes[at];
            for (unsigned number = 1; number <= node.portCount; ++number) {
                uint32_t here = fabric.portOf(at, number);
                if (here == NoPort || fabric.ports[here].peer == NoPort) continue;
                const FabricPort& there = fabric.ports[fabric.ports[here].peer];
                if (seen[there.node]) continue;
                seen[there.node] = true;
                hop[there.node] = there.number;
                queue.push_back(there.node);
            }
        }
        for (uint32_t n = 0; n < fabric.nodes.size(); ++n) {
            if (switchOf[n] < 0 || hop[n] < 0) continue;
            for (unsigned l = 0; l < (1u << target.lmc); ++l)
                lfts_[switchOf[n]][target.lid + l] = static_cast<uint8_t>(hop[n]);
        }
    }
    instance = this;
}

FakeOpenSm::~FakeOpenSm() {
    if (instance == this) instance = nullptr;
    for (osm_node_t* node : nodes_) {
        for (unsigned i = 0; i < node->physp_tbl_size; ++i) {
            osm_physp_t& physp = node->physp_table[i];
            if (!physp.port_guid) continue;
            cl_ptr_vector_destroy(&physp.slvl_by_port);
            cl_map_destroy(&physp.pkeys.keys);
        }
        std::free(node);
    }
    std::free(osm_);
}

osm_madw_t* FakeOpenSm::wrap(std::span<const uint8_t> mad, uint16_t requesterLid) {
    mad_.assign(ib::MadSize, 0);
    std::copy_n(mad.begin(), std::min(mad.size(), ib::MadSize), mad_.begin());
    madw_ = {};
    madw_.p_mad = reinterpret_cast<const ib_mad_t*>(mad_.data());
    madw_.mad_size = static_cast<uint32_t>(ib::MadSize);
    madw_.mad_addr.dest_lid = cl_hton16(requesterLid);
    outcome_ = {};
    return &madw_;
}

osm_port_t* FakeOpenSm::portByLid(uint16_t lid) const {
    return lid < byLid_.size() ? byLid_[lid] : nullptr;
}

void FakeOpenSm::respond(osm_madw_t* madw, cl_qlist_t* records) {
    // osm_sa_respond's answer: the request's SA header with the response method, the status for
    // the count, then the records (one MAD's worth; OpenSM sends the rest by RMPP).
    const auto* request = reinterpret_cast<const uint8_t*>(madw->p_mad);
    std::vector<uint8_t>& answer = outcome_.answer;
    answer.assign(request, request + ib::SaHeaderSize);
    answer.resize(ib::MadSize, 0);
    const uint8_t method = request[ib::at::Method];
    answer[ib::at::Method] = method | ib::ResponseBit;
    size_t count = cl_qlist_count(records);
    outcome_.records = count;
    uint16_t status = 0;
    if (method == ib::MethodGet && count == 0) status = ib::StatusNoRecords;
    if (method == ib::MethodGet && count > 1)
        status = ib::saStatus(UMAD_SA_STATUS_TOO_MANY_RECORDS);
    ib::put16(&answer[ib::at::Status], status);
    ib::put16(&answer[ib::at::AttributeOffset], ib::PathRecordSize / 8);
    size_t at = ib::SaHeaderSize;
    while (cl_qlist_count(records)) {
        auto* item = reinterpret_cast<osm_sa_item_t*>(cl_qlist_remove_head(records));
        if (at + ib::PathRecordSize <= ib::MadSize && status == 0) {
            std::memcpy(&answer[at], &item->resp.path_rec, ib::PathRecordSize);
            at += ib::PathRecordSize;
        }
        std::free(item);
    }
}

}  // namespace ibqos::doubles

// The opensm executable's functions, as the responder uses them. Every port shares the Default
// partition with every other.
using ibqos::doubles::FakeOpenSm;

extern "C" {

osm_port_t* osm_get_port_by_guid(const osm_subn_t* subn, ib_net64_t guid) {
    auto* table = const_cast<cl_qmap_t*>(&subn->port_guid_tbl);
    cl_map_item_t* item = cl_qmap_get(table, guid);
    return item == cl_qmap_end(table) ? nullptr : reinterpret_cast<osm_port_t*>(item);
}

osm_port_t* osm_get_port_by_lid_ho(const osm_subn_t*, uint16_t lid) {
    return FakeOpenSm::current() ? FakeOpenSm::current()->portByLid(lid) : nullptr;
}

osm_port_t* osm_get_port_by_mad_addr(osm_log_t*, const osm_subn_t*, osm_mad_addr_t* address) {
    return osm_get_port_by_lid_ho(nullptr, cl_ntoh16(address->dest_lid));
}

boolean_t osm_physp_share_this_pkey(const osm_physp_t*, const osm_physp_t*, ib_net16_t pkey,
                                    boolean_t) {
    return ibqos::ib::pkeyBase(cl_ntoh16(pkey)) == ibqos::ib::DefaultPkey;
}

ib_net16_t osm_physp_find_common_pkey(const osm_physp_t*, const osm_physp_t*, boolean_t) {
    return cl_hton16(ibqos::ib::pkeyOf(ibqos::ib::DefaultPkey, true));
}

boolean_t osm_port_share_pkey(osm_log_t*, const osm_port_t*, const osm_port_t*, boolean_t) {
    return TRUE;
}

void osm_port_get_lid_range_ho(const osm_port_t* port, uint16_t* min, uint16_t* max) {
    const ib_port_info_t& info = port->p_physp->port_info;
    *min = cl_ntoh16(info.base_lid);
    *max = static_cast<uint16_t>(*min + (1u << ib_port_info_get_lmc(&info)) - 1);
}

void osm_sa_respond(osm_sa_t*, osm_madw_t* madw, size_t, cl_qlist_t* records) {
    FakeOpenSm::current()->respond(madw, records);
}

void osm_pr_rcv_process(void*, void*) { FakeOpenSm::current()->delegate(); }

void osm_mpr_rcv_process(void*, void*) { FakeOpenSm::current()->delegate(); }
}

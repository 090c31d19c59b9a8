// SPDX-License-Identifier: MIT
// PathResponder: PathRecord answers from the compiled classifier, computed on OpenSM's subnet the
// way OpenSM 3.3.23's SA computes them (osm_sa_path_record.c, read for its behaviour): the route
// walked switch by switch for the MTU, the rate and the SLs that reach a data VL, then the QoS
// level's limits, the request's selectors, the PKey, the SL and the routing engine's say.
#include "osm-plugin/path_responder.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/qos.hpp"
#include "osm-plugin/opensm_lock.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/path_request.hpp"

namespace ibqos::osm {

namespace {

namespace pr_mask = ib::pr_mask;
using ib::Selector;

// OpenSM gives up on a route longer than this many switches (its MAX_HOPS).
constexpr int MaxHops = 64;

// One request, decoded once.
struct Request {
    uint8_t method = 0;
    uint64_t mask = 0;
    ib::PathRecord record;
    ib::QosFields qos;  // what the classifier matches
    bool has(uint64_t bits) const { return (mask & bits) == bits; }
    // A selector and its value count only together.
    bool selects(uint64_t selectorBit, uint64_t valueBit) const {
        return has(selectorBit | valueBit);
    }
    bool rawTraffic() const { return has(pr_mask::RawTraffic) && record.rawTraffic; }
};

// The parameters of one direction of a path (OpenSM's osm_path_parms_t).
struct PathParams {
    uint8_t mtu = 0, rate = 0, packetLife = 0, sl = 0;
    uint16_t pkey = 0;  // host order, as answered
};

bool extendedSpeeds(const ib_port_info_t& info) {
    return (info.capability_mask & IB_PORT_CAP_HAS_EXT_SPEEDS) != 0;
}

// Mellanox's Tavor HCAs perform better at a 1 KB MTU: with OpenSM's enable_quirks, a path with a
// Tavor end gets at most that, unless the request asks for more.
bool isTavor(const osm_port_t* port) {
    const ib_node_info_t& info = port->p_node->node_info;
    uint32_t vendor = cl_ntoh32(ib_node_info_get_vendor_id(&info));
    return cl_ntoh16(info.device_id) == 23108 &&
           (vendor == OSM_VENDOR_ID_MELLANOX || vendor == OSM_VENDOR_ID_TOPSPIN ||
            vendor == OSM_VENDOR_ID_SILVERSTORM || vendor == OSM_VENDOR_ID_VOLTAIRE);
}

bool tavorLimitApplies(const Request& r, const osm_port_t* src, const osm_port_t* dst) {
    if (!isTavor(src) && !isTavor(dst)) return false;
    if (!r.selects(pr_mask::MtuSelector, pr_mask::Mtu)) return true;
    switch (static_cast<Selector>(r.record.mtuSelector)) {
        case Selector::GreaterThan:
        case Selector::Exactly:
            return r.record.mtu <= IB_MTU_LEN_1024;
        case Selector::LessThan:
            return true;
        case Selector::Best:
            return false;
    }
    return false;
}

// Drops from `valid` the SLs that a port's SL2VL table (for traffic entering at inPort) sends
// to VL15.
void dropVl15(uint16_t& valid, const osm_physp_t* port, uint8_t inPort) {
    const ib_slvl_table_t* table = osm_physp_get_slvl_tbl(port, inPort);
    for (uint8_t sl = 0; sl < ib::SlCount; ++sl) {
        if (ib_slvl_table_get(table, sl) == ib::DropVl) valid &= static_cast<uint16_t>(~(1u << sl));
    }
}

// OpenSM tests an SL against the mask of usable SLs as (mask & (1 << sl)) on an int: x86 keeps
// the low five bits of the shift count, so a level's sl above 15 is usable only as sl % 32.
bool slUsable(uint16_t valid, uint8_t sl) {
    return (sl & 31) < ib::SlCount && (valid >> (sl & 31) & 1);
}

// Applies a request's selector to a path's MTU or packet life: `value` is what the path offers,
// `wanted` what the request names. Returns false when the path cannot meet it.
bool selectNumber(uint8_t& value, uint8_t selector, uint8_t wanted) {
    switch (static_cast<Selector>(selector)) {
        case Selector::GreaterThan:
            return value > wanted;
        case Selector::LessThan:
            // The largest value below the one named; nothing is below 1.
            if (value >= wanted) {
                if (wanted <= 1) return false;
                value = static_cast<uint8_t>(wanted - 1);
            }
            return true;
        case Selector::Exactly:
            if (value < wanted) return false;
            value = wanted;
            return true;
        case Selector::Best:
            return true;
    }
    return false;
}

// The same for a rate, compared in OpenSM's order of the rate enum; "exactly" asks for the
// path's own rate here, not for one it could be lowered to.
bool selectRate(uint8_t& rate, uint8_t selector, uint8_t wanted) {
    const int order = ib_path_compare_rates(rate, wanted);
    switch (static_cast<Selector>(selector)) {
        case Selector::GreaterThan:
            return order > 0;
        case Selector::LessThan:
            if (order >= 0) {
                rate = static_cast<uint8_t>(ib_path_rate_get_prev(wanted));
                return rate != 0;
            }
            return true;
        case Selector::Exactly:
            if (order != 0) return false;
            rate = wanted;
            return true;
        case Selector::Best:
            return true;
    }
    return false;
}

// One direction of a path as OpenSM's SA computes it.
class PathComputation {
  public:
    PathComputation(osm_opensm_t& osm, const CompiledSweep* sweep, const Request& request)
        : osm_(osm), subn_(osm.subn), sweep_(sweep), request_(request) {}

    // The parameters of the path from src (at slid) to dst (at dlid), or nullopt when OpenSM
    // finds none.
    std::optional<PathParams> compute(const osm_port_t* src, uint16_t slid, const osm_port_t* dst,
                                      uint16_t dlid) const;

  private:
    // The path's parameters as its ports limit them, the SLs none of them sends to VL15 and
    // the port the path ends at; nullopt when there is no route (or every SL is dropped).
    struct Route {
        PathParams params;
        uint16_t validSls = 0;
        const osm_physp_t* dstPort = nullptr;
    };
    std::optional<Route> route(const osm_port_t* src, const osm_port_t* dst, uint16_t dlid) const;
    // Whether the parameters meet the request's selectors (each may lower its parameter).
    bool selectorsMet(PathParams& p) const;
    // The path's PKey into p; false when OpenSM finds none.
    bool choosePkey(PathParams& p, const QosLevel* lvl, const osm_physp_t* srcEnd,
                    const osm_physp_t* dstPort) const;
    // The path's SL into p; false when it is not usable on the route.
    bool chooseSl(PathParams& p, const QosLevel* lvl, uint16_t valid) const;
    // The QoS level of the request from src to dst, or nullptr without a policy in force.
    const QosLevel* level(const osm_port_t* src, const osm_port_t* dst) const;
    // The first of the level's PKeys (ascending) both ends share, in host order; 0 when none.
    uint16_t levelPkey(const QosLevel& level, const osm_physp_t* src, const osm_physp_t* dst) const;

    osm_opensm_t& osm_;
    const osm_subn_t& subn_;
    const CompiledSweep* sweep_;
    const Request& request_;
};

const QosLevel* PathComputation::level(const osm_port_t* src, const osm_port_t* dst) const {
    if (!subn_.opt.qos || !sweep_) return nullptr;
    PathQuery query;
    static_cast<ib::QosFields&>(query) = request_.qos;
    query.source = sweep_->fabric().endpointByGuid(cl_ntoh64(osm_port_get_guid(src)));
    query.destination = sweep_->fabric().endpointByGuid(cl_ntoh64(osm_port_get_guid(dst)));
    return &sweep_->policy().levels[sweep_->classifier().match(query).level];
}

uint16_t PathComputation::levelPkey(const QosLevel& level, const osm_physp_t* src,
                                    const osm_physp_t* dst) const {
    // OpenSM tries the level's PKeys in ascending order and takes the first both ends share;
    // only a PKey in the source's table can be shared, so its table gives the candidates.
    uint16_t best = 0;
    const cl_map_t& keys = src->pkeys.keys;
    for (cl_map_iterator_t i = cl_map_head(&keys); i != cl_map_end(&keys); i = cl_map_next(i)) {
        // With allow_both_pkeys the keys hold the membership bit.
        uint16_t base = ib::pkeyBase(cl_ntoh16(static_cast<ib_net16_t>(cl_map_key(i))));
        if ((best == 0 || base < best) && level.pkeys.contains(base) &&
            osm_physp_share_this_pkey(src, dst, cl_hton16(base), subn_.opt.allow_both_pkeys)) {
            best = base;
        }
    }
    return best;
}

std::optional<PathComputation::Route> PathComputation::route(const osm_port_t* src,
                                                             const osm_port_t* dst,
                                                             uint16_t dlid) const {
    const Request& r = request_;
    const ib_net16_t dlidNet = cl_hton16(dlid);
    const osm_physp_t* srcPort = src->p_physp;
    const osm_physp_t* dstPort = dst->p_physp;
    const bool qos = subn_.opt.qos;
    PathParams p;
    p.mtu = ib_port_info_get_mtu_cap(&srcPort->port_info);
    p.rate = ib_port_info_compute_rate(&srcPort->port_info, extendedSpeeds(srcPort->port_info));
    if (subn_.opt.enable_quirks && tavorLimitApplies(r, src, dst) && p.mtu > IB_MTU_LEN_1024) {
        p.mtu = IB_MTU_LEN_1024;
    }
    auto limitBy = [&p](const ib_port_info_t& info, int extended) {
        p.mtu = std::min(p.mtu, ib_port_info_get_mtu_cap(&info));
        uint8_t rate = ib_port_info_compute_rate(&info, extended);
        if (ib_path_compare_rates(p.rate, rate) > 0) p.rate = rate;
    };

    // From a switch, the path leaves by the port that routes the destination LID; to a switch,
    // it ends at the port its own LID routes to (port 0).
    const osm_physp_t* at = srcPort;
    if (src->p_node->sw) {
        at = osm_switch_get_route_by_lid(src->p_node->sw, dlidNet);
        if (!at) return std::nullopt;
    }
    uint16_t valid = 0xffff;  // the SLs no port so far sends to VL15
    if (qos) {
        dropVl15(valid, at, 0);
        if (!valid) return std::nullopt;
    }
    if (dst->p_node->sw) {
        dstPort = osm_switch_get_route_by_lid(dst->p_node->sw, dlidNet);
        if (!dstPort) return std::nullopt;
    }
    for (int hops = 0; at != dstPort;) {
        const osm_physp_t* in = osm_physp_get_remote(at);
        if (!in) return std::nullopt;
        if (in == dstPort) break;
        osm_node_t* node = osm_physp_get_node_ptr(in);
        if (!node->sw) return std::nullopt;
        // A switch's ports report rates by its port 0's extended-speed capability.
        const int extended = extendedSpeeds(osm_node_get_physp_ptr(node, 0)->port_info);
        limitBy(in->port_info, extended);
        at = osm_switch_get_route_by_lid(node->sw, dlidNet);
        if (!at) return std::nullopt;
        limitBy(at->port_info, extended);
        if (qos) {
            dropVl15(valid, at, osm_physp_get_port_num(in));
            if (!valid) return std::nullopt;
        }
        if (++hops > MaxHops) return std::nullopt;
    }
    limitBy(dstPort->port_info, extendedSpeeds(dstPort->port_info));
    return Route{p, valid, dstPort};
}

bool PathComputation::selectorsMet(PathParams& p) const {
    // The request's selectors; one without its value is ignored.
    const Request& r = request_;
    const ib::PathRecord& want = r.record;
    if (r.selects(pr_mask::MtuSelector, pr_mask::Mtu) &&
        !selectNumber(p.mtu, want.mtuSelector, want.mtu)) {
        return false;
    }
    if (r.selects(pr_mask::RateSelector, pr_mask::Rate) &&
        !selectRate(p.rate, want.rateSelector, want.rate)) {
        return false;
    }
    // For packet life, selector 3 asks for the smallest, which the path has.
    if (r.selects(pr_mask::PacketLifeSelector, pr_mask::PacketLife) &&
        !selectNumber(p.packetLife, want.packetLifeSelector, want.packetLife)) {
        return false;
    }
    return true;
}

bool PathComputation::choosePkey(PathParams& p, const QosLevel* lvl, const osm_physp_t* srcEnd,
                                 const osm_physp_t* dstPort) const {
    // The PKey: any shared one for raw traffic; the requested one, if both ends share it and
    // the level allows it; the level's first shared one; else any shared one.
    const Request& r = request_;
    const bool bothPkeys = subn_.opt.allow_both_pkeys;
    if (r.rawTraffic()) {
        p.pkey = cl_ntoh16(osm_physp_find_common_pkey(srcEnd, dstPort, bothPkeys));
    } else if (r.has(pr_mask::Pkey)) {
        p.pkey = r.record.pkey;
        if (!osm_physp_share_this_pkey(srcEnd, dstPort, cl_hton16(p.pkey), bothPkeys)) return false;
        if (lvl && !lvl->pkeys.empty() && !lvl->pkeys.contains(ib::pkeyBase(p.pkey))) return false;
    } else if (lvl && !lvl->pkeys.empty()) {
        p.pkey = levelPkey(*lvl, srcEnd, dstPort);
        if (!p.pkey) return false;
    } else {
        p.pkey = cl_ntoh16(osm_physp_find_common_pkey(srcEnd, dstPort, bothPkeys));
        if (!p.pkey) return false;
    }
    return true;
}

bool PathComputation::chooseSl(PathParams& p, const QosLevel* lvl, uint16_t valid) const {
    // The SL: the requested one (if the level has none or the same), the level's, the
    // partition's, or the first usable.
    const Request& r = request_;
    const bool qos = subn_.opt.qos;
    if (r.has(pr_mask::Sl)) {
        p.sl = r.record.sl;
        if (lvl && lvl->sl != p.sl) return false;
    } else if (lvl) {
        p.sl = lvl->sl;
    } else if (p.pkey) {
        const osm_prtn_t* partition = reinterpret_cast<const osm_prtn_t*>(
            cl_qmap_get(&subn_.prtn_pkey_tbl, cl_hton16(ib::pkeyBase(p.pkey))));
        p.sl = partition == reinterpret_cast<const osm_prtn_t*>(cl_qmap_end(&subn_.prtn_pkey_tbl))
                   ? OSM_DEFAULT_SL
                   : partition->sl;
    } else if (qos && !slUsable(valid, OSM_DEFAULT_SL)) {
        p.sl = 0;
        while (p.sl < ib::SlCount && !slUsable(valid, p.sl)) ++p.sl;
    } else {
        p.sl = OSM_DEFAULT_SL;
    }
    return !(qos && !slUsable(valid, p.sl));
}

std::optional<PathParams> PathComputation::compute(const osm_port_t* src, uint16_t slid,
                                                   const osm_port_t* dst, uint16_t dlid) const {
    const Request& r = request_;
    std::optional<Route> routed = route(src, dst, dlid);
    if (!routed) return std::nullopt;
    PathParams& p = routed->params;
    const uint16_t valid = routed->validSls;

    const QosLevel* lvl = level(src, dst);
    if (lvl) {
        if (lvl->mtuLimit && p.mtu > *lvl->mtuLimit) p.mtu = *lvl->mtuLimit;
        if (lvl->rateLimit && ib_path_compare_rates(p.rate, *lvl->rateLimit) > 0)
            p.rate = *lvl->rateLimit;
        if (!slUsable(valid, lvl->sl)) return std::nullopt;
    }
    // IBA: a loopback path has packet life 0.
    p.packetLife = src == dst               ? 0
                   : lvl && lvl->packetLife ? *lvl->packetLife
                                            : subn_.opt.subnet_timeout;
    if (!selectorsMet(p)) return std::nullopt;
    if (!choosePkey(p, lvl, src->p_physp, routed->dstPort)) return std::nullopt;
    if (!chooseSl(p, lvl, valid)) return std::nullopt;

    // A routing engine that keeps its routes deadlock-free by SL has the last word.
    const osm_routing_engine_t* engine = osm_.routing_engine_used;
    if (engine && engine->path_sl) {
        uint8_t hint = p.sl;
        p.sl = engine->path_sl(engine->context, hint, cl_hton16(slid), cl_hton16(dlid));
        if (r.has(pr_mask::Sl) && p.sl != hint) return std::nullopt;
    }
    if (r.rawTraffic()) p.pkey = 0;
    return p;
}

// The record OpenSM answers for one LID pair (pr_rcv_build_pr): the ends' GIDs (the requested
// SGID as given), the parameters with selector "exactly", qos-class and service id 0.
ib::PathRecord buildRecord(const osm_subn_t& subn, const Request& r, const osm_port_t* src,
                           uint16_t slid, const osm_port_t* dst, uint16_t dlid, const PathParams& p,
                           bool reversible, uint8_t preference) {
    ib::PathRecord out;
    out.dgid = ib::Gid::fromParts(cl_ntoh64(osm_physp_get_subnet_prefix(dst->p_physp)),
                                  cl_ntoh64(osm_port_get_guid(dst)));
    out.sgid = r.has(pr_mask::Sgid)
                   ? r.record.sgid
                   : ib::Gid::fromParts(cl_ntoh64(osm_physp_get_subnet_prefix(src->p_physp)),
                                        cl_ntoh64(osm_port_get_guid(src)));
    out.dlid = dlid;
    out.slid = slid;
    out.pkey = p.pkey;
    out.sl = static_cast<uint8_t>(p.sl & ib::MaxSl);
    const ib::SelectedValue mtu = ib::exactlyAsOpenSmWrites(p.mtu);
    out.mtuSelector = mtu.selector;
    out.mtu = mtu.value;
    uint8_t rate = p.rate;
    if (subn.opt.use_original_extended_sa_rates_only) {
        rate = static_cast<uint8_t>(ib_path_rate_max_12xedr(rate));
    } else if (rate >= IB_PATH_RECORD_RATE_28_GBS) {
        // The 2x and HDR rates only where the ends can carry them.
        auto fix = [&rate, &subn](uint16_t lid) {
            if (const osm_port_t* port = osm_get_port_by_lid_ho(&subn, lid))
                rate = static_cast<uint8_t>(
                    ib_path_rate_2x_hdr_fixups(&port->p_physp->port_info, rate));
        };
        fix(slid);
        if (reversible) fix(dlid);
    }
    const ib::SelectedValue answeredRate = ib::exactlyAsOpenSmWrites(rate);
    out.rateSelector = answeredRate.selector;
    out.rate = answeredRate.value;
    // A level's packet life above 63 (OpenSM accepts it) spills into the selector.
    const ib::SelectedValue life = ib::exactlyAsOpenSmWrites(src == dst ? 0 : p.packetLife);
    out.packetLifeSelector = life.selector;
    out.packetLife = life.value;
    out.preference = preference;
    out.reversible = reversible;  // NumbPath stays 0 in an answer
    return out;
}

// The records of one port pair (pr_rcv_get_port_pair_paths), appended to `records`.
void portPairPaths(osm_opensm_t& osm, const CompiledSweep* sweep, const Request& r,
                   const osm_port_t* requester, const osm_port_t* src, const osm_port_t* dst,
                   cl_qlist_t& records, uint64_t& count) {
    const osm_subn_t& subn = osm.subn;
    const boolean_t bothPkeys = subn.opt.allow_both_pkeys;
    osm_log_t* log = &osm.log;
    // The requester and both ends must share a partition, pairwise.
    if (!osm_port_share_pkey(log, requester, src, bothPkeys) ||
        !osm_port_share_pkey(log, requester, dst, bothPkeys) ||
        !osm_port_share_pkey(log, src, dst, bothPkeys)) {
        return;
    }
    uint16_t srcLow, srcHigh, dstLow, dstHigh;
    osm_port_get_lid_range_ho(src, &srcLow, &srcHigh);
    osm_port_get_lid_range_ho(dst, &dstLow, &dstHigh);
    if (r.has(pr_mask::Slid)) srcLow = srcHigh = r.record.slid;
    if (r.has(pr_mask::Dlid)) dstLow = dstHigh = r.record.dlid;
    if (srcLow == 0 || dstLow == 0) return;
    // Wide enough that the loops below end at LID 0xffff too.
    const unsigned srcMin = srcLow, srcMax = srcHigh, dstMin = dstLow, dstMax = dstHigh;

    const PathComputation paths(osm, sweep, r);
    auto add = [&](unsigned slidWide, unsigned dlidWide, uint8_t preference) {
        const auto slid = static_cast<uint16_t>(slidWide), dlid = static_cast<uint16_t>(dlidWide);
        std::optional<PathParams> forward = paths.compute(src, slid, dst, dlid);
        if (!forward) return false;
        const bool reversible = paths.compute(dst, dlid, src, slid).has_value();
        // A request for reversible paths only (Reversible in the mask and its bit set).
        if (r.has(pr_mask::Reversible) && r.record.reversible && !reversible) return false;
        // A whole osm_sa_item_t (OpenSM allocates only up to the record, SA_ITEM_RESP_SIZE, and
        // then reaches its members through a pointer to more than that: undefined behaviour
        // that UBSan reports); osm_sa_respond frees it with free().
        auto* item = static_cast<osm_sa_item_t*>(
            std::calloc(1, std::max(sizeof(osm_sa_item_t), SA_ITEM_RESP_SIZE(path_rec))));
        if (!item) return false;
        auto bytes = ib::encodePathRecord(
            buildRecord(subn, r, src, slid, dst, dlid, *forward, reversible, preference));
        std::memcpy(&item->resp.path_rec, bytes.data(), bytes.size());
        cl_qlist_insert_tail(&records, &item->list_item);
        ++count;
        return true;
    };

    // SubnAdmGet asks for one path; GetTable for NumbPath of them, or all.
    const uint32_t wanted = r.method == ib::MethodGet  ? 1
                            : r.has(pr_mask::NumbPath) ? r.record.numbPath
                                                       : UINT32_MAX;
    uint32_t found = 0;
    // First the pairs of distinct LIDs on both sides (preference 0), then the rest (2).
    for (unsigned s = srcMin, d = dstMin; found < wanted;) {
        found += add(s, d, 0);
        if (++s > srcMax || ++d > dstMax) break;
    }
    for (unsigned so = 0, dOff = 0; found < wanted;) {
        if (++dOff > dstMax - dstMin) {
            dOff = 0;
            if (++so > srcMax - srcMin) break;
        }
        if (so == dOff) continue;
        found += add(srcMin + so, dstMin + dOff, 2);
    }
}

bool linkLocal(uint64_t prefix) { return (prefix & 0xffc0000000000000ULL) == ib::LinkLocalPrefix; }

}  // namespace

const char* delegatedName(Delegated kind) {
    switch (kind) {
        case Delegated::MultiPathRecord:
            return "multipath";
        case Delegated::Multicast:
            return "multicast";
        case Delegated::Routed:
            return "routed";
        case Delegated::OneEnd:
            return "one-end";
        case Delegated::AliasGuids:
            return "alias-guids";
        case Delegated::UnknownPort:
            return "unknown-port";
        case Delegated::Refused:
            return "refused";
        case Delegated::PolicyChange:
            return "policy-change";
    }
    return "";
}

PathResponder::PathResponder(osm_opensm_t* osm, Log log) : osm_(osm), log_(std::move(log)) {}

bool PathResponder::install() {
    osm_sa_t& sa = osm_->sa;
    // A message id takes one handler: OpenSM's goes first. No request can be in flight yet.
    cl_disp_unregister(sa.pr_disp_h);
    sa.pr_disp_h = cl_disp_register(&osm_->disp, OSM_MSG_MAD_PATH_RECORD, onPathRecord, this);
    if (sa.pr_disp_h == CL_DISP_INVALID_HANDLE) {
        sa.pr_disp_h =
            cl_disp_register(&osm_->disp, OSM_MSG_MAD_PATH_RECORD, osm_pr_rcv_process, &sa);
        log_(OSM_LOG_ERROR, "0050",
             "cannot register the PathRecord responder with OpenSM's dispatcher: OpenSM's own "
             "handler answers PathRecords, from the plain policy");
        return false;
    }
    // MultiPathRecords are counted on their way to OpenSM's handler.
    cl_disp_unregister(sa.mpr_disp_h);
    sa.mpr_disp_h =
        cl_disp_register(&osm_->disp, OSM_MSG_MAD_MULTIPATH_RECORD, onMultiPathRecord, this);
    if (sa.mpr_disp_h == CL_DISP_INVALID_HANDLE) {
        sa.mpr_disp_h =
            cl_disp_register(&osm_->disp, OSM_MSG_MAD_MULTIPATH_RECORD, osm_mpr_rcv_process, &sa);
    }
    return true;
}

ResponderCounts PathResponder::takeCounts() {
    ResponderCounts c;
    c.answered = answered_.exchange(0);
    c.records = records_.exchange(0);
    for (size_t i = 0; i < DelegatedKinds; ++i) c.delegated[i] = delegated_[i].exchange(0);
    return c;
}

void PathResponder::onPathRecord(void* context, void* data) {
    auto* self = static_cast<PathResponder*>(context);
    auto* madw = static_cast<osm_madw_t*>(data);
    std::optional<Delegated> why;
    try {
        why = self->answer(madw);
    } catch (...) {
        // Nothing was sent: OpenSM's handler answers this one.
        why = Delegated::Refused;
    }
    if (why) self->delegate(madw, *why);
}

void PathResponder::onMultiPathRecord(void* context, void* data) {
    auto* self = static_cast<PathResponder*>(context);
    self->delegated_[static_cast<size_t>(Delegated::MultiPathRecord)].fetch_add(
        1, std::memory_order_relaxed);
    osm_mpr_rcv_process(&self->osm_->sa, data);
}

void PathResponder::delegate(osm_madw_t* madw, Delegated why) {
    delegated_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
    osm_pr_rcv_process(&osm_->sa, madw);
}

std::optional<Delegated> PathResponder::answer(osm_madw_t* madw) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(osm_madw_get_sa_mad_ptr(madw));
    std::span<const uint8_t> mad(bytes, ib::MadSize);
    Request r;
    r.method = mad[ib::at::Method];
    r.mask = ib::get64(mad, ib::at::ComponentMask);
    r.record = ib::decodePathRecord(mad.subspan(ib::SaHeaderSize).first<ib::PathRecordSize>());
    // A multicast destination's record comes from its group; a request for every port's paths
    // needs more than one MAD.
    if (r.has(pr_mask::Dgid) && r.record.dgid.isMulticast()) return Delegated::Multicast;
    if (!(r.mask & (pr_mask::Sgid | pr_mask::Slid)) || !(r.mask & (pr_mask::Dgid | pr_mask::Dlid)))
        return Delegated::OneEnd;
    // What OpenSM refuses before it looks at the subnet (method, MTU and rate values, half a
    // ServiceID) stays its handler's to refuse.
    DecodedRequest decoded = decodePathRequest(mad);
    if (!decoded.ok()) return Delegated::Refused;
    const PathRequest& wanted = decoded.requests.front();
    r.qos = wanted;

    osm_subn_t& subn = osm_->subn;
    cl_qlist_t records;
    cl_qlist_init(&records);
    uint64_t count = 0;
    {
        OpenSmLock lock(*osm_, OpenSmLock::Mode::Shared);
        // Answer only from the version OpenSM's handler has: during a change both are OpenSM's.
        if (!openSmHasIt_) return Delegated::PolicyChange;
        // With alias GUIDs a port answers for several GIDs: OpenSM's handler walks them.
        if (cl_qmap_count(&subn.alias_port_guid_tbl) != cl_qmap_count(&subn.port_guid_tbl))
            return Delegated::AliasGuids;
        const osm_port_t* requester =
            osm_get_port_by_mad_addr(&osm_->log, &subn, osm_madw_get_mad_addr_ptr(madw));
        if (!requester) return Delegated::Refused;

        // Each end by GID (on this subnet) and by LID; both must name one port.
        auto resolve = [&](const PortAddress& a, bool destination,
                           const osm_port_t*& port) -> std::optional<Delegated> {
            const osm_port_t* byGid = nullptr;
            if (a.guid) {
                if (!linkLocal(*a.gidPrefix) && cl_hton64(*a.gidPrefix) != subn.opt.subnet_prefix)
                    return destination ? Delegated::Routed : Delegated::Refused;
                byGid = osm_get_port_by_guid(&subn, cl_hton64(*a.guid));
                if (!byGid) return Delegated::Refused;
            }
            const osm_port_t* byLid = nullptr;
            if (a.lid) {
                byLid = osm_get_port_by_lid(&subn, cl_hton16(*a.lid));
                if (!byLid) return Delegated::Refused;
            }
            if (byGid && byLid && byGid != byLid) return Delegated::Refused;
            port = byGid ? byGid : byLid;
            return std::nullopt;
        };
        const osm_port_t* src = nullptr;
        const osm_port_t* dst = nullptr;
        // OpenSM looks at the source first: an unknown source is refused before a routed
        // destination is noticed.
        if (auto why = resolve(wanted.source, false, src)) return why;
        if (auto why = resolve(wanted.destination, true, dst)) return why;
        if (sweep_ && subn.opt.qos) {
            const Fabric& fabric = sweep_->fabric();
            if (fabric.endpointByGuid(cl_ntoh64(osm_port_get_guid(src))) == NoPort ||
                fabric.endpointByGuid(cl_ntoh64(osm_port_get_guid(dst))) == NoPort) {
                return Delegated::UnknownPort;
            }
        }
        portPairPaths(*osm_, sweep_, r, requester, src, dst, records, count);
    }
    osm_sa_respond(&osm_->sa, madw, sizeof(ib_path_rec_t), &records);
    answered_.fetch_add(1, std::memory_order_relaxed);
    records_.fetch_add(count, std::memory_order_relaxed);
    return std::nullopt;
}

}  // namespace ibqos::osm

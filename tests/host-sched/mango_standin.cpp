// SPDX-License-Identifier: MIT
// A stand-in libmango for the tests of the dlopen backend: the documented calls with their
// argument rules, recorded, and each applied QP's algorithm run once by mango_pcc_ctrl_run.
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "host-sched/pcc/pcc_abi.h"

namespace {

struct Slot {
    mango_pcc_algo_event_fn* algo = nullptr;
    uint32_t metrics = 0;
    std::vector<uint8_t> initial;
    std::vector<mango_pcc_param_t> params;
};

struct Handle {
    std::string device;
    uint32_t interval = 0;
    std::map<unsigned, Slot> slots;
    std::map<uint32_t, unsigned> qpSlot;                // every QP the "device" has
    std::map<uint32_t, std::vector<uint8_t>> qpParams;  // per-QP copies
    std::map<uint32_t, uint32_t> window;
    bool running = false;
};

std::string calls;

void record(const std::string& line) { calls += line + "\n"; }

}  // namespace

extern "C" {

const char* mango_standin_calls() { return calls.c_str(); }

mango_status_e mango_pcc_create(const char* dev, mango_pcc_h* pcc) {
    record(std::string("create ") + (dev ? dev : "NULL"));
    if (!dev || !pcc || std::strncmp(dev, "missing", 7) == 0) return -ENODEV;
    auto* h = new Handle;
    h->device = dev;
    for (uint32_t qpn : {0x100u, 0x101u, 0x102u}) {
        h->qpSlot[qpn] = UINT32_MAX;
        h->window[qpn] = 1000;
    }
    *pcc = h;
    return 0;
}

mango_status_e mango_pcc_destroy(mango_pcc_h pcc) {
    record("destroy");
    delete static_cast<Handle*>(pcc);
    return 0;
}

mango_status_e mango_pcc_ctrl_config(mango_pcc_h pcc, const mango_pcc_config_t* config) {
    if (!config || config->option != MANGO_PCC_CONFIG_INTERVAL || config->value.interval_us == 0)
        return -EINVAL;
    static_cast<Handle*>(pcc)->interval = config->value.interval_us;
    record("config interval=" + std::to_string(config->value.interval_us));
    return 0;
}

mango_status_e mango_pcc_ctrl_reg_algo(mango_pcc_h, unsigned, mango_pcc_algo_fn*, const void*,
                                       size_t) {
    return -ENOTSUP;
}

mango_status_e mango_pcc_ctrl_reg_algo_event(mango_pcc_h pcc, unsigned slot,
                                             mango_pcc_algo_event_fn* algo, uint32_t metrics,
                                             const void* params, size_t size) {
    auto* h = static_cast<Handle*>(pcc);
    record("reg_algo_event slot=" + std::to_string(slot) + " metrics=" + std::to_string(metrics) +
           " size=" + std::to_string(size));
    if (!algo || slot >= 8 || h->slots.count(slot)) return -EINVAL;
    Slot& s = h->slots[slot];
    s.algo = algo;
    s.metrics = metrics;
    auto* bytes = static_cast<const uint8_t*>(params);
    s.initial.assign(bytes, bytes + size);
    return 0;
}

mango_status_e mango_pcc_params_register(mango_pcc_h pcc, unsigned slot,
                                         const mango_pcc_param_t* params, unsigned count) {
    auto* h = static_cast<Handle*>(pcc);
    record("params_register slot=" + std::to_string(slot) + " count=" + std::to_string(count));
    auto it = h->slots.find(slot);
    if (it == h->slots.end()) return -EINVAL;
    it->second.params.assign(params, params + count);
    return 0;
}

mango_status_e mango_pcc_ctrl_unreg_algo(mango_pcc_h pcc, unsigned slot) {
    record("unreg_algo slot=" + std::to_string(slot));
    return static_cast<Handle*>(pcc)->slots.erase(slot) ? 0 : -EINVAL;
}

mango_status_e mango_pcc_ctrl_apply_algo(mango_pcc_h pcc, unsigned slot, const unsigned* list,
                                         unsigned count) {
    auto* h = static_cast<Handle*>(pcc);
    std::string line = "apply_algo slot=" + std::to_string(slot) + " qps=";
    if (!list) line += "all";
    for (unsigned i = 0; list && i < count; ++i) line += (i ? "," : "") + std::to_string(list[i]);
    record(line);
    auto it = h->slots.find(slot);
    if (it == h->slots.end()) return -EINVAL;
    std::vector<uint32_t> qps;
    if (!list) {
        for (auto& [qpn, s] : h->qpSlot) qps.push_back(qpn);
    } else {
        qps.assign(list, list + count);
    }
    for (uint32_t qpn : qps) {
        if (!h->qpSlot.count(qpn)) return -ENOENT;
        h->qpSlot[qpn] = slot;
        h->qpParams[qpn] = it->second.initial;
    }
    return 0;
}

mango_status_e mango_pcc_ctrl_run(mango_pcc_h pcc, unsigned threads) {
    auto* h = static_cast<Handle*>(pcc);
    record("run threads=" + std::to_string(threads));
    if (threads == 0) return -EINVAL;
    h->running = true;
    for (auto& [qpn, slot] : h->qpSlot) {
        auto it = h->slots.find(slot);
        if (it == h->slots.end()) continue;
        mango_pcc_context_t ctx{};
        ctx.current_window = h->window[qpn];
        if (it->second.metrics & MANGO_PCC_METRIC_CNP) ctx.cnp_delta = 1;
        if (it->second.metrics & MANGO_PCC_METRIC_RTT) {
            ctx.latest_rtt_ns = 20000;
            ctx.rtt_updated = 1;
        }
        ctx.active_qp_count = static_cast<uint32_t>(h->qpSlot.size());
        mango_pcc_result_t result = it->second.algo(h->qpParams[qpn].data(), &ctx);
        h->window[qpn] = result.new_window;
    }
    return 0;
}

mango_status_e mango_pcc_ctrl_stop(mango_pcc_h pcc) {
    record("stop");
    static_cast<Handle*>(pcc)->running = false;
    return 0;
}

mango_status_e mango_pcc_walk_params(mango_pcc_h pcc, const unsigned slot,
                                     mango_pcc_param_walk_fn callback, void* user, unsigned mode) {
    auto* h = static_cast<Handle*>(pcc);
    record("walk_params slot=" + std::to_string(slot) + " mode=" + std::to_string(mode));
    auto it = h->slots.find(slot);
    if (it == h->slots.end() || !callback) return -EINVAL;
    auto walk = [&](std::vector<uint8_t>& block) {
        for (const mango_pcc_param_t& p : it->second.params)
            callback(p.name, p.type, block.data() + p.offset, user);
    };
    bool any = false;
    for (auto& [qpn, s] : h->qpSlot) {
        if (s != slot) continue;
        walk(h->qpParams[qpn]);
        any = true;
        if (mode != 1) break;
    }
    if (!any || mode == 1) walk(it->second.initial);
    return 0;
}

mango_status_e mango_pcc_window_current_by_qp(mango_pcc_h pcc, uint32_t qpn, uint32_t* window) {
    auto* h = static_cast<Handle*>(pcc);
    auto it = h->window.find(qpn);
    if (it == h->window.end() || !window) return -ENOENT;
    *window = it->second;
    return 0;
}

}  // extern "C"

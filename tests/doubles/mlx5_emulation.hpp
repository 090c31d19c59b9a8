// SPDX-License-Identifier: MIT
// An emulated mlx5 device that honours the documented mlx5dv scheduling contract, for tests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host-sched/sched/mlx5_api.hpp"

namespace ibqos::host {

// The capabilities libmlx5 consults before it talks to the firmware.
struct EmulatedMlx5Caps {
    bool mlx5 = true;          // an mlx5 context (others have no dv ops: EOPNOTSUPP)
    bool qos = true;           // QoS, TSAR and queue-group elements, DWRR (node creation)
    bool bwShare = true;       // nic_bw_share (the BW_SHARE flag)
    bool rateLimit = true;     // nic_rate_limit (the MAX_AVG_BW flag)
    bool qpScheduling = true;  // qpc_extension_cap and nic_qp_scheduling (RC/UC/UD QPs)
    bool sqScheduling = true;  // nic_sq_scheduling (raw packet QPs)
    unsigned maxDepth = 0;     // firmware limit on levels of elements; 0 = none
};

// An element as the emulation sees it (ids count from 1 per device).
struct EmulatedElement {
    unsigned id = 0;
    bool leaf = false;
    unsigned parent = 0;  // 0: none (a root)
    uint32_t flags = 0;
    uint32_t bwShare = 0;
    uint32_t maxAvgBw = 0;
    bool alive = true;
};

// Which leaves a QP is attached to (0: none).
struct EmulatedAttachment {
    unsigned requestor = 0;
    unsigned responder = 0;
};

// One device context. The API is free functions, so devices register themselves in a
// process-wide table that emulatedMlx5Api() consults; a device must outlive its elements' use.
//
// Failures follow rdma-core 44 (providers/mlx5/mlx5.c): create returns NULL and sets errno,
// modify/destroy/attach return a positive errno. What the real library would turn into a
// crash (NULL or destroyed objects) aborts with a message instead, so that tests see it.
// Firmware answers the documentation leaves open are modelled and marked as such.
class EmulatedMlx5Device {
  public:
    explicit EmulatedMlx5Device(std::string name, EmulatedMlx5Caps caps = {});
    ~EmulatedMlx5Device();
    EmulatedMlx5Device(const EmulatedMlx5Device&) = delete;
    EmulatedMlx5Device& operator=(const EmulatedMlx5Device&) = delete;

    ibv_context* context();
    const std::string& name() const;
    // A QP of this context in the given state; the device owns it.
    ibv_qp* createQp(uint32_t qpNum, ibv_qp_type type, ibv_qp_state state = IBV_QPS_INIT);

    std::vector<EmulatedElement> elements() const;
    size_t liveElements() const;
    std::map<uint32_t, EmulatedAttachment> attachments() const;
    // Every API call in order, one line each ("node_create parent=- flags=0x0 -> 1").
    std::vector<std::string> calls() const;
    // The id of a node or leaf pointer of this device (0 for NULL).
    unsigned idOf(const void* element) const;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

// The contract's seven calls, implemented by the emulation.
const Mlx5SchedApi& emulatedMlx5Api();

}  // namespace ibqos::host

// SPDX-License-Identifier: MIT
// SchedBackend: what builds a host plan's tree on a device and attaches QPs to its leaves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "host-sched/plan/host_plan.hpp"

namespace ibqos::host {

// QP transport types, as far as transmit scheduling cares.
enum class QpType : uint8_t { Rc, Uc, Ud, RawPacket, Other };

std::string_view qpTypeName(QpType type);

// A QP handed to a backend. verbsQp is the application's struct ibv_qp (the mlx5 backend
// needs it; the simulated one only reads qpNum and type).
struct QpRef {
    void* verbsQp = nullptr;
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
};

// Which sides of a QP a leaf schedules: RC sends as requestor and responder; UC, UD and raw
// packet QPs only as requestor (mlx5dv_modify_qp_sched_elem refuses a responder for them).
struct AttachRoles {
    bool requestor = false;
    bool responder = false;
};
AttachRoles attachRoles(QpType type);

// The outcome of a backend call: ok, or an errno and a message a person can act on.
struct SchedStatus {
    int error = 0;
    std::string message;
    bool ok() const { return error == 0; }
    static SchedStatus success() { return {}; }
};

// One tree on one device context. Ownership: the caller owns the backend; the backend owns
// the elements it created and never the QPs.
class SchedBackend {
  public:
    virtual ~SchedBackend() = default;
    virtual std::string_view name() const = 0;
    // Builds the plan's tree: the root, then nodes parent-first, then leaves. On failure,
    // whatever was created is destroyed again and the status names the element.
    virtual SchedStatus build(const HostPlan& plan) = 0;
    virtual bool built() const = 0;
    // Attaches a QP to the leaf at plan element `leaf`, in the roles its type allows.
    virtual SchedStatus attach(const QpRef& qp, size_t leaf) = 0;
    // Detaches a QP from its leaf (back to the device's default scheduling).
    virtual SchedStatus detach(const QpRef& qp) = 0;
    // Destroys the tree: leaves first, then nodes children-first, the root last.
    virtual SchedStatus teardown() = 0;
};

}  // namespace ibqos::host

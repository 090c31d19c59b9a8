// SPDX-License-Identifier: MIT
// QpOwners: which process owns a QP, as the kernel says (rdma netlink's resource tracking).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace ibqos::host {

// The owner of one QP of a device, in the agent's own PID namespace.
struct QpOwner {
    enum class Kind : uint8_t {
        Process,  // pid holds the owning process (its thread group leader)
        Kernel,   // a kernel consumer's QP (a ULP such as IPoIB or NVMe over RDMA)
        Absent,   // the kernel knows no such QP (or no such device)
        Unknown,  // the kernel could not be asked: detail says why
    };
    Kind kind = Kind::Unknown;
    uint32_t pid = 0;
    std::string detail;
};

// Answers who owns a QP. The agent asks for every QP a client reports, and steers only those
// the client's own process owns.
class QpOwners {
  public:
    virtual ~QpOwners() = default;
    virtual QpOwner ownerOf(const std::string& device, uint32_t qpNum) = 0;
};

// The kernel's answer over a NETLINK_RDMA socket: the device's index from RDMA_NLDEV_CMD_GET,
// then the QP from RDMA_NLDEV_CMD_RES_QP_GET (the pid of the task that made it), asked for the
// one QP, or as the device's whole list from kernels that do not answer for one.
std::unique_ptr<QpOwners> makeNetlinkQpOwners();

// The owner of qpNum in the attributes of one RDMA_NLDEV_CMD_RES_QP_GET answer (for one QP,
// or a message of the dump), with the recorded thread turned into its process; nullopt when the
// message does not list the QP.
std::optional<QpOwner> qpOwnerInAnswer(std::span<const uint8_t> attributes, uint32_t qpNum);

}  // namespace ibqos::host

// SPDX-License-Identifier: MIT
// ServiceIDs of the RDMA-CM port spaces, and the kernel ULPs that ask the SA with one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ibqos::ib {

// RDMA-CM's TCP port space (rdma_cma.h's RDMA_PS_TCP): the kernel's cma_get_service_id() asks
// the SA with the ServiceID port-space << 16 | destination port.
inline constexpr uint16_t RdmaPsTcp = 0x0106;

// The ServiceID an RDMA-CM connection in a port space asks with.
constexpr uint64_t rdmaCmServiceId(uint16_t portSpace, uint16_t port) {
    return uint64_t{portSpace} << 16 | port;
}

// The base OpenSM adds a qos-ulps port number to for `rds` and `iser`
// (OSM_QOS_POLICY_ULP_RDS_SERVICE_ID, OSM_QOS_POLICY_ULP_ISER_SERVICE_ID): the TCP port space.
inline constexpr uint64_t TcpPortSpaceServiceIds = rdmaCmServiceId(RdmaPsTcp, 0);

// A kernel ULP that connects through RDMA-CM to a well-known TCP port: its QPs are made in the
// kernel and take the SL of the PathRecord the SA answers for that ServiceID.
struct KernelUlp {
    std::string_view name;    // for people: "NFS over RDMA"
    uint16_t port;            // the default destination port
    std::string_view source;  // where the port is defined
    constexpr uint64_t serviceId() const { return rdmaCmServiceId(RdmaPsTcp, port); }
};

inline constexpr KernelUlp NfsRdma{"NFS over RDMA", 20049,
                                   "NFS_RDMA_PORT, include/uapi/linux/nfs.h"};
inline constexpr KernelUlp Lustre{"Lustre (o2iblnd)", 987,
                                  "the ko2iblnd 'service' parameter, o2iblnd_modparams.c"};
inline constexpr KernelUlp NvmeRdma{"NVMe over Fabrics (RDMA)", 4420,
                                    "NVME_RDMA_IP_PORT, the NVMe/RDMA host and target"};
inline constexpr KernelUlp Iser{"iSER", 3260,
                                "the iSCSI port (OpenSM's OSM_QOS_POLICY_ULP_ISER_PORT)"};
inline constexpr KernelUlp Rds{"RDS", 18634,
                               "RDS_PORT, net/rds (OpenSM's OSM_QOS_POLICY_ULP_RDS_PORT)"};

inline constexpr KernelUlp kernelUlps[] = {NfsRdma, Lustre, NvmeRdma, Iser, Rds};

// The kernel ULP whose default ServiceID this is, if any.
constexpr std::optional<KernelUlp> kernelUlpOf(uint64_t serviceId) {
    for (const KernelUlp& u : kernelUlps) {
        if (u.serviceId() == serviceId) return u;
    }
    return std::nullopt;
}

static_assert(NfsRdma.serviceId() == 0x1064E51 && Lustre.serviceId() == 0x10603DB &&
              NvmeRdma.serviceId() == 0x1061144 && Iser.serviceId() == 0x1060CBC &&
              Rds.serviceId() == 0x10648CA);

}  // namespace ibqos::ib

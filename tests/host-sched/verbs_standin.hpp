// SPDX-License-Identifier: MIT
// The recording stand-in for libibverbs and libmlx5 that test programs link instead of them.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

extern "C" {

// Device capability sets for standin_open_device.
enum StandinCaps { StandinFullCaps = 0, StandinNoQos = 1, StandinNotMlx5 = 2 };

// An emulated mlx5 device context named `name`.
ibv_context* standin_open_device(const char* name, int caps);
// A QP of that context, in RESET.
ibv_qp* standin_create_qp(ibv_context* context, uint32_t qpNum, ibv_qp_type type);
// The path librdmacm's stand-ins hand out next (rdma_init_qp_attr, rdma_get_cm_event).
void standin_set_cm_path(uint16_t dlid, uint8_t sl);
}

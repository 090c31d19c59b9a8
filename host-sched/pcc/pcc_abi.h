/* SPDX-License-Identifier: MIT */
/* The libmango PCC C API (seed 003, "RDMA PCC" 1.0.0), declared by ibqos: no header is packaged. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reference gives names, meanings and the two structure sizes. Field types, the
 * layout inside the 64 and 32 bytes, and the enumerator values are ibqos's reading of it;
 * check them against the vendor header before using a real libmango. */

typedef void* mango_pcc_h;
typedef void* mango_context_h;
/* 0 on success, a negative error value otherwise. */
typedef int mango_status_e;

typedef enum _mango_pcc_config_option {
    MANGO_PCC_CONFIG_INTERVAL = 0, /* algorithm execution interval */
} mango_pcc_config_option_e;

typedef struct _mango_pcc_config {
    mango_pcc_config_option_e option;
    union {
        uint32_t interval_us;
    } value;
} mango_pcc_config_t;

/* Metrics an event-style algorithm asks the framework to poll. */
typedef enum _mango_pcc_metric_flags {
    MANGO_PCC_METRIC_CNP = 1u << 0,
    MANGO_PCC_METRIC_RTT = 1u << 1,
} mango_pcc_metric_flags_e;

/* The snapshot an event-style algorithm receives; 64 bytes, reserved bytes are zero. */
typedef struct _mango_pcc_context {
    uint32_t current_window; /* current QP congestion window */
    uint32_t cnp_delta;      /* CNPs since the last call (0 without MANGO_PCC_METRIC_CNP) */
    uint64_t latest_rtt_ns;  /* most recent RTT, 0 if unavailable */
    uint8_t rtt_updated;     /* a new RTT measurement arrived this cycle */
    uint8_t _pad[3];
    uint32_t active_qp_count; /* active QPs on the device */
    uint8_t _reserved[40];
} mango_pcc_context_t;

/* What an event-style algorithm decides; 32 bytes, reserved bytes left zero. */
typedef struct _mango_pcc_result {
    uint32_t new_window;       /* new congestion window (current_window: unchanged) */
    uint8_t request_rtt_probe; /* ask the framework to send an RTT probe */
    uint8_t _reserved[27];
} mango_pcc_result_t;

typedef mango_pcc_result_t mango_pcc_algo_event_fn(void* params, const mango_pcc_context_t* ctx);
typedef void mango_pcc_algo_fn(void* params);

typedef enum _mango_pcc_param_type {
    MANGO_PCC_PARAM_U32 = 0,
    MANGO_PCC_PARAM_U64 = 1,
    MANGO_PCC_PARAM_DOUBLE = 2,
} mango_pcc_param_type_e;

/* One tunable parameter: a field of the algorithm's parameter structure. */
typedef struct _mango_pcc_param {
    const char* name;
    mango_pcc_param_type_e type;
    size_t offset;
} mango_pcc_param_t;

typedef void (*mango_pcc_param_walk_fn)(const char* name, mango_pcc_param_type_e type,
                                        void* value_ptr, void* user_data);

mango_status_e mango_pcc_create(const char* roce_dev_name, mango_pcc_h* pcc);
mango_status_e mango_pcc_destroy(mango_pcc_h pcc);
mango_status_e mango_pcc_ctrl_config(mango_pcc_h pcc, const mango_pcc_config_t* config);
mango_status_e mango_pcc_ctrl_reg_algo(mango_pcc_h pcc, unsigned int slot, mango_pcc_algo_fn* algo,
                                       const void* initial_params, size_t param_size);
mango_status_e mango_pcc_ctrl_reg_algo_event(mango_pcc_h pcc, unsigned int slot,
                                             mango_pcc_algo_event_fn* algo,
                                             uint32_t required_metrics, const void* initial_params,
                                             size_t param_size);
mango_status_e mango_pcc_ctrl_unreg_algo(mango_pcc_h pcc, unsigned int slot);
mango_status_e mango_pcc_ctrl_apply_algo(mango_pcc_h pcc, unsigned int slot,
                                         const unsigned int* qp_list, unsigned int qp_count);
mango_status_e mango_pcc_ctrl_run(mango_pcc_h pcc, unsigned int num_threads);
mango_status_e mango_pcc_ctrl_stop(mango_pcc_h pcc);
mango_status_e mango_pcc_params_register(mango_pcc_h pcc, unsigned int slot,
                                         const mango_pcc_param_t* params, unsigned int nr_params);
mango_status_e mango_pcc_walk_params(mango_pcc_h pcc, const unsigned int slot,
                                     mango_pcc_param_walk_fn callback, void* user_data,
                                     unsigned int mode);
mango_status_e mango_pcc_window_current_by_qp(mango_pcc_h pcc, uint32_t qp_num,
                                              uint32_t* window_size);
mango_status_e mango_pcc_cnp_count_by_qp(mango_pcc_h pcc, uint32_t qp_num, uint64_t* cnp_count);
mango_status_e mango_pcc_window_count_by_qp(mango_pcc_h pcc, uint32_t qp_num, uint32_t* count);

#ifdef __cplusplus
}
#endif

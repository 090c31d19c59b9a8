// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as the OpenSM plugin's status file, read as `ibqos status` and
// `ibqos apply` read it, and judged fresh or stale.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/sm_status.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string error;
    std::optional<ibqos::cli::SmStatus> status = ibqos::cli::parseSmStatus(
        "fuzz.json", std::string(reinterpret_cast<const char*>(data), size), error);
    // Pid 0 is never signalled: the age alone decides.
    if (status) {
        status->opensmPid = 0;
        (void)ibqos::cli::staleReason(*status, 0);
    }
    return 0;
}

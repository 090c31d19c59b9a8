// SPDX-License-Identifier: MIT
// Pass 5: the qos-setup section, which OpenSM parses and ignores and ibqos applies.
#include <string>

#include "compiler/passes.hpp"

namespace ibqos::passes {

void checkQosSetup(const Reporter& report, Policy& policy) {
    if (policy.hasQosSetup) {
        report.warning(
            "qos-setup-applied", policy.qosSetupLocation,
            "OpenSM ignores qos-setup; ibqos applies it (SL2VL and VL arbitration tables "
            "per port, see docs/compatibility.md)");
    }
    for (const VlArbScope& scope : policy.vlarbScopes) {
        if (!scope.bandwidth) continue;
        unsigned total = 0;
        for (const VlShare& s : *scope.bandwidth) total += s.percent;
        if (total > 100) {
            report.stricterError(
                "bandwidth", scope.bandwidthLocation,
                "the bandwidth shares add up to " + std::to_string(total) + "%, more than 100%");
            policy.qosSetupIgnored = true;
        }
    }
}

}  // namespace ibqos::passes

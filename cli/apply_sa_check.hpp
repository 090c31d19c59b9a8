// SPDX-License-Identifier: MIT
// ibqos apply's check of the live SA: PathRecord requests drawn from a diff's regions and from
// outside them, asked of the SA and set against what a policy answers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "compiler/bind.hpp"
#include "fabric/fabric.hpp"
#include "host-sched/sa-client/umad_transport.hpp"
#include "policy-space/policy_diff.hpp"
#include "sa-matcher/path_request.hpp"

namespace ibqos::cli {

// A PathRecord request to ask the SA, and where it comes from ("region N", "outside the diff").
struct SaSample {
    PathQuery query;
    std::string origin;
};

// The requests to ask the SA: one from each region of the diff (its first source and
// destination, the low end of each field's first range), and pairs of endpoints outside them.
std::vector<SaSample> saSamples(const Fabric& fabric, const PolicyDiff& diff);

// The SA's answers against a policy's: a JSON report, lines for people, and the count.
struct SaVerification {
    Json report;
    std::string text;
    size_t mismatches = 0;
};

// `engineSl`: a routing engine chooses the SL of every answer (lash, dfsssp, nue, torus-2QoS),
// so only whether a path is answered is compared.
SaVerification verifySa(host::UmadTransport& transport, const Fabric& fabric, const Policy& policy,
                        const BoundPolicy& bound, const std::vector<SaSample>& samples,
                        const std::string& engineSl);

}  // namespace ibqos::cli

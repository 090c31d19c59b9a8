// SPDX-License-Identifier: MIT
// What changes in the SA's answers when one policy replaces another on the same fabric: the
// request space cut into cells (membership classes of the two ends times elementary intervals
// of ServiceID, QoS class and PKey, where nothing either policy or the fabric looks at changes
// inside a cell), each cell answered under both policies, and the changed cells merged into
// few regions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/bind.hpp"
#include "compiler/range_set.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos {

// The values of one request field a region holds: `any` (every value, and requests without
// the field), or these inclusive ranges of values a request carries.
struct FieldValues {
    bool any = false;
    std::vector<Range> ranges;
};

// A product of sources, destinations and field values whose requests all changed answer in the
// same way. A request with no value for a field lies only in regions where that field is `any`.
struct DiffRegion {
    std::vector<uint32_t> sources, destinations;  // endpoints (Fabric::ports indices)
    FieldValues serviceIds, qosClasses, pkeys;
    uint64_t portPairs = 0;  // sources x destinations
    // The answers before and after, as for a path between two different ports (a loopback
    // path's packet life is 0 under both); `rule` of each is one of the deciding rules.
    PathAnswer before, after;
    std::vector<uint32_t> beforeRules, afterRules;  // every deciding rule (NoRule: the default)
};

// A different answer: accepted on one side only, or accepted on both with another SL, MTU or
// rate limit, packet life, level PKeys or answered PKey. Requests rejected under both count as
// unchanged; so does a different level name or deciding rule with the same answer.
bool answersDiffer(const Policy& before, const PathAnswer& a, const Policy& after,
                   const PathAnswer& b);

// The regions whose answers change, exact up to two limits of the region form: a field whose
// absence changes the answer while some of its values do not is reported as `any`, and the
// loopback paths of a region's ports go with it. Both policies must be bound to one fabric
// (the same ports in the same order). nullopt when the request space has more than maxCells
// cells (membership classes squared times field intervals).
std::optional<std::vector<DiffRegion>> diffRequests(const BoundPolicy& before,
                                                    const BoundPolicy& after,
                                                    uint64_t maxCells = UINT64_MAX);

// For people: an answer ("level 'gold', SL 3, PKey 0x8001, mtu-limit 4" or "rejected: why"),
// and a field's values ("any", or "0x10-0x1f, 0x30").
std::string describeAnswer(const Policy& policy, const PathAnswer& answer);
std::string describeValues(const FieldValues& values, bool hex);

// A fabric to compare two policies on when there is no topology, as ibnetdiscover would write
// it: a CA port for each elementary interval of the GUIDs the policies' groups name and for each
// port name they use, one CA port in no GUID range, and the switches that connect them.
std::string witnessTopology(const Policy& before, const Policy& after);
// Its partitions.conf: Default and a partition for each end of every PKey range the policies
// name (up to 256), every port a full member, so that requests with those PKeys get answers.
std::string witnessPartitions(const Policy& before, const Policy& after);

}  // namespace ibqos

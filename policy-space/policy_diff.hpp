// SPDX-License-Identifier: MIT
// What changes in the SA's answers when one policy replaces another: the requests whose answer
// changes, as regions (products of sources, destinations and field values) that hold no request
// whose answer stays; on one fabric, or on every fabric the policies could meet. And what
// changes in qos-setup, which decides every port's tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/bind.hpp"
#include "compiler/range_set.hpp"
#include "fabric/node_type.hpp"
#include "policy-space/request_space.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos {

// The values of one request field a region holds: `any` (every value, and requests without
// the field), or these inclusive ranges of values a request carries; or, with `absent`, only
// requests that carry no value for the field.
struct FieldValues {
    bool any = false;
    bool absent = false;  // only requests without the field (any is false, ranges empty)
    std::vector<Range> ranges;
    bool operator==(const FieldValues&) const = default;
};

// Ports as every fabric can have them, by what the policies' groups select: a port with a GUID
// in `guids`, of one of `nodeTypes`, the SM's port or not, answering to one of `names` (or to
// none of `notNames`), a member of the partitions and PKey ranges in `in...` and of none in
// `notIn...`. An unset optional or an empty list does not constrain.
struct PortKind {
    std::optional<std::vector<Range>> guids;
    std::optional<std::vector<NodeType>> nodeTypes;
    std::optional<bool> sm;
    std::optional<std::vector<std::string>> names, notNames;  // "NodeDescription/P<n>"
    std::vector<std::string> inPartitions, notInPartitions;
    std::vector<Range> inPkeys, notInPkeys;
    bool operator==(const PortKind&) const = default;
};

// Which of a region's paths are loopback paths (a port to itself).
enum class Loopback : uint8_t {
    Both,      // paths between two ports and loopback paths alike
    Excluded,  // only paths between two different ports
    Only,      // only loopback paths: each source to itself (destinations are the sources)
};

// One end of a region on a fabric: the endpoints (Fabric::ports indices) of some membership
// classes. Kept as the classes, each a list of endpoints in port order, and listed in port
// order only as far as asked: a region of a large fabric may hold tens of thousands of ports,
// and a diff thousands of regions.
class EndpointSet {
  public:
    using Classes = std::vector<std::vector<uint32_t>>;
    EndpointSet() = default;
    EndpointSet(std::shared_ptr<const Classes> classes, std::vector<uint32_t> members);
    uint64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    bool contains(uint32_t endpoint) const;
    // The first `most` endpoints in port order.
    std::vector<uint32_t> list(size_t most = SIZE_MAX) const;
    // The classes (indices into the fabric's classes), sorted.
    const std::vector<uint32_t>& classes() const { return members_; }

  private:
    std::shared_ptr<const Classes> classes_;
    std::vector<uint32_t> members_;
    uint64_t size_ = 0;
};

// A product of requests whose answers all change the same way.
struct DiffRegion {
    // With a fabric: endpoints. Without: the kinds of ports (a union); empty with
    // `any...` for every port.
    EndpointSet sources, destinations;
    std::vector<PortKind> sourceKinds, destinationKinds;
    bool anySource = false, anyDestination = false;
    FieldValues serviceIds, qosClasses, pkeys;
    Loopback loopback = Loopback::Both;
    uint64_t portPairs = 0;  // with a fabric: the (source, destination) pairs it holds
    // The answers before and after, for a request that asks for no SL (a loopback path's
    // packet life is shown as a path between two ports'). Without a fabric they are the answers
    // on a fabric where both ends share every partition, and `pkeyKnown` is false when the
    // PKey answered is the request's own or one the fabric picks.
    PathAnswer before, after;
    bool pkeyKnown = true;
    std::vector<uint32_t> beforeRules, afterRules;  // every deciding rule (NoRule: the default)
};

// How a qos-setup scope changes (the tables of the ports it selects may change).
struct ScopeChange {
    enum class Kind : uint8_t { VlArb, Sl2Vl } kind = Kind::VlArb;
    std::optional<uint32_t> before, after;  // scope indices; nullopt: added or removed
    std::vector<std::string> fields;        // what differs ("group", "bandwidth", ...)
};

// What changes.
struct PolicyDiff {
    std::vector<DiffRegion> regions;
    // Without a fabric: every qos-setup scope whose effect may differ (with a fabric the ports
    // whose tables change are compared instead: compiler/tables.hpp's changedTables).
    std::vector<ScopeChange> scopes;
    bool qosSetupApplied[2] = {false, false};  // before, after: false when it is ignored
};

// A different answer: accepted on one side only, or accepted on both with another SL, MTU or
// rate limit, packet life, level PKeys or answered PKey. Requests rejected under both count as
// unchanged; so does a different level name or deciding rule with the same answer.
bool answersDiffer(const Policy& before, const PathAnswer& a, const Policy& after,
                   const PathAnswer& b);

// The regions whose answers change on one fabric (both policies bound to it), exact: every
// request whose answer changes lies in one region, and none holds a request whose answer stays
// (except requests rejected under both). nullopt when the work budget (decision-diagram steps,
// 0: none) is spent first.
std::optional<PolicyDiff> diffPolicies(const BoundPolicy& before, const BoundPolicy& after,
                                       uint64_t workBudget = 0);
// The same on every fabric the two policies could meet: a request changes when its answer
// differs on some fabric; the regions describe ports by kind. qos-setup is compared scope by
// scope.
std::optional<PolicyDiff> diffPolicies(const Policy& before, const Policy& after,
                                       uint64_t workBudget = 0);

// For people: an answer ("level 'gold', SL 3, PKey 0x8001, mtu-limit 4" or "rejected: why"),
// a field's values ("any", "absent", or "0x10-0x1f, 0x30"), and a kind of port.
std::string describeAnswer(const Policy& policy, const PathAnswer& answer, bool pkeyKnown = true);
std::string describeValues(const FieldValues& values, bool hex);
std::string describePortKind(const PortKind& kind);

}  // namespace ibqos

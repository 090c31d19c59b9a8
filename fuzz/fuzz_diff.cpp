// SPDX-License-Identifier: MIT
// libFuzzer target: two policies through ibqos diff, on every fabric and bound to the sample
// fabric. The input is split at its first line "%%" (before, after); without one, the policy
// is compared with itself. Besides crashes, it stops on a wrong diff:
// - on the sample fabric, requests of every pair of ports with field values at and beside
//   every range end the policies and the regions name, each answered by OpenSM's rule scan
//   under both policies: a request whose answer changes lies in no region, or a region holds
//   one whose answer stays (apart from requests rejected under both);
// - a policy compared with itself changes something;
// - requests change on the sample fabric while the diff on every fabric (which holds the
//   changes of every fabric) finds none.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/fabric_compilation.hpp"
#include "fuzz/sample_fabric.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/policy_diff.hpp"
#include "sa-matcher/qos_answer.hpp"
#include "sa-matcher/reference_match.hpp"

namespace {

// Diagram steps for each diff (about 0.1 us each, more under the sanitizers): a pair that
// needs more is one `ibqos diff` reports as over its budget.
constexpr uint64_t Budget = uint64_t{1} << 21;

[[noreturn]] void wrong(const char* what) {
    std::fprintf(stderr, "fuzz-diff: %s\n", what);
    std::abort();
}

// What `ibqos diff` prints of each region.
void describe(const ibqos::Policy& before, const ibqos::Policy& after, const ibqos::PolicyDiff& d) {
    for (const ibqos::DiffRegion& r : d.regions) {
        (void)ibqos::describeAnswer(before, r.before, r.pkeyKnown);
        (void)ibqos::describeAnswer(after, r.after, r.pkeyKnown);
        for (const auto* v : {&r.serviceIds, &r.qosClasses, &r.pkeys})
            (void)ibqos::describeValues(*v, true);
        for (const auto* kinds : {&r.sourceKinds, &r.destinationKinds}) {
            for (const ibqos::PortKind& k : *kinds) (void)ibqos::describePortKind(k);
        }
        (void)r.sources.list(16);
        (void)r.destinations.list(16);
    }
}

// Values of a field to ask for: absent, and at and beside each end of the ranges given, the
// fewest and the most that the field holds (at most `most` in all, spread over them).
std::vector<std::optional<uint64_t>> valuesNear(const std::vector<ibqos::Range>& ranges,
                                                uint64_t max, size_t most) {
    std::set<uint64_t> at{0, max};
    for (const ibqos::Range& r : ranges) {
        for (uint64_t v : {r.lo, r.hi}) {
            if (v > max) continue;
            at.insert(v);
            if (v > 0) at.insert(v - 1);
            if (v < max) at.insert(v + 1);
        }
    }
    std::vector<std::optional<uint64_t>> out{std::nullopt};
    const std::vector<uint64_t> all(at.begin(), at.end());
    const size_t step = std::max<size_t>(1, all.size() / most);
    for (size_t i = 0; i < all.size(); i += step) out.push_back(all[i]);
    if (out.back() != all.back()) out.push_back(all.back());
    return out;
}

bool holdsValue(const ibqos::FieldValues& v, std::optional<uint64_t> x) {
    if (v.any) return true;
    if (v.absent) return !x;
    return x && std::any_of(v.ranges.begin(), v.ranges.end(),
                            [&](const ibqos::Range& r) { return r.lo <= *x && *x <= r.hi; });
}

// Requests on the sample fabric against the regions of the diff bound to it.
void checkRegions(const ibqos::BoundPolicy& before, const ibqos::BoundPolicy& after,
                  const ibqos::PolicyDiff& diff) {
    const ibqos::Fabric& fabric = *before.fabric;
    const ibqos::PkeyTables tables(fabric);
    // Every range end the policies and the regions name, per field.
    std::vector<ibqos::Range> named[3];  // service-id, qos-class, pkey (base and full member)
    auto addPkey = [&](const ibqos::Range& r) {
        named[2].push_back(r);
        named[2].push_back({r.lo | 0x8000, r.hi | 0x8000});
    };
    auto addPkeys = [&](const ibqos::RangeSet& set) {
        for (const ibqos::Range& r : set.ranges()) addPkey(r);
    };
    for (const ibqos::BoundPolicy* b : {&before, &after}) {
        for (const ibqos::MatchRule& rule : b->policy->rules) {
            for (const ibqos::Range& r : rule.serviceIds.ranges()) named[0].push_back(r);
            for (const ibqos::Range& r : rule.qosClasses.ranges()) named[1].push_back(r);
            addPkeys(rule.pkeys);
        }
        for (const ibqos::QosLevel& level : b->policy->levels) addPkeys(level.pkeys);
    }
    for (const ibqos::Partition& p : fabric.partitions) addPkey({p.pkey, p.pkey});
    for (const ibqos::DiffRegion& r : diff.regions) {
        for (const ibqos::Range& x : r.serviceIds.ranges) named[0].push_back(x);
        for (const ibqos::Range& x : r.qosClasses.ranges) named[1].push_back(x);
        for (const ibqos::Range& x : r.pkeys.ranges) named[2].push_back(x);
    }
    // Every combination of them, as the fields of a request.
    std::vector<ibqos::PathQuery> asked;
    for (const auto& sid : valuesNear(named[0], UINT64_MAX, 8)) {
        for (const auto& qos : valuesNear(named[1], 4095, 8)) {
            for (const auto& pkey : valuesNear(named[2], 0xffff, 8)) {
                ibqos::PathQuery q;
                q.serviceId = sid;
                if (qos) q.qosClass = static_cast<uint16_t>(*qos);
                if (pkey) q.pkey = static_cast<uint16_t>(*pkey);
                asked.push_back(q);
            }
        }
    }
    auto held = [](const ibqos::DiffRegion& r, const ibqos::PathQuery& q) {
        return holdsValue(r.serviceIds, q.serviceId) && holdsValue(r.qosClasses, q.qosClass) &&
               holdsValue(r.pkeys, q.pkey);
    };

    for (uint32_t source : fabric.endpoints()) {
        for (uint32_t destination : fabric.endpoints()) {
            // The regions that hold this pair of ports.
            const bool loop = source == destination;
            std::vector<const ibqos::DiffRegion*> pair;
            for (const ibqos::DiffRegion& r : diff.regions) {
                if (r.loopback != (loop ? ibqos::Loopback::Excluded : ibqos::Loopback::Only) &&
                    r.sources.contains(source) && r.destinations.contains(destination))
                    pair.push_back(&r);
            }
            for (ibqos::PathQuery q : asked) {
                q.source = source;
                q.destination = destination;
                const ibqos::PathAnswer a =
                    ibqos::answerPath(*before.policy, tables, q, ibqos::referenceMatch(before, q));
                const ibqos::PathAnswer b =
                    ibqos::answerPath(*after.policy, tables, q, ibqos::referenceMatch(after, q));
                const bool changes = ibqos::answersDiffer(*before.policy, a, *after.policy, b);
                const bool inRegion = std::any_of(pair.begin(), pair.end(),
                                                  [&](const auto* r) { return held(*r, q); });
                if (changes && !inRegion) wrong("a request whose answer changes is in no region");
                if (inRegion && !changes && (a.ok() || b.ok()))
                    wrong("a region holds a request whose answer stays");
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const size_t cut = text.find("\n%%\n");
    const bool itself = cut == std::string::npos;
    ibqos::SourceFile oldFile("before.conf", itself ? text : text.substr(0, cut + 1));
    ibqos::SourceFile newFile("after.conf", itself ? text : text.substr(cut + 4));
    ibqos::Diagnostics diagnostics;
    const ibqos::Policy before = ibqos::loadPolicy(oldFile, diagnostics);
    const ibqos::Policy after = ibqos::loadPolicy(newFile, diagnostics);
    if (diagnostics.hasErrors()) return 0;  // ibqos diff compares no such pair

    const std::optional<ibqos::PolicyDiff> everywhere = ibqos::diffPolicies(before, after, Budget);
    const auto& fabric = ibqos::fuzz::sampleFabric();
    auto oldCompiled = ibqos::FabricCompilation::compile(before, fabric, ibqos::OpenSmConf{},
                                                         diagnostics, ibqos::CompileStage::Tables);
    auto newCompiled = ibqos::FabricCompilation::compile(after, fabric, ibqos::OpenSmConf{},
                                                         diagnostics, ibqos::CompileStage::Tables);
    std::optional<ibqos::PolicyDiff> here;
    if (!diagnostics.hasErrors())
        here = ibqos::diffPolicies(oldCompiled->bound(), newCompiled->bound(), Budget);

    if (everywhere) describe(before, after, *everywhere);
    if (here) {
        describe(before, after, *here);
        checkRegions(oldCompiled->bound(), newCompiled->bound(), *here);
    }
    if (itself && ((everywhere && (!everywhere->regions.empty() || !everywhere->scopes.empty())) ||
                   (here && !here->regions.empty())))
        wrong("a policy compared with itself changes");
    if (everywhere && here && everywhere->regions.empty() && !here->regions.empty())
        wrong("requests change on the sample fabric, but on no fabric");
    return 0;
}

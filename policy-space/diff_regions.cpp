// SPDX-License-Identifier: MIT
// The diff's regions as numbers: answers as a region keeps them, a field's values as the parts
// a region can say, regions joined along one dimension at a time, and unpacked at the end.
#include "policy-space/diff_engine.hpp"

#include <algorithm>
#include <unordered_map>

#include "ib/qos.hpp"

namespace ibqos::diff_engine {

// A loopback path's packet life put back to the level's, so that it shows as a path between
// two ports does.
PathAnswer asNonLoopback(const Policy& policy, PathAnswer a) {
    const QosLevel& level = policy.levels[a.match.level];
    a.packetLife = level.packetLife ? std::optional<uint8_t>(*level.packetLife & 63) : std::nullopt;
    return a;
}

// The answer on a fabric where both ends share every partition (what every fabric allows):
// only the level can reject, by its SL or by a requested PKey it does not list.
PathAnswer answerEverywhere(const Policy& policy, QosMatch match, std::optional<uint16_t> pkey) {
    const QosLevel& level = policy.levels[match.level];
    PathAnswer a = levelAnswer(policy, match);
    if (!answeredSl(level.sl)) {
        a.rejection = Rejection::InvalidSl;
    } else if (pkey && !level.pkeys.empty() && !level.pkeys.contains(ib::pkeyBase(*pkey))) {
        a.rejection = Rejection::PkeyNotInLevel;
    }
    return a;
}

// Index ranges as value ranges of a field (index 0, absent, left out).
std::vector<Range> valuesOf(const RequestSpace& space, RequestField f, const IndexRanges& set) {
    std::vector<Range> out;
    for (const Range& r : set) {
        for (uint64_t i = std::max<uint64_t>(r.lo, 1); i <= r.hi; ++i) {
            const Range v = space.fieldInterval(f, i);
            if (!out.empty() && out.back().hi + 1 == v.lo) {
                out.back().hi = v.hi;
            } else {
                out.push_back(v);
            }
        }
    }
    return out;
}

bool holdsIndex(const IndexRanges& set, uint64_t i) {
    return std::any_of(set.begin(), set.end(),
                       [i](const Range& r) { return r.lo <= i && i <= r.hi; });
}

uint64_t countOf(const IndexRanges& set) {
    uint64_t n = 0;
    for (const Range& r : set) n += r.hi - r.lo + 1;
    return n;
}

// A field's values in a product, split into what a region can say: every value and absent
// (any), only absent, and ranges of values.
std::vector<FieldValues> fieldParts(const RequestSpace& space, RequestField f, uint64_t size,
                                    const IndexRanges& set) {
    if (countOf(set) == size) return {FieldValues{true, false, {}}};
    std::vector<FieldValues> out;
    if (holdsIndex(set, 0)) out.push_back(FieldValues{false, true, {}});
    std::vector<Range> values = valuesOf(space, f, set);
    if (!values.empty()) out.push_back(FieldValues{false, false, std::move(values)});
    return out;
}

// The sorted union of lists.
uint32_t listUnion(RegionParts& parts, const std::vector<uint32_t>& ids) {
    std::vector<uint32_t> all;
    for (uint32_t id : ids) all.insert(all.end(), parts.lists[id].begin(), parts.lists[id].end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return parts.lists.id(std::move(all));
}

// Joins regions with the same answers that differ in one dimension only, one dimension after
// the other: the union along that dimension is a product too. A region joins the first one
// before it that matches it in every other part.
std::vector<PackedRegion> joinRegions(std::vector<PackedRegion> regions, RegionParts& parts) {
    using Key = std::array<uint32_t, 6>;
    struct KeyHash {
        size_t operator()(const Key& k) const {
            Mix m;
            for (uint32_t v : k) m.add(v);
            return m.h;
        }
    };
    for (size_t dim = 0; dim < 5; ++dim) {
        std::unordered_map<Key, uint32_t, KeyHash> index;
        index.reserve(regions.size());
        std::vector<PackedRegion> joined;
        joined.reserve(regions.size());
        // Per joined region: the regions joined into it (their indices), itself first.
        std::vector<std::vector<uint32_t>> members;
        members.reserve(regions.size());
        for (uint32_t i = 0; i < regions.size(); ++i) {
            const PackedRegion& r = regions[i];
            // A field joins by its ranges ("any" and "absent" stand as they are); an end by its
            // list ("any port" stands as it is). A loopback-only region is one set of ports at
            // both ends: it joins by neither.
            const bool joins = dim < SourceDim ? !parts.fields[r.dims[dim]].any &&
                                                     !parts.fields[r.dims[dim]].absent
                                               : parts.keys[r.key].loopback != Loopback::Only &&
                                                     !parts.lists[r.dims[dim]].empty();
            Key key{r.key, r.dims[0], r.dims[1], r.dims[2], r.dims[3], r.dims[4]};
            key[1 + dim] = UINT32_MAX;
            const auto [it, fresh] =
                joins ? index.try_emplace(key, static_cast<uint32_t>(joined.size()))
                      : std::make_pair(index.end(), true);
            if (fresh) {
                joined.push_back(r);
                members.push_back({i});
            } else {
                members[it->second].push_back(i);
            }
        }
        for (size_t j = 0; j < joined.size(); ++j) {
            if (members[j].size() == 1) continue;
            PackedRegion& into = joined[j];
            std::vector<uint32_t> dims, before, after;
            std::vector<Range> ranges;
            for (uint32_t i : members[j]) {
                const PackedRegion& r = regions[i];
                if (dim < SourceDim) {
                    const std::vector<Range>& more = parts.fields[r.dims[dim]].ranges;
                    ranges.insert(ranges.end(), more.begin(), more.end());
                } else {
                    dims.push_back(r.dims[dim]);
                }
                before.push_back(r.beforeRules);
                after.push_back(r.afterRules);
            }
            into.dims[dim] = dim < SourceDim
                                 ? parts.fields.id(FieldValues{
                                       false, false, RangeSet::build(std::move(ranges)).ranges()})
                                 : listUnion(parts, dims);
            into.beforeRules = listUnion(parts, before);
            into.afterRules = listUnion(parts, after);
        }
        regions = std::move(joined);
    }
    return regions;
}

// A region as the diff gives it (on a fabric its ends as membership classes).
// classes: the fabric's membership classes, or null without a fabric.
DiffRegion unpack(const PackedRegion& p, const RegionParts& parts,
                  const std::shared_ptr<const EndpointSet::Classes>& classes) {
    DiffRegion r;
    const RegionKey& key = parts.keys[p.key];
    r.before = parts.answers[p.key].first;
    r.after = parts.answers[p.key].second;
    r.loopback = key.loopback;
    r.pkeyKnown = key.pkeyKnown;
    r.qosClasses = parts.fields[p.dims[0]];
    r.serviceIds = parts.fields[p.dims[1]];
    r.pkeys = parts.fields[p.dims[2]];
    r.beforeRules = parts.lists[p.beforeRules];
    r.afterRules = parts.lists[p.afterRules];
    const std::vector<uint32_t>& sources = parts.lists[p.dims[SourceDim]];
    const std::vector<uint32_t>& destinations = parts.lists[p.dims[DestinationDim]];
    if (classes) {
        r.sources = EndpointSet(classes, sources);
        r.destinations = EndpointSet(classes, destinations);
    } else {
        r.sourceKinds.reserve(sources.size());
        for (uint32_t k : sources) r.sourceKinds.push_back(parts.kinds[k]);
        r.destinationKinds.reserve(destinations.size());
        for (uint32_t k : destinations) r.destinationKinds.push_back(parts.kinds[k]);
        r.anySource = sources.empty();
        r.anyDestination = destinations.empty();
    }
    return r;
}

}  // namespace ibqos::diff_engine

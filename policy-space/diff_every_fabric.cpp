// SPDX-License-Identifier: MIT
// The Differ on every fabric the policies could meet: the answers depend on the PKey alone (a
// fabric where both ends share every partition), and the ends of a product of the fields are
// the kinds of port below its diagram node, listed once per node.
#include "policy-space/diff_engine.hpp"

#include <algorithm>
#include <string>

namespace ibqos::diff_engine {

const std::vector<std::pair<uint32_t, uint32_t>>& Differ::endsBelow(Ref g) {
    auto [memo, fresh] = endsBelow_.try_emplace(g);
    if (!fresh) return memo->second;
    std::vector<std::pair<Ref, std::vector<uint32_t>>> sources;
    std::unordered_map<Ref, size_t> at;
    RequestCube cube;
    cube.dims.resize(space_.dimensions().size());
    products(g, sourceFrom_, destinationFrom_, cube, [&](const RequestCube& c, Ref h) {
        auto [it, added] = at.try_emplace(h, sources.size());
        if (added) sources.push_back({h, {}});
        sources[it->second].second.push_back(kindIn(c, RequestSpace::Ends::Source));
    });
    for (const auto& [h, kinds] : sources)
        memo->second.emplace_back(kindList(kinds), destinationsBelow(h));
    return memo->second;
}

uint32_t Differ::destinationsBelow(Ref h) {
    auto [memo, fresh] = destinationsBelow_.try_emplace(h);
    if (!fresh) return memo->second;
    std::vector<uint32_t> kinds;
    RequestCube cube;
    cube.dims.resize(space_.dimensions().size());
    products(h, destinationFrom_, space_.dimensions().size(), cube, [&](const RequestCube& c, Ref) {
        kinds.push_back(kindIn(c, RequestSpace::Ends::Destination));
    });
    memo->second = kindList(kinds);
    return memo->second;
}

uint32_t Differ::kindIn(const RequestCube& cube, RequestSpace::Ends end) {
    const bool source = end == RequestSpace::Ends::Source;
    const size_t first = source ? sourceFrom_ : destinationFrom_;
    const size_t last = source ? destinationFrom_ : cube.dims.size();
    const std::span<const IndexRanges> sets(cube.dims.data() + first, last - first);
    return onceFor(source ? 3 : 4, sets, [&] {
        PortKind kind = kindOf(cube, end);
        return std::vector<uint32_t>{kind == PortKind{} ? AnyPort : parts_.kindOf(std::move(kind))};
    })[0];
}

uint32_t Differ::kindList(std::vector<uint32_t> kinds) {
    std::sort(kinds.begin(), kinds.end());
    kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
    if (!kinds.empty() && kinds.back() == AnyPort) kinds.clear();  // empty: any port
    return parts_.lists.id(std::move(kinds));
}

Ref Differ::cutToChangingPkeys(Ref part, QosMatch before, QosMatch after) {
    std::vector<Range> changing;
    bool absentChanges = false;
    for (uint64_t i = 0; i < sizes_[pkeyDim_]; ++i) {
        std::optional<uint16_t> pkey;
        if (i > 0) pkey = space_.fieldInterval(RequestField::Pkey, i).lo;
        const PathAnswer a = answerEverywhere(policy(0), before, pkey);
        const PathAnswer b = answerEverywhere(policy(1), after, pkey);
        pkeyAnswers_[i] = NoChange;
        if (!answersDiffer(policy(0), a, policy(1), b)) continue;
        // A loopback path answers packet life 0 under both: where only the packet life
        // changes, loopback paths keep their answer.
        PathAnswer same = b;
        same.packetLife = a.packetLife;
        const bool lifeOnly = a.ok() && b.ok() && !answersDiffer(policy(0), a, policy(1), same);
        pkeyAnswers_[i] =
            parts_.answersOf(a, b, lifeOnly ? Loopback::Excluded : Loopback::Both, false);
        if (i == 0) {
            absentChanges = true;
        } else {
            changing.push_back(space_.fieldInterval(RequestField::Pkey, i));
        }
    }
    if (absentChanges && changing.size() + 1 == sizes_[pkeyDim_]) return part;
    Ref cut = space_.fieldIn(RequestField::Pkey, RangeSet::build(std::move(changing)));
    if (absentChanges) cut = dd_.disj(cut, space_.fieldAbsent(RequestField::Pkey));
    return dd_.conj(part, cut);
}

PortKind Differ::kindOf(const RequestCube& cube, RequestSpace::Ends end) const {
    using DK = RequestSpace::DimKind;
    const auto& dims = space_.dimensions();
    const PortAttributes& at = space_.attributes();
    PortKind kind;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].end != end || dims[d].kind == DK::Field || dims[d].kind == DK::Classes)
            continue;
        const IndexRanges& set = cube.dims[d];
        const bool all = countOf(set) == dims[d].size;
        switch (dims[d].kind) {
            case DK::NodeType:
                if (!all) {
                    kind.nodeTypes.emplace();
                    for (uint64_t t = 0; t < 3; ++t) {
                        if (holdsIndex(set, t))
                            kind.nodeTypes->push_back(t == 0   ? NodeType::Ca
                                                      : t == 1 ? NodeType::Switch
                                                               : NodeType::Router);
                    }
                }
                break;
            case DK::Sm:
                if (!all) kind.sm = holdsIndex(set, 1);
                break;
            case DK::Partition:
                if (!all)
                    (holdsIndex(set, 1) ? kind.inPartitions : kind.notInPartitions)
                        .push_back(at.partitions[dims[d].item]);
                break;
            case DK::PkeyMember:
                if (!all)
                    (holdsIndex(set, 1) ? kind.inPkeys : kind.notInPkeys)
                        .push_back(at.pkeyIntervals[dims[d].item]);
                break;
            case DK::Name:
                if (!all) {
                    std::vector<std::string> in, out;
                    for (uint64_t i = 1; i < at.names.size(); ++i) {
                        (holdsIndex(set, i) ? in : out)
                            .push_back(at.names[i].first + "/P" +
                                       std::to_string(at.names[i].second));
                    }
                    if (holdsIndex(set, 0)) {
                        kind.notNames = std::move(out);
                    } else {
                        kind.names = std::move(in);
                    }
                }
                break;
            case DK::Guid:
                if (!all) {
                    kind.guids.emplace();
                    for (const Range& r : set) {
                        const Range v{at.guidIntervals[r.lo].lo, at.guidIntervals[r.hi].hi};
                        if (!kind.guids->empty() && kind.guids->back().hi + 1 == v.lo) {
                            kind.guids->back().hi = v.hi;
                        } else {
                            kind.guids->push_back(v);
                        }
                    }
                }
                break;
            default:
                break;
        }
    }
    return kind;
}

}  // namespace ibqos::diff_engine

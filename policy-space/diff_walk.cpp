// SPDX-License-Identifier: MIT
// The Differ's walk: each old rule's reach split by the new rules that get its requests, then
// what no old rule matches, then what neither policy matches (with few unpaired rules, only
// the requests they match are walked in full); each piece of requests decided by one old and
// one new rule goes to regionsOf.
#include "policy-space/diff_engine.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace ibqos::diff_engine {

Differ::Differ(RequestSpace& space, std::array<const PkeyTables*, 2> pkeys, Pairing pairing,
               RegionParts& parts)
    : space_(space),
      dd_(space.diagram()),
      pkeys_(pkeys),
      pairing_(std::move(pairing)),
      parts_(parts) {
    using DK = RequestSpace::DimKind;
    for (size_t p = 0; p < 2; ++p) reach_[p].assign(space_.policy(p).rules.size(), std::nullopt);
    for (const RequestSpace::Dimension& d : space_.dimensions()) sizes_.push_back(d.size);
    qosDim_ = dimOf(DK::Field, RequestField::QosClass);
    sidDim_ = dimOf(DK::Field, RequestField::ServiceId);
    pkeyDim_ = dimOf(DK::Field, RequestField::Pkey);
    if (pkeys_[0]) {
        for (const std::vector<uint32_t>& c : space_.classes()) {
            if (!c.empty() && pkeys_[0]->table(c.front()) != pkeys_[1]->table(c.front()))
                pkeysChange_ = true;
        }
        classDims_[0] = dimOf(DK::Classes, {}, RequestSpace::Ends::Source);
        classDims_[1] = dimOf(DK::Classes, {}, RequestSpace::Ends::Destination);
    }
    pkeyAnswers_.assign(sizes_[pkeyDim_], NoChange);
    const auto& dims = space_.dimensions();
    while (sourceFrom_ < dims.size() && dims[sourceFrom_].kind == DK::Field) ++sourceFrom_;
    destinationFrom_ = sourceFrom_;
    while (destinationFrom_ < dims.size() && dims[destinationFrom_].kind != DK::Field &&
           dims[destinationFrom_].end == RequestSpace::Ends::Source)
        ++destinationFrom_;
    for (size_t d = sourceFrom_; d < dims.size(); ++d) {
        if (dims[d].kind == DK::Field ||
            (d >= destinationFrom_) != (dims[d].end == RequestSpace::Ends::Destination))
            throw std::logic_error("Differ: the fields, sources and destinations interleave");
    }
}

template <typename NewReach>
void Differ::splitByNewRules(uint32_t i, Ref rest, NewReach&& newReach) {
    const auto newRules = static_cast<uint32_t>(space_.policy(1).rules.size());
    while (rest != DecisionDiagram::False) {
        dd_.spend(space_.pointSteps() + space_.lookupSteps(1, newRules));
        const std::optional<uint32_t> k =
            space_.firstMatch(1, space_.pointIn(rest), newRules, room_);
        const Ref part = k ? dd_.conj(rest, newReach(*k))
                           : outside(1, rest, space_.overlapping(1, newRules, 0, i));
        if (part == DecisionDiagram::False)
            throw std::logic_error("Differ: a request lies in no rule's reach");
        piece(part, i, k.value_or(newRules));
        rest = dd_.minus(rest, part);
    }
}

std::vector<PackedRegion> Differ::run() {
    const auto oldRules = static_cast<uint32_t>(space_.policy(0).rules.size());
    const auto newRules = static_cast<uint32_t>(space_.policy(1).rules.size());
    // With few unpaired rules, only what they match is walked in full.
    if (pairing_.unpaired <= std::max<size_t>(8, (oldRules + newRules) / 8))
        return runPaired(oldRules, newRules);
    // Old rule by old rule: which new rule gets each part of its reach.
    for (uint32_t i = 0; i < oldRules; ++i)
        splitByNewRules(i, reach(0, i), [this](uint32_t k) { return reach(1, k); });
    // What no old rule matches, new rule by new rule.
    for (uint32_t k = 0; k < newRules; ++k) {
        if (!differ(oldRules, k)) continue;
        piece(outside(0, reach(1, k), space_.overlapping(0, oldRules, 1, k)), oldRules, k);
    }
    // What neither matches.
    if (differ(oldRules, newRules)) {
        Ref rest = DecisionDiagram::True;
        for (size_t p = 0; p < 2; ++p) {
            const auto n = static_cast<uint32_t>(space_.policy(p).rules.size());
            std::vector<uint32_t> all(n);
            std::iota(all.begin(), all.end(), 0u);
            rest = outside(p, rest, all);
        }
        piece(rest, oldRules, newRules);
    }
    return std::move(regions_);
}

std::vector<PackedRegion> Differ::runPaired(uint32_t oldRules, uint32_t newRules) {
    // X: the requests some unpaired rule matches; the rules that may meet it.
    std::set<uint32_t> meeting[2];
    for (size_t p = 0; p < 2; ++p) {
        const auto n = static_cast<uint32_t>(space_.policy(p).rules.size());
        for (uint32_t r = 0; r < n; ++r) {
            if (pairing_.partner[p][r] != NoRule) continue;
            unpairedX_ = dd_.disj(unpairedX_, space_.rule(p, r));
            for (size_t q = 0; q < 2; ++q) {
                const auto all = static_cast<uint32_t>(space_.policy(q).rules.size());
                for (uint32_t i : space_.overlapping(q, all, p, r)) meeting[q].insert(i);
                dd_.spend(1 + meeting[q].size() / 8);
            }
        }
    }
    for (size_t p = 0; p < 2; ++p) reachInX_[p].assign(space_.policy(p).rules.size(), {});
    const Ref outsideX = dd_.negate(unpairedX_);
    // Outside X: a pair whose levels answer differently changes its whole reach there.
    for (uint32_t i = 0; i < oldRules; ++i) {
        const uint32_t k = pairing_.partner[0][i];
        if (k == NoRule || !differ(i, k)) continue;
        piece(dd_.conj(reach(0, i), outsideX), i, k);
    }
    if (differ(oldRules, newRules)) {
        // Matched by no rule in either policy (outside X the rules are the pairs').
        std::vector<uint32_t> all(oldRules);
        std::iota(all.begin(), all.end(), 0u);
        piece(outside(0, outsideX, all), oldRules, newRules);
    }
    if (unpairedX_ == DecisionDiagram::False) return std::move(regions_);
    // Inside X, the full walk, every reach cut to X.
    for (uint32_t i : meeting[0])
        splitByNewRules(i, reachInX(0, i), [this](uint32_t k) { return reachInX(1, k); });
    for (uint32_t k : meeting[1]) {
        if (!differ(oldRules, k)) continue;
        piece(outside(0, reachInX(1, k), space_.overlapping(0, oldRules, 1, k)), oldRules, k);
    }
    return std::move(regions_);
}

Ref Differ::reachInX(size_t p, uint32_t r) {
    std::optional<Ref>& memo = reachInX_[p][r];
    if (!memo) {
        memo = outsideEarlier(p, dd_.conj(space_.rule(p, r), unpairedX_), r);
    }
    return *memo;
}

uint32_t Differ::levelOf(size_t p, uint32_t rule) const {
    return rule < policy(p).rules.size() ? policy(p).rules[rule].level : policy(p).defaultLevel;
}

bool Differ::differ(uint32_t oldRule, uint32_t newRule) const {
    return pkeysChange_ || levelKey(policy(0).levels[levelOf(0, oldRule)]) !=
                               levelKey(policy(1).levels[levelOf(1, newRule)]);
}

Ref Differ::outside(size_t p, Ref f, const std::vector<uint32_t>& rules) {
    for (uint32_t r : rules) {
        if (f == DecisionDiagram::False) break;
        f = dd_.minus(f, space_.rule(p, r));
    }
    return f;
}

Ref Differ::outsideEarlier(size_t p, Ref f, uint32_t r) {
    std::vector<uint32_t> earlier = space_.overlapping(p, r, p, r);
    std::stable_sort(earlier.begin(), earlier.end(), [&](uint32_t a, uint32_t b) {
        return space_.extent(p, a) > space_.extent(p, b);
    });
    return outside(p, f, earlier);
}

Ref Differ::reach(size_t p, uint32_t r) {
    std::optional<Ref>& memo = reach_[p][r];
    if (!memo) memo = outsideEarlier(p, space_.rule(p, r), r);
    return *memo;
}

void Differ::piece(Ref part, uint32_t oldRule, uint32_t newRule) {
    if (part == DecisionDiagram::False || !differ(oldRule, newRule)) return;
    const QosMatch before{levelOf(0, oldRule), oldRule < policy(0).rules.size() ? oldRule : NoRule};
    const QosMatch after{levelOf(1, newRule), newRule < policy(1).rules.size() ? newRule : NoRule};
    if (pkeys_[0]) {
        space_.cubes(part,
                     [&](const RequestCube& cube) { regionsOf(cube, before, after, nullptr); });
        return;
    }
    // Every fabric: the products of the fields, each with the ends of the requests below
    // it, listed once per diagram node (a union of kinds of port at each end).
    part = cutToChangingPkeys(part, before, after);
    RequestCube cube;
    cube.dims.resize(space_.dimensions().size());
    products(part, 0, sourceFrom_, cube, [&](const RequestCube& fields, Ref below) {
        regionsOf(fields, before, after, &endsBelow(below));
    });
}

size_t Differ::dimOf(RequestSpace::DimKind kind, RequestField field, RequestSpace::Ends end) const {
    const auto& dims = space_.dimensions();
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].kind == kind &&
            (kind != RequestSpace::DimKind::Field || dims[d].field == field) &&
            (kind == RequestSpace::DimKind::Field || dims[d].end == end))
            return d;
    }
    throw std::logic_error("Differ: no such dimension");
}

}  // namespace ibqos::diff_engine

// SPDX-License-Identifier: MIT
// The Differ's answers on a fabric: a product's ends by their pairs of PKey tables, each pair's
// paths (between two ports, and loopback) answered as the SA does at each PKey value, and the
// regions a product's answers make; a field's values as the parts a region can say.
#include "policy-space/diff_engine.hpp"

#include <algorithm>
#include <iterator>

namespace ibqos::diff_engine {

namespace {

// Every class of a product's end, whatever its PKey tables.
std::vector<uint32_t> flatten(const ClassesByTable& byTable) {
    std::vector<uint32_t> all;
    for (const auto& [table, list] : byTable) all.insert(all.end(), list.begin(), list.end());
    std::sort(all.begin(), all.end());
    return all;
}

}  // namespace

std::optional<std::pair<uint32_t, uint32_t>> Differ::pathBetween(const std::vector<uint32_t>& ss,
                                                                 const std::vector<uint32_t>& ds) {
    const auto& classes = space_.classes();
    const uint32_t s = classes[ss.front()].front();
    for (uint32_t c : ds) {
        for (uint32_t d : classes[c]) {
            if (d != s) return std::make_pair(s, d);
        }
    }
    // Else every destination is s itself: another source to s.
    for (uint32_t c : ss) {
        for (uint32_t p : classes[c]) {
            if (p != s) return std::make_pair(p, s);
        }
    }
    return std::nullopt;
}

std::optional<Differ::PairChange> Differ::pairChange(
    std::optional<std::pair<uint32_t, uint32_t>> path, std::optional<uint32_t> loopPort,
    std::optional<uint16_t> pkey, QosMatch before, QosMatch after) {
    PathQuery query;
    query.pkey = pkey;
    auto answer = [&](uint32_t s, uint32_t d) {
        query.source = s;
        query.destination = d;
        return std::make_pair(answerPath(policy(0), *pkeys_[0], query, before),
                              answerPath(policy(1), *pkeys_[1], query, after));
    };
    auto keyFor = [&](const std::pair<PathAnswer, PathAnswer>& a, Loopback lb) {
        return answersKey(asNonLoopback(policy(0), a.first), asNonLoopback(policy(1), a.second),
                          lb);
    };
    auto changes = [&](const std::pair<PathAnswer, PathAnswer>& a) {
        return answersDiffer(policy(0), a.first, policy(1), a.second);
    };
    std::optional<std::pair<PathAnswer, PathAnswer>> between, loop;
    if (path) between = answer(path->first, path->second);
    if (loopPort) loop = answer(*loopPort, *loopPort);
    const bool betweenChanges = between && changes(*between);
    const bool loopChanges = loop && changes(*loop);
    if (!betweenChanges && !loopChanges) return std::nullopt;
    PairChange c;
    // Loopback paths that change as the others do join their region.
    const std::optional<uint32_t> betweenKey =
        betweenChanges ? std::optional(keyFor(*between, Loopback::Both)) : std::nullopt;
    const std::optional<uint32_t> loopKey =
        loopChanges ? std::optional(keyFor(*loop, Loopback::Both)) : std::nullopt;
    const bool sameWay = betweenKey && loopKey && *betweenKey == *loopKey;
    if (betweenChanges) {
        c.between = sameWay || !loop ? *betweenKey : keyFor(*between, Loopback::Excluded);
    }
    if (loopChanges && !sameWay) c.loop = keyFor(*loop, Loopback::Only);
    // Uniform: whatever paths there are change, and the same way.
    if ((sameWay || (betweenKey && !loop) || (loopKey && !between))) {
        c.uniform = betweenKey ? betweenKey : loopKey;
    }
    return c;
}

std::pair<uint32_t, uint32_t> Differ::tablesOf(uint32_t port) const {
    return {pkeys_[0]->tableId(port), pkeys_[1]->tableId(port)};
}

uint32_t Differ::answersKey(PathAnswer before, PathAnswer after, Loopback loopback) {
    const bool pkeyKept = before.ok() && after.ok() && before.pkey == after.pkey;
    if (pkeyKept) before.pkey = after.pkey = 0;
    return parts_.answersOf(before, after, loopback, !pkeyKept);
}

std::optional<uint16_t> Differ::pkeyValue(uint64_t index) const {
    if (index == 0) return std::nullopt;
    return static_cast<uint16_t>(space_.fieldInterval(RequestField::Pkey, index).lo);
}

void Differ::AnswerGroups::add(uint32_t key, uint32_t sources, uint32_t destinations,
                               uint64_t index) {
    for (AnswerGroup& g : list) {
        if (g.key == key && g.sources == sources && g.destinations == destinations) {
            if (g.pkeys.back().hi + 1 == index) {
                g.pkeys.back().hi = index;
            } else {
                g.pkeys.push_back({index, index});
            }
            return;
        }
    }
    list.push_back({key, sources, destinations, {{index, index}}});
}

void Differ::regionsOf(const RequestCube& cube, QosMatch before, QosMatch after,
                       const std::vector<std::pair<uint32_t, uint32_t>>* ends) {
    const uint32_t beforeRules = parts_.lists.id({before.rule});
    const uint32_t afterRules = parts_.lists.id({after.rule});
    std::vector<uint64_t> pkeyIndices;
    for (const Range& r : cube.dims[pkeyDim_]) {
        for (uint64_t i = r.lo; i <= r.hi; ++i) pkeyIndices.push_back(i);
    }
    AnswerGroups groups;
    if (pkeys_[0]) {
        groupOnFabric(cube, pkeyIndices, before, after, groups);
    } else {
        // Every fabric: the answers where both ends share every partition, which depend on
        // the PKey alone (cutToChangingPkeys); the ends come with each group.
        for (uint64_t index : pkeyIndices) {
            if (pkeyAnswers_[index] != NoChange) groups.add(pkeyAnswers_[index], 0, 0, index);
        }
    }
    writeRegions(cube, groups, ends, beforeRules, afterRules);
}

void Differ::groupOnFabric(const RequestCube& cube, const std::vector<uint64_t>& pkeyIndices,
                           QosMatch before, QosMatch after, AnswerGroups& groups) {
    // The ends' classes (each holds ports of one PKey table) by their PKey table, then paths
    // between two ports and loopback paths, each answered as the SA does. Regions name classes
    // here; diffPolicies lists their endpoints at the end.
    const auto& classes = space_.classes();
    auto byTable = [&](const IndexRanges& set) {
        ClassesByTable out;
        for (const Range& r : set) {
            for (uint64_t c = r.lo; c <= r.hi; ++c)
                out[tablesOf(classes[c].front())].push_back(static_cast<uint32_t>(c));
        }
        return out;
    };
    const ClassesByTable sources = byTable(cube.dims[classDims_[0]]);
    const ClassesByTable destinations = byTable(cube.dims[classDims_[1]]);
    const std::vector<TablePair> pairs =
        tablePairs(sources, destinations, pkeyIndices, before, after);
    // Every path of the product changing one way makes one region; else each pair of tables
    // its own.
    const uint32_t allSources = parts_.lists.id(flatten(sources));
    const uint32_t allDestinations = parts_.lists.id(flatten(destinations));
    for (size_t i = 0; i < pkeyIndices.size(); ++i) {
        std::optional<uint32_t> uniform = pairs.empty()         ? std::nullopt
                                          : pairs[0].changes[i] ? pairs[0].changes[i]->uniform
                                                                : std::nullopt;
        for (const TablePair& pair : pairs) {
            if (!uniform || !pair.changes[i] || pair.changes[i]->uniform != uniform) {
                uniform.reset();
                break;
            }
        }
        if (uniform) {
            groups.add(*uniform, allSources, allDestinations, pkeyIndices[i]);
            continue;
        }
        for (const TablePair& pair : pairs) {
            const std::optional<PairChange>& c = pair.changes[i];
            if (!c) continue;
            if (c->between)
                groups.add(*c->between, pair.sources, pair.destinations, pkeyIndices[i]);
            if (c->loop) groups.add(*c->loop, pair.common, pair.common, pkeyIndices[i]);
        }
    }
}

std::vector<Differ::TablePair> Differ::tablePairs(const ClassesByTable& sources,
                                                  const ClassesByTable& destinations,
                                                  const std::vector<uint64_t>& pkeyIndices,
                                                  QosMatch before, QosMatch after) {
    const auto& classes = space_.classes();
    std::vector<TablePair> pairs;
    for (const auto& [st, ss] : sources) {
        for (const auto& [dt, ds] : destinations) {
            std::vector<uint32_t> common;
            std::set_intersection(ss.begin(), ss.end(), ds.begin(), ds.end(),
                                  std::back_inserter(common));
            TablePair& pair = pairs.emplace_back();
            pair.sources = parts_.lists.id(ss);
            pair.destinations = parts_.lists.id(ds);
            pair.common = parts_.lists.id(common);
            const std::optional<std::pair<uint32_t, uint32_t>> path = pathBetween(ss, ds);
            const std::optional<uint32_t> loopPort =
                common.empty() ? std::nullopt : std::optional(classes[common[0]].front());
            for (uint64_t index : pkeyIndices)
                pair.changes.push_back(pairChange(path, loopPort, pkeyValue(index), before, after));
        }
    }
    return pairs;
}

void Differ::writeRegions(const RequestCube& cube, AnswerGroups& groups,
                          const std::vector<std::pair<uint32_t, uint32_t>>* ends,
                          uint32_t beforeRules, uint32_t afterRules) {
    const std::vector<uint32_t>& qos = fieldPartsOf(RequestField::QosClass, cube.dims[qosDim_]);
    const std::vector<uint32_t>& sid = fieldPartsOf(RequestField::ServiceId, cube.dims[sidDim_]);
    for (AnswerGroup& g : groups.list) {
        const IndexRanges merged = RangeSet::build(std::move(g.pkeys)).ranges();
        const std::pair<uint32_t, uint32_t> own{g.sources, g.destinations};
        for (const auto& [sources, destinations] :
             ends ? *ends : std::vector<std::pair<uint32_t, uint32_t>>{own}) {
            for (uint32_t pk : fieldPartsOf(RequestField::Pkey, merged)) {
                for (uint32_t q : qos) {
                    for (uint32_t s : sid) {
                        regions_.push_back(
                            {g.key, {q, s, pk, sources, destinations}, beforeRules, afterRules});
                    }
                }
            }
        }
    }
}

const std::vector<uint32_t>& Differ::fieldPartsOf(RequestField f, const IndexRanges& set) {
    return onceFor(static_cast<uint64_t>(f), {&set, 1}, [&] {
        const size_t dim = f == RequestField::QosClass    ? qosDim_
                           : f == RequestField::ServiceId ? sidDim_
                                                          : pkeyDim_;
        std::vector<uint32_t> out;
        for (FieldValues& v : fieldParts(space_, f, sizes_[dim], set))
            out.push_back(parts_.fields.id(std::move(v)));
        return out;
    });
}

}  // namespace ibqos::diff_engine

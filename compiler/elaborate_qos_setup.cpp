// SPDX-License-Identifier: MIT
// Elaboration of qos-setup: VL arbitration and SL2VL scopes, the bandwidth extension.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ibqos::passes {

// The policy has a qos-setup from the first block that belongs to one.
void Elaborator::noteQosSetup(const ast::Block& b) {
    if (!policy_.hasQosSetup) {
        policy_.hasQosSetup = true;
        policy_.qosSetupLocation = at(b.open);
    }
}

void Elaborator::qosSetup(ast::Block& b) {
    noteQosSetup(b);
    section(b);
}

void Elaborator::pairs(const ast::PairList& list, std::vector<VlArbEntry>& out, const char* field) {
    for (const ast::Pair& p : list) {
        if (p.percent) {
            error(
                "value-range", at(p),
                std::string(field) + " takes VL:weight pairs; percentages belong in 'bandwidth:'");
            continue;
        }
        auto vl = bounded(p.key, 0, ib::MaxDataVl, "a data VL", false);
        auto weight = bounded(p.value, 0, 255, "a VL arbitration weight (64-byte credits)", false);
        if (vl && weight) out.push_back({static_cast<uint8_t>(*vl), static_cast<uint8_t>(*weight)});
    }
}

void Elaborator::vlarbScope(const ast::Block& b) {
    noteQosSetup(b);
    VlArbScope scope;
    scope.location = at(b.open);
    SourceLocation lowAt;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Group:
                if (auto* t = value<ast::TextList>(*f)) names(*t, scope.groupNames);
                break;
            case Key::Across:
                if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossNames);
                break;
            case Key::VlArbHigh:
                if (auto* p = value<ast::PairList>(*f)) {
                    if (!scope.high) scope.high.emplace();
                    pairs(*p, *scope.high, "vlarb-high");
                    if (!scope.highLocation.line) scope.highLocation = at(*f);
                }
                break;
            case Key::VlArbLow:
                if (auto* p = value<ast::PairList>(*f)) {
                    if (!scope.low) scope.low.emplace();
                    pairs(*p, *scope.low, "vlarb-low");
                    lowAt = at(*f);
                    if (!scope.lowLocation.line) scope.lowLocation = lowAt;
                }
                break;
            case Key::VlHighLimit:
                if (auto* n = value<ast::Number>(*f)) {
                    if (scope.highLimit) {
                        report_.warning("duplicate-field", at(*f),
                                        "vlarb-scope has more than one 'vl-high-limit:'; the "
                                        "last one is used");
                    }
                    if (auto v = bounded(*n, 0, 255, "vl-high-limit", false))
                        scope.highLimit = static_cast<uint8_t>(*v);
                    scope.highLimitLocation = at(*f);  // the last one is used
                }
                break;
            case Key::Bandwidth:
                if (auto* p = value<ast::PairList>(*f)) bandwidth(*p, *f, scope);
                break;
            default:
                break;
        }
    }
    if (scope.groupNames.empty() && scope.acrossNames.empty() && !report_.syntaxErrorsIn(b)) {
        error("missing-field", scope.location,
              "vlarb-scope selects no ports: give 'group:' or 'across:'");
    }
    for (auto* table : {&scope.high, &scope.low}) {
        if (*table && (*table)->size() > 64) {
            setupError("value-range", scope.location,
                       "a VL arbitration table holds at most 64 entries, this one has " +
                           std::to_string((*table)->size()));
            (*table)->resize(64);
        }
    }
    if (!scope.high && !scope.low && !scope.highLimit && !scope.bandwidth &&
        !report_.syntaxErrorsIn(b)) {
        report_.warning("empty-scope", scope.location,
                        "this vlarb-scope sets nothing: give vlarb-high:, vlarb-low:, "
                        "vl-high-limit: or bandwidth:");
    }
    if (scope.bandwidth && scope.low) {
        setupError("bandwidth", lowAt,
                   "'bandwidth:' computes the low-priority table, so 'vlarb-low:' cannot be in "
                   "the same vlarb-scope");
    }
    policy_.vlarbScopes.push_back(std::move(scope));
}

void Elaborator::bandwidth(const ast::PairList& list, const ast::Field& f, VlArbScope& scope) {
    if (!scope.bandwidth) {
        scope.bandwidth.emplace();
        scope.bandwidthLocation = at(f);
    }
    for (const ast::Pair& p : list) {
        if (!p.percent) {
            setupError("bandwidth", at(p.value),
                       "'bandwidth:' takes VL:percent pairs such as 1:60%");
            continue;
        }
        auto vl = bounded(p.key, 0, ib::MaxDataVl, "a data VL", false);
        auto percent = bounded(p.value, 1, 100, "a bandwidth share in percent", false);
        if (!vl || !percent) continue;
        for (const VlShare& s : *scope.bandwidth) {
            if (s.vl == *vl) {
                setupError("bandwidth", at(p), "VL " + std::to_string(*vl) + " is given twice");
            }
        }
        scope.bandwidth->push_back({static_cast<uint8_t>(*vl), static_cast<uint8_t>(*percent)});
    }
}

// from:/to: port lists; every port when absent or '*'.
void Elaborator::portSet(const ast::Field& f, std::bitset<128>& ports, bool& given) {
    if (!f.located()) return;
    if (boost::get<ast::Star>(&f.value.get())) {
        ports.set();
        given = true;
        return;
    }
    auto* list = boost::get<ast::RangeList>(&f.value.get());
    if (!list) return;
    std::vector<Range> rs;
    std::vector<WrittenRange> written;
    ranges(*list, rs, &written);
    for (const WrittenRange& w : written) {
        if (w.range.hi >= 128) {
            error("value-range", w.location, "a port number in from:/to: must be below 128");
            continue;
        }
        for (uint64_t p = w.range.lo; p <= w.range.hi; ++p) ports.set(p);
    }
    given = true;
}

void Elaborator::sl2vlScope(const ast::Block& b) {
    noteQosSetup(b);
    Sl2VlScope scope;
    scope.location = at(b.open);
    std::bitset<64> seen;
    bool fromGiven = false, toGiven = false, tableOk = false;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Group:
                if (auto* t = value<ast::TextList>(*f)) names(*t, scope.groupNames);
                break;
            case Key::Across:
                if (auto* t = value<ast::TextList>(*f)) {
                    names(*t, scope.acrossFromNames);
                    names(*t, scope.acrossToNames);
                }
                break;
            case Key::AcrossFrom:
                if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossFromNames);
                break;
            case Key::AcrossTo:
                if (auto* t = value<ast::TextList>(*f)) names(*t, scope.acrossToNames);
                break;
            case Key::From:
                portSet(*f, scope.from, fromGiven);
                break;
            case Key::To:
                portSet(*f, scope.to, toGiven);
                break;
            case Key::Sl2VlTable:
                if (auto* list = single<ast::NumberList>(*f, seen, b.kind))
                    tableOk = sl2vlTable(*list, *f, scope);
                break;
            default:
                break;
        }
    }
    if (!fromGiven) scope.from.set();
    if (!toGiven) scope.to.set();
    requireField(b, seen, Key::Sl2VlTable);
    if (scope.groupNames.empty() && scope.acrossFromNames.empty() && scope.acrossToNames.empty() &&
        !report_.syntaxErrorsIn(b)) {
        error("missing-field", scope.location,
              "sl2vl-scope selects no ports: give 'group:', 'across:', 'across-from:' or "
              "'across-to:'");
    }
    if (tableOk) policy_.sl2vlScopes.push_back(std::move(scope));
}

bool Elaborator::sl2vlTable(const ast::NumberList& list, const ast::Field& f, Sl2VlScope& scope) {
    if (list.size() != ib::SlCount) {
        error("sl2vl-table", at(f),
              "an sl2vl-table lists exactly " + std::to_string(ib::SlCount) +
                  " VLs (one per SL), this one has " + std::to_string(list.size()));
        return false;
    }
    bool ok = true;
    for (size_t sl = 0; sl < ib::SlCount; ++sl) {
        auto vl = bounded(list[sl], 0, ib::DropVl,
                          "a VL (" + std::to_string(ib::DropVl) + " drops the SL)");
        if (!vl) {
            ok = false;
            continue;
        }
        scope.table[sl] = static_cast<uint8_t>(*vl);
    }
    return ok;
}

}  // namespace ibqos::passes

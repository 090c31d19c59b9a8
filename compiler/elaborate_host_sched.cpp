// SPDX-License-Identifier: MIT
// Elaboration of the host-sched extension.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ibqos::passes {

// The section is present from its first block (a block written without it counts).
void Elaborator::hostSchedAt(const ast::Block& b) {
    if (policy_.hostSched.present) return;
    policy_.hostSched.present = true;
    policy_.hostSched.location = at(b.open);
}

void Elaborator::hostSched(ast::Block& b) {
    hostSchedAt(b);
    for (ast::Item& item : b.items) {
        if (auto* inner = boost::get<ast::x3::forward_ast<ast::Block>>(&item)) block(inner->get());
    }
}

void Elaborator::schedElement(const ast::Block& b) {
    hostSchedAt(b);
    bool isLeaf = b.kind == BlockKind::SchedLeaf;
    SchedLeaf e;
    e.location = at(b.open);
    std::bitset<64> seen;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Name:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.name = name(*t);
                break;
            case Key::Use:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.use = t->value;
                break;
            case Key::Parent:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.parentName = nameRef(*t);
                break;
            case Key::BwShare:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, 1, 100, "bw-share (a relative weight)"))
                        e.bwShare = static_cast<uint32_t>(*v);
                }
                break;
            case Key::MaxAvgBw:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, 0, UINT32_MAX, "max-avg-bw (Mbit/s, 0 = unlimited)")) {
                        e.maxAvgBw = static_cast<uint32_t>(*v);
                    }
                }
                break;
            case Key::Sl:
                if (auto* r = value<ast::RangeList>(*f)) {
                    std::vector<WrittenRange> written;
                    std::vector<Range> rs;
                    ranges(*r, rs, &written);
                    if (e.slLocation.line == 0) e.slLocation = at(*f);
                    for (const WrittenRange& w : written) {
                        if (w.range.hi > ib::MaxSl) {
                            error("value-range", w.location,
                                  "an SL is 0.." + std::to_string(ib::MaxSl));
                            continue;
                        }
                        for (uint64_t sl = w.range.lo; sl <= w.range.hi; ++sl) e.sls.set(sl);
                    }
                }
                break;
            case Key::PccSlot:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, 0, 15, "pcc-slot"))
                        e.pccSlot = static_cast<uint32_t>(*v);
                }
                break;
            case Key::PccAlgorithm:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) e.pccAlgorithm = t->value;
                break;
            default:
                break;
        }
    }
    requireField(b, seen, Key::Name);
    gaps_.elementName |= nameLost(b, e.name);
    if (isLeaf) {
        policy_.hostSched.leaves.push_back(std::move(e));
    } else {
        policy_.hostSched.nodes.push_back(static_cast<SchedElement&&>(std::move(e)));
    }
}

// Executable names as the preload library compares them: one word, no directory.
void Elaborator::programNames(const ast::TextList& list, std::vector<std::string>& out) {
    for (const ast::Text& t : list) {
        std::string n = name(t);
        if (n.empty()) continue;
        if (n.find_first_of("/, \t") != std::string::npos) {
            error("value-range", at(t),
                  "'" + n + "' is not an executable name (no directory, blank or comma)");
            continue;
        }
        out.push_back(std::move(n));
    }
}

void Elaborator::slEnforcement(const ast::Block& b) {
    hostSchedAt(b);
    SlEnforcement e;
    e.location = at(b.open);
    std::bitset<64> seen;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Mode:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) {
                    if (auto mode = slModeFromName(t->value)) {
                        e.mode = *mode;
                    } else {
                        error("value-range", at(*t),
                              "mode is respect, audit or enforce, not '" + t->value + "'");
                    }
                }
                break;
            case Key::Programs:
                if (auto* l = value<ast::TextList>(*f)) programNames(*l, e.programs);
                break;
            case Key::ExceptPrograms:
                if (auto* l = value<ast::TextList>(*f)) programNames(*l, e.exceptPrograms);
                break;
            case Key::ResolveTimeout:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, 1, 1000, "resolve-timeout (milliseconds)"))
                        e.resolveTimeoutMs = static_cast<uint32_t>(*v);
                }
                break;
            default:
                break;
        }
    }
    requireField(b, seen, Key::Mode);
    policy_.hostSched.enforcement.push_back(std::move(e));
}

}  // namespace ibqos::passes

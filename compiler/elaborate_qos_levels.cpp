// SPDX-License-Identifier: MIT
// Elaboration of qos-levels.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "ib/link.hpp"

namespace ibqos::passes {

void Elaborator::qosLevel(const ast::Block& b) {
    QosLevel level;
    level.location = at(b.open);
    std::bitset<64> seen;
    std::vector<Range> pathBits, pkeys;
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Name:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) {
                    level.name = name(*t);
                    level.openSmName = t->openSm;
                }
                break;
            case Key::Use:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) level.use = t->value;
                break;
            case Key::Sl:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    auto sl = answeredSl(static_cast<uint8_t>(n->value));
                    level.sl = byte(*n, ib::MaxSl, Key::Sl,
                                    sl ? "its SA then answers SL " + std::to_string(*sl)
                                       : "its SA then answers no path for this level");
                }
                break;
            case Key::MtuLimit:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, ib::MinMtu, ib::MaxMtu,
                                         "mtu-limit (1=256 .. 5=4096 bytes)")) {
                        level.mtuLimit = static_cast<uint8_t>(*v);
                    }
                }
                break;
            case Key::RateLimit:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    if (auto v = bounded(*n, ib::MinRate, ib::MaxRate,
                                         "rate-limit (the IB rate enum, 2=2.5 .. 22=600 Gb/s)")) {
                        level.rateLimit = static_cast<uint8_t>(*v);
                    }
                }
                break;
            case Key::PacketLife:
                if (auto* n = single<ast::Number>(*f, seen, b.kind)) {
                    level.packetLife = byte(
                        *n, 63, Key::PacketLife,
                        "its SA then answers the low six bits, " + std::to_string(n->value & 63));
                }
                break;
            case Key::PathBits:
                if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pathBits);
                if (!pathBitsWarned_) {
                    pathBitsWarned_ = true;
                    report_.warning("ignored-field", at(*f),
                                    "path-bits is read but never used, by OpenSM or by ibqos");
                }
                break;
            case Key::Pkey:
                if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pkeys, nullptr, true);
                break;
            default:
                break;
        }
    }
    requireField(b, seen, Key::Name);
    requireField(b, seen, Key::Sl);
    gaps_.levelName |= nameLost(b, level.name);
    level.pathBits = RangeSet::build(std::move(pathBits));
    level.pkeys = RangeSet::build(std::move(pkeys));
    policy_.levels.push_back(std::move(level));
}

}  // namespace ibqos::passes

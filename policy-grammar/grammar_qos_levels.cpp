// SPDX-License-Identifier: MIT
// Grammar of the qos-levels section.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;

IBQOS_BLOCK_LINES(levels, "qos-levels", "end-qos-levels")
IBQOS_BLOCK_LINES(level, "qos-level", "end-qos-level")
IBQOS_FIELD_LINE(level)

auto const level_field_def =
    (field("name", Key::Name, values::text) | field("use", Key::Use, values::description) |
     field("sl", Key::Sl, values::number) | field("mtu-limit", Key::MtuLimit, values::number) |
     field("rate-limit", Key::RateLimit, values::number) |
     field("packet-life", Key::PacketLife, values::number) |
     field("path-bits", Key::PathBits, values::range_list) |
     field("pkey", Key::Pkey, values::range_list)) > values::end_line;
BOOST_SPIRIT_DEFINE(level_field)

const char* const levels_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-levels"};
const char* const level_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-levels", "end-qos-level",
                                  "qos-level"};

}  // namespace

auto const qos_level_def =
    block<BlockKind::QosLevel>(level_open, level_field, level_ends, level_close);

auto const qos_levels_def =
    block<BlockKind::QosLevels>(levels_open, qos_level, levels_ends, levels_close);

BOOST_SPIRIT_DEFINE(qos_level, qos_levels)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosLevel>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosLevels>, Iterator, Context)

}  // namespace ibqos::grammar

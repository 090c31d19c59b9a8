// SPDX-License-Identifier: MIT
// Grammar of the qos-levels section.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;
using values::fields;

IBQOS_BLOCK_LINES(levels, BlockKind::QosLevels)
IBQOS_BLOCK_LINES(level, BlockKind::QosLevel)
IBQOS_FIELD_LINE(level)

auto const level_field_def =
    fields(field(Key::Name, values::text), field(Key::Use, values::description),
           field(Key::Sl, values::number), field(Key::MtuLimit, values::number),
           field(Key::RateLimit, values::number), field(Key::PacketLife, values::number),
           field(Key::PathBits, values::range_list),
           field(Key::Pkey, values::range_list)) > values::end_line;
BOOST_SPIRIT_DEFINE(level_field)

}  // namespace

auto const qos_level_def = block<BlockKind::QosLevel>(level_open, level_field, level_close);

auto const qos_levels_def = block<BlockKind::QosLevels>(levels_open, qos_level, levels_close);

BOOST_SPIRIT_DEFINE(qos_level, qos_levels)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosLevel>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosLevels>, Iterator, Context)

}  // namespace ibqos::grammar

// SPDX-License-Identifier: MIT
// Grammar of the qos-setup section (vlarb-tables and sl2vl-tables), with the bandwidth extension.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;
using values::fields;

IBQOS_BLOCK_LINES(setup, BlockKind::QosSetup)
IBQOS_BLOCK_LINES(vlarbs, BlockKind::VlArbTables)
IBQOS_BLOCK_LINES(vlarb, BlockKind::VlArbScope)
IBQOS_BLOCK_LINES(sl2vls, BlockKind::Sl2VlTables)
IBQOS_BLOCK_LINES(sl2vl, BlockKind::Sl2VlScope)
IBQOS_FIELD_LINE(vlarb)
IBQOS_FIELD_LINE(sl2vl)

auto const vlarb_field_def =
    fields(field(Key::Group, values::text_list), field(Key::Across, values::text_list),
           field(Key::VlArbHigh, values::pair_list), field(Key::VlArbLow, values::pair_list),
           field(Key::VlHighLimit, values::number),
           field(Key::Bandwidth, values::pair_list)) > values::end_line;

auto const sl2vl_field_def =
    fields(field(Key::Group, values::text_list), field(Key::AcrossTo, values::text_list),
           field(Key::AcrossFrom, values::text_list), field(Key::Across, values::text_list),
           field(Key::From, values::port_list), field(Key::To, values::port_list),
           field(Key::Sl2VlTable, values::number_list)) > values::end_line;

BOOST_SPIRIT_DEFINE(vlarb_field, sl2vl_field)

}  // namespace

auto const vlarb_scope_def = block<BlockKind::VlArbScope>(vlarb_open, vlarb_field, vlarb_close);

auto const sl2vl_scope_def = block<BlockKind::Sl2VlScope>(sl2vl_open, sl2vl_field, sl2vl_close);

auto const vlarb_tables_def = block<BlockKind::VlArbTables>(vlarbs_open, vlarb_scope, vlarbs_close);

auto const sl2vl_tables_def = block<BlockKind::Sl2VlTables>(sl2vls_open, sl2vl_scope, sl2vls_close);

auto const qos_setup_def =
    block<BlockKind::QosSetup>(setup_open, vlarb_tables | sl2vl_tables, setup_close);

BOOST_SPIRIT_DEFINE(vlarb_scope, sl2vl_scope, vlarb_tables, sl2vl_tables, qos_setup)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::VlArbScope>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::Sl2VlScope>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::VlArbTables>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::Sl2VlTables>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosSetup>, Iterator, Context)

}  // namespace ibqos::grammar

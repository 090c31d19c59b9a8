// SPDX-License-Identifier: MIT
// Grammar of the qos-setup section (vlarb-tables and sl2vl-tables), with the bandwidth extension.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;

IBQOS_BLOCK_LINES(setup, "qos-setup", "end-qos-setup")
IBQOS_BLOCK_LINES(vlarbs, "vlarb-tables", "end-vlarb-tables")
IBQOS_BLOCK_LINES(vlarb, "vlarb-scope", "end-vlarb-scope")
IBQOS_BLOCK_LINES(sl2vls, "sl2vl-tables", "end-sl2vl-tables")
IBQOS_BLOCK_LINES(sl2vl, "sl2vl-scope", "end-sl2vl-scope")
IBQOS_FIELD_LINE(vlarb)
IBQOS_FIELD_LINE(sl2vl)

auto const vlarb_field_def =
    (field("group", Key::Group, values::text_list) |
     field("across", Key::Across, values::text_list) |
     field("vlarb-high", Key::VlArbHigh, values::pair_list) |
     field("vlarb-low", Key::VlArbLow, values::pair_list) |
     field("vl-high-limit", Key::VlHighLimit, values::number) |
     field("bandwidth", Key::Bandwidth, values::pair_list)) > values::end_line;

auto const sl2vl_field_def =
    (field("group", Key::Group, values::text_list) |
     field("across-to", Key::AcrossTo, values::text_list) |
     field("across-from", Key::AcrossFrom, values::text_list) |
     field("across", Key::Across, values::text_list) | field("from", Key::From, values::port_list) |
     field("to", Key::To, values::port_list) |
     field("sl2vl-table", Key::Sl2VlTable, values::number_list)) > values::end_line;

BOOST_SPIRIT_DEFINE(vlarb_field, sl2vl_field)

const char* const setup_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-setup"};
const char* const vlarbs_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-setup", "end-vlarb-tables",
                                   "vlarb-tables", "sl2vl-tables"};
const char* const vlarb_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-setup", "end-vlarb-tables",
                                  "end-vlarb-scope",      "vlarb-tables",  "sl2vl-tables",
                                  "vlarb-scope"};
const char* const sl2vls_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-setup", "end-sl2vl-tables",
                                   "vlarb-tables", "sl2vl-tables"};
const char* const sl2vl_ends[] = {IBQOS_SECTION_KEYWORDS, "end-qos-setup", "end-sl2vl-tables",
                                  "end-sl2vl-scope",      "vlarb-tables",  "sl2vl-tables",
                                  "sl2vl-scope"};

}  // namespace

auto const vlarb_scope_def =
    block<BlockKind::VlArbScope>(vlarb_open, vlarb_field, vlarb_ends, vlarb_close);

auto const sl2vl_scope_def =
    block<BlockKind::Sl2VlScope>(sl2vl_open, sl2vl_field, sl2vl_ends, sl2vl_close);

auto const vlarb_tables_def =
    block<BlockKind::VlArbTables>(vlarbs_open, vlarb_scope, vlarbs_ends, vlarbs_close);

auto const sl2vl_tables_def =
    block<BlockKind::Sl2VlTables>(sl2vls_open, sl2vl_scope, sl2vls_ends, sl2vls_close);

auto const qos_setup_def =
    block<BlockKind::QosSetup>(setup_open, vlarb_tables | sl2vl_tables, setup_ends, setup_close);

BOOST_SPIRIT_DEFINE(vlarb_scope, sl2vl_scope, vlarb_tables, sl2vl_tables, qos_setup)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::VlArbScope>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::Sl2VlScope>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::VlArbTables>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::Sl2VlTables>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosSetup>, Iterator, Context)

}  // namespace ibqos::grammar

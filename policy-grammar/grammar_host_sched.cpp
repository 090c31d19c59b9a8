// SPDX-License-Identifier: MIT
// Grammar of the host-sched extension section (transmit scheduling on hosts).
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;
using values::fields;

IBQOS_BLOCK_LINES(hosts, BlockKind::HostSched)
IBQOS_BLOCK_LINES(node, BlockKind::SchedNode)
IBQOS_BLOCK_LINES(leaf, BlockKind::SchedLeaf)
IBQOS_BLOCK_LINES(enforcement, BlockKind::SlEnforcement)
IBQOS_FIELD_LINE(node)
IBQOS_FIELD_LINE(leaf)
IBQOS_FIELD_LINE(enforcement)

auto const node_field_def =
    fields(field(Key::Name, values::extension_text), field(Key::Use, values::description),
           field(Key::Parent, values::extension_text), field(Key::BwShare, values::number),
           field(Key::MaxAvgBw, values::number)) > values::end_line;

auto const leaf_field_def =
    fields(field(Key::Name, values::extension_text), field(Key::Use, values::description),
           field(Key::Parent, values::extension_text), field(Key::Sl, values::range_list),
           field(Key::BwShare, values::number), field(Key::MaxAvgBw, values::number),
           field(Key::PccSlot, values::number),
           field(Key::PccAlgorithm, values::extension_text)) > values::end_line;

auto const enforcement_field_def =
    fields(field(Key::Use, values::description), field(Key::Mode, values::extension_text),
           field(Key::Programs, values::extension_text_list),
           field(Key::ExceptPrograms, values::extension_text_list),
           field(Key::ResolveTimeout, values::number)) > values::end_line;

BOOST_SPIRIT_DEFINE(node_field, leaf_field, enforcement_field)

}  // namespace

auto const sched_node_def = block<BlockKind::SchedNode>(node_open, node_field, node_close);

auto const sched_leaf_def = block<BlockKind::SchedLeaf>(leaf_open, leaf_field, leaf_close);

auto const sl_enforcement_def =
    block<BlockKind::SlEnforcement>(enforcement_open, enforcement_field, enforcement_close);

auto const host_sched_def =
    block<BlockKind::HostSched>(hosts_open, sched_node | sched_leaf | sl_enforcement, hosts_close);

BOOST_SPIRIT_DEFINE(sched_node, sched_leaf, sl_enforcement, host_sched)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::SchedNode>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::SchedLeaf>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::SlEnforcement>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::HostSched>, Iterator, Context)

}  // namespace ibqos::grammar

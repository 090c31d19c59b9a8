// SPDX-License-Identifier: MIT
// Grammar of the port-groups section.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;
using values::fields;

IBQOS_BLOCK_LINES(groups, BlockKind::PortGroups)
IBQOS_BLOCK_LINES(group, BlockKind::PortGroup)
IBQOS_FIELD_LINE(group)

auto const group_field_def =
    fields(field(Key::Name, values::text), field(Key::Use, values::description),
           field(Key::PortGuid, values::range_list), field(Key::PortName, values::text_list),
           field(Key::Partition, values::text_list), field(Key::Pkey, values::range_list),
           field(Key::NodeType, values::node_type_list)) > values::end_line;
BOOST_SPIRIT_DEFINE(group_field)

}  // namespace

auto const port_group_def = block<BlockKind::PortGroup>(group_open, group_field, group_close);

auto const port_groups_def = block<BlockKind::PortGroups>(groups_open, port_group, groups_close);

BOOST_SPIRIT_DEFINE(port_group, port_groups)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::PortGroup>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::PortGroups>, Iterator, Context)

}  // namespace ibqos::grammar

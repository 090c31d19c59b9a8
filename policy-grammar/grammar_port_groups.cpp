// SPDX-License-Identifier: MIT
// Grammar of the port-groups section.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;

IBQOS_BLOCK_LINES(groups, "port-groups", "end-port-groups")
IBQOS_BLOCK_LINES(group, "port-group", "end-port-group")
IBQOS_FIELD_LINE(group)

auto const group_field_def =
    (field("name", Key::Name, values::text) | field("use", Key::Use, values::description) |
     field("port-guid", Key::PortGuid, values::range_list) |
     field("port-name", Key::PortName, values::text_list) |
     field("partition", Key::Partition, values::text_list) |
     field("pkey", Key::Pkey, values::range_list) |
     field("node-type", Key::NodeType, values::node_type_list)) > values::end_line;
BOOST_SPIRIT_DEFINE(group_field)

const char* const groups_ends[] = {IBQOS_SECTION_KEYWORDS, "end-port-groups"};
const char* const group_ends[] = {IBQOS_SECTION_KEYWORDS, "end-port-groups", "end-port-group",
                                  "port-group"};

}  // namespace

auto const port_group_def =
    block<BlockKind::PortGroup>(group_open, group_field, group_ends, group_close);

auto const port_groups_def =
    block<BlockKind::PortGroups>(groups_open, port_group, groups_ends, groups_close);

BOOST_SPIRIT_DEFINE(port_group, port_groups)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::PortGroup>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::PortGroups>, Iterator, Context)

}  // namespace ibqos::grammar

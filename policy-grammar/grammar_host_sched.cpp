// SPDX-License-Identifier: MIT
// Grammar of the host-sched extension section (transmit scheduling on hosts).
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;

IBQOS_BLOCK_LINES(hosts, "host-sched", "end-host-sched")
IBQOS_BLOCK_LINES(node, "sched-node", "end-sched-node")
IBQOS_BLOCK_LINES(leaf, "sched-leaf", "end-sched-leaf")
IBQOS_FIELD_LINE(node)
IBQOS_FIELD_LINE(leaf)

auto const node_field_def =
    (field("name", Key::Name, values::text) | field("use", Key::Use, values::description) |
     field("parent", Key::Parent, values::text) | field("bw-share", Key::BwShare, values::number) |
     field("max-avg-bw", Key::MaxAvgBw, values::number)) > values::end_line;

auto const leaf_field_def =
    (field("name", Key::Name, values::text) | field("use", Key::Use, values::description) |
     field("parent", Key::Parent, values::text) | field("sl", Key::Sl, values::range_list) |
     field("bw-share", Key::BwShare, values::number) |
     field("max-avg-bw", Key::MaxAvgBw, values::number) |
     field("pcc-slot", Key::PccSlot, values::number) |
     field("pcc-algorithm", Key::PccAlgorithm, values::text)) > values::end_line;

BOOST_SPIRIT_DEFINE(node_field, leaf_field)

const char* const hosts_ends[] = {IBQOS_SECTION_KEYWORDS, "end-host-sched"};
const char* const element_ends[] = {IBQOS_SECTION_KEYWORDS, "end-host-sched", "end-sched-node",
                                    "end-sched-leaf",       "sched-node",     "sched-leaf"};

}  // namespace

auto const sched_node_def =
    block<BlockKind::SchedNode>(node_open, node_field, element_ends, node_close);

auto const sched_leaf_def =
    block<BlockKind::SchedLeaf>(leaf_open, leaf_field, element_ends, leaf_close);

auto const host_sched_def =
    block<BlockKind::HostSched>(hosts_open, sched_node | sched_leaf, hosts_ends, hosts_close);

BOOST_SPIRIT_DEFINE(sched_node, sched_leaf, host_sched)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::SchedNode>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::SchedLeaf>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::HostSched>, Iterator, Context)

}  // namespace ibqos::grammar

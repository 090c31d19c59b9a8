// SPDX-License-Identifier: MIT
// Grammar of a whole policy file: sections in any order, each any number of times.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

constexpr StrayLine top_stray{LineContext{true, ast::BlockKind::PortGroups}};

auto const section = port_groups | qos_setup | qos_levels | qos_match_rules | qos_ulps | host_sched;

// A block written without its section is reported and then parsed as if the section were
// there, so that one missing line does not turn the whole block into errors.
auto const orphan = OrphanBlock{} >>
                    (port_group | qos_level | qos_match_rule | vlarb_tables | sl2vl_tables |
                     vlarb_scope | sl2vl_scope | sched_node | sched_leaf | sl_enforcement);

}  // namespace

// Nothing ends the top level but the end of the file.
auto const policy_def =
    lines<std::vector<ast::Block>>(section | orphan, x3::eps(false), top_stray) > x3::eoi;

BOOST_SPIRIT_DEFINE(policy)
BOOST_SPIRIT_INSTANTIATE(decltype(policy), Iterator, Context)

}  // namespace ibqos::grammar

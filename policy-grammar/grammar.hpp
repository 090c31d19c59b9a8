// SPDX-License-Identifier: MIT
// The rules that cross grammar translation units: one per section and per block that may
// appear outside its section. Each is defined (and instantiated) in grammar_<section>.cpp.
#pragma once

#include <vector>

#include "policy-grammar/ast.hpp"
#include "policy-grammar/config.hpp"
#include "policy-grammar/error_handler.hpp"

namespace ibqos::grammar {

template <ast::BlockKind Kind>
struct block_class : BlockErrorHandler<Kind> {};

template <ast::BlockKind Kind>
using BlockRule = x3::rule<block_class<Kind>, ast::Block>;

BlockRule<ast::BlockKind::PortGroups> const port_groups = "port-groups";
BlockRule<ast::BlockKind::PortGroup> const port_group = "port-group";
BlockRule<ast::BlockKind::QosSetup> const qos_setup = "qos-setup";
BlockRule<ast::BlockKind::VlArbTables> const vlarb_tables = "vlarb-tables";
BlockRule<ast::BlockKind::VlArbScope> const vlarb_scope = "vlarb-scope";
BlockRule<ast::BlockKind::Sl2VlTables> const sl2vl_tables = "sl2vl-tables";
BlockRule<ast::BlockKind::Sl2VlScope> const sl2vl_scope = "sl2vl-scope";
BlockRule<ast::BlockKind::QosLevels> const qos_levels = "qos-levels";
BlockRule<ast::BlockKind::QosLevel> const qos_level = "qos-level";
BlockRule<ast::BlockKind::QosMatchRules> const qos_match_rules = "qos-match-rules";
BlockRule<ast::BlockKind::QosMatchRule> const qos_match_rule = "qos-match-rule";
BlockRule<ast::BlockKind::QosUlps> const qos_ulps = "qos-ulps";
BlockRule<ast::BlockKind::HostSched> const host_sched = "host-sched";
BlockRule<ast::BlockKind::SchedNode> const sched_node = "sched-node";
BlockRule<ast::BlockKind::SchedLeaf> const sched_leaf = "sched-leaf";

struct policy_class;
x3::rule<policy_class, std::vector<ast::Block>> const policy = "a policy";

BOOST_SPIRIT_DECLARE(BlockRule<ast::BlockKind::PortGroups>, BlockRule<ast::BlockKind::PortGroup>,
                     BlockRule<ast::BlockKind::QosSetup>, BlockRule<ast::BlockKind::VlArbTables>,
                     BlockRule<ast::BlockKind::VlArbScope>, BlockRule<ast::BlockKind::Sl2VlTables>,
                     BlockRule<ast::BlockKind::Sl2VlScope>, BlockRule<ast::BlockKind::QosLevels>,
                     BlockRule<ast::BlockKind::QosLevel>, BlockRule<ast::BlockKind::QosMatchRules>,
                     BlockRule<ast::BlockKind::QosMatchRule>, BlockRule<ast::BlockKind::QosUlps>,
                     BlockRule<ast::BlockKind::HostSched>, BlockRule<ast::BlockKind::SchedNode>,
                     BlockRule<ast::BlockKind::SchedLeaf>, decltype(policy))

}  // namespace ibqos::grammar

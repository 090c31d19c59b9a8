// SPDX-License-Identifier: MIT
// The rules that cross grammar translation units: one per section and per block that may
// appear outside its section. Each is defined (and instantiated) in grammar_<section>.cpp.
#pragma once

#include <vector>

#include "policy-grammar/ast.hpp"
#include "policy-grammar/config.hpp"
#include "policy-grammar/error_handler.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::grammar {

template <ast::BlockKind Kind>
struct block_class : BlockErrorHandler<Kind> {};

template <ast::BlockKind Kind>
using BlockRule = x3::rule<block_class<Kind>, ast::Block>;

// Each block's rule is named by its opening keyword, the name syntax errors show.
using Kind = ast::BlockKind;

BlockRule<Kind::PortGroups> const port_groups = ast::openKeyword(Kind::PortGroups);
BlockRule<Kind::PortGroup> const port_group = ast::openKeyword(Kind::PortGroup);
BlockRule<Kind::QosSetup> const qos_setup = ast::openKeyword(Kind::QosSetup);
BlockRule<Kind::VlArbTables> const vlarb_tables = ast::openKeyword(Kind::VlArbTables);
BlockRule<Kind::VlArbScope> const vlarb_scope = ast::openKeyword(Kind::VlArbScope);
BlockRule<Kind::Sl2VlTables> const sl2vl_tables = ast::openKeyword(Kind::Sl2VlTables);
BlockRule<Kind::Sl2VlScope> const sl2vl_scope = ast::openKeyword(Kind::Sl2VlScope);
BlockRule<Kind::QosLevels> const qos_levels = ast::openKeyword(Kind::QosLevels);
BlockRule<Kind::QosLevel> const qos_level = ast::openKeyword(Kind::QosLevel);
BlockRule<Kind::QosMatchRules> const qos_match_rules = ast::openKeyword(Kind::QosMatchRules);
BlockRule<Kind::QosMatchRule> const qos_match_rule = ast::openKeyword(Kind::QosMatchRule);
BlockRule<Kind::QosUlps> const qos_ulps = ast::openKeyword(Kind::QosUlps);
BlockRule<Kind::HostSched> const host_sched = ast::openKeyword(Kind::HostSched);
BlockRule<Kind::SchedNode> const sched_node = ast::openKeyword(Kind::SchedNode);
BlockRule<Kind::SchedLeaf> const sched_leaf = ast::openKeyword(Kind::SchedLeaf);
BlockRule<Kind::SlEnforcement> const sl_enforcement = ast::openKeyword(Kind::SlEnforcement);

struct policy_class;
x3::rule<policy_class, std::vector<ast::Block>> const policy = "a policy";

BOOST_SPIRIT_DECLARE(BlockRule<Kind::PortGroups>, BlockRule<Kind::PortGroup>,
                     BlockRule<Kind::QosSetup>, BlockRule<Kind::VlArbTables>,
                     BlockRule<Kind::VlArbScope>, BlockRule<Kind::Sl2VlTables>,
                     BlockRule<Kind::Sl2VlScope>, BlockRule<Kind::QosLevels>,
                     BlockRule<Kind::QosLevel>, BlockRule<Kind::QosMatchRules>,
                     BlockRule<Kind::QosMatchRule>, BlockRule<Kind::QosUlps>,
                     BlockRule<Kind::HostSched>, BlockRule<Kind::SchedNode>,
                     BlockRule<Kind::SchedLeaf>, BlockRule<Kind::SlEnforcement>, decltype(policy))

}  // namespace ibqos::grammar

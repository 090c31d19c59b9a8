// SPDX-License-Identifier: MIT
// Grammar of the qos-match-rules and qos-ulps sections.
#include "policy-grammar/blocks_def.hpp"

namespace ibqos::grammar {

namespace {

using ast::BlockKind;
using ast::Key;
using values::field;
using values::fields;
using x3::lit;

IBQOS_BLOCK_LINES(rules, BlockKind::QosMatchRules)
IBQOS_BLOCK_LINES(rule, BlockKind::QosMatchRule)
IBQOS_BLOCK_LINES(ulps, BlockKind::QosUlps)
IBQOS_FIELD_LINE(rule)

auto const rule_field_def =
    fields(field(Key::Use, values::description), field(Key::QosClass, values::range_list),
           field(Key::Source, values::text_list), field(Key::Destination, values::text_list),
           field(Key::ServiceId, values::range_list), field(Key::Pkey, values::range_list),
           field(Key::QosLevelName, values::text)) > values::end_line;
BOOST_SPIRIT_DEFINE(rule_field)

struct ulp_qualifier_class : Annotate {};
struct ulp_condition_class : Annotate {};
struct ulp_line_class : LineErrorHandler {};
x3::rule<ulp_qualifier_class, ast::UlpQualifierWord> const ulp_qualifier = "a qualifier";
x3::rule<ulp_condition_class, ast::UlpCondition> const ulp_condition = "a qualifier";
x3::rule<ulp_line_class, ast::UlpLine> const ulp_line = "a ULP line";

auto const ulp_qualifier_def = UlpQualifierToken{};
auto const ulp_condition_def = ulp_qualifier > values::range_list;
auto const ulp_line_def = UlpToken{} > -(lit(',') > ulp_condition) > lit(':') > values::number
                          > values::end_line;
BOOST_SPIRIT_DEFINE(ulp_qualifier, ulp_condition, ulp_line)

}  // namespace

auto const qos_match_rule_def = block<BlockKind::QosMatchRule>(rule_open, rule_field, rule_close);

auto const qos_match_rules_def =
    block<BlockKind::QosMatchRules>(rules_open, qos_match_rule, rules_close);

auto const qos_ulps_def = block<BlockKind::QosUlps>(ulps_open, ulp_line, ulps_close);

BOOST_SPIRIT_DEFINE(qos_match_rule, qos_match_rules, qos_ulps)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosMatchRule>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosMatchRules>, Iterator, Context)
BOOST_SPIRIT_INSTANTIATE(BlockRule<BlockKind::QosUlps>, Iterator, Context)

}  // namespace ibqos::grammar

// SPDX-License-Identifier: MIT
// Boost.Fusion views of the AST nodes that X3 fills member by member.
#pragma once

#include <boost/fusion/include/adapt_struct.hpp>

#include "policy-grammar/ast.hpp"

BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::Range, lo, hi)
BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::Pair, key, value, percent)
BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::Field, key, value)
BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::UlpCondition, qualifier, ranges)
BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::UlpLine, ulp, condition, sl)
BOOST_FUSION_ADAPT_STRUCT(ibqos::ast::Block, open, kind, items, close)

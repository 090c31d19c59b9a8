// SPDX-License-Identifier: MIT
// Value rules shared by the section grammars (numbers, ranges, names, pairs) and the pieces
// every block is made of. Included by each grammar translation unit; the rules are const
// objects, so each unit has its own copy and no rule crosses a unit boundary here.
#pragma once

#include "policy-grammar/ast_adapted.hpp"
#include "policy-grammar/error_handler.hpp"
#include "policy-grammar/keywords.hpp"
#include "policy-grammar/tokens.hpp"

namespace ibqos::grammar::values {

using x3::attr;
using x3::lit;
using x3::matches;

inline constexpr EndOfLine end_of_line_token{};
inline constexpr EndOfLine blank_line{false};
inline constexpr ListComma comma{ListGoesOn::Names};
inline constexpr ListComma number_comma{ListGoesOn::Numbers};
inline constexpr ListComma node_type_comma{ListGoesOn::Never};

// Names are what error messages print: "expected a number after 'sl:', found 'x'".
struct number_class;
struct range_class;
struct text_class : Annotate {};
struct extension_text_class : Annotate {};
struct description_class : Annotate {};
struct pair_class : Annotate {};
struct node_type_class : Annotate {};
struct star_class : Annotate {};
struct end_line_class;
struct range_list_class;
struct text_list_class;
struct extension_text_list_class;
struct number_list_class;
struct pair_list_class;
struct node_type_list_class;
struct port_list_class;

x3::rule<number_class, ast::Number> const number = "a number";
x3::rule<range_class, ast::Range> const range = "a number or range";
x3::rule<text_class, ast::Text> const text = "a name";
// A name in an extension OpenSM never reads: its keywords are text there.
x3::rule<extension_text_class, ast::Text> const extension_text = "a name";
x3::rule<description_class, ast::Text> const description = "a description";
x3::rule<pair_class, ast::Pair> const pair = "a pair such as 1:64";
x3::rule<node_type_class, ast::NodeType> const node_type = "CA, SWITCH, ROUTER, ALL or SELF";
x3::rule<star_class, ast::Star> const star = "'*'";
x3::rule<end_line_class> const end_line = "end of line";
x3::rule<range_list_class, ast::RangeList> const range_list = "a number or range";
x3::rule<text_list_class, ast::TextList> const text_list = "a name";
x3::rule<extension_text_list_class, ast::TextList> const extension_text_list = "a name";
x3::rule<number_list_class, ast::NumberList> const number_list = "a number";
x3::rule<pair_list_class, ast::PairList> const pair_list = "a pair such as 1:64";
x3::rule<node_type_list_class, ast::NodeTypeList> const node_type_list =
    "CA, SWITCH, ROUTER, ALL or SELF";
x3::rule<port_list_class, ast::Value> const port_list = "'*' or a list of port numbers";

auto const number_def = NumberToken{};
auto const range_def = number >> -(lit('-') > number);
auto const text_def = TextToken{TextMode::Item};
auto const extension_text_def = TextToken{TextMode::Item, false};
auto const description_def = TextToken{TextMode::Remainder};
auto const pair_def = number > lit(':') > number > matches[lit('%')];
auto const node_type_def = NodeTypeToken{};
auto const star_def = x3::omit[lit('*')];
auto const end_line_def = end_of_line_token;
auto const range_list_def = range > *(number_comma > range);
auto const text_list_def = text > *(comma > text);
auto const extension_text_list_def = extension_text > *(comma > extension_text);
auto const number_list_def = number > *(number_comma > number);
auto const pair_list_def = pair > *(number_comma > pair);
auto const node_type_list_def = node_type > *(node_type_comma > node_type);
auto const port_list_def = star | range_list;

BOOST_SPIRIT_DEFINE(number, range, text, extension_text, description, pair, node_type, star,
                    end_line, range_list, text_list, extension_text_list, number_list, pair_list,
                    node_type_list, port_list)

// "keyword: value" as a field of the given key (its keyword from the table in keywords.hpp).
template <typename Value>
auto field(ast::Key key, Value const& value) {
    return FieldKeyword{ast::keyName(key)} >> attr(key) > value;
}

}  // namespace ibqos::grammar::values

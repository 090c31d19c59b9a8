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

// "keyword: value" as a field of the given key (its keyword from the table in keywords.hpp),
// one of a block's fields(...).
template <typename Value>
struct FieldEntry {
    ast::Key key;
    Value value;
};
template <typename Value>
constexpr FieldEntry<Value> field(ast::Key key, Value const& value) {
    return {key, value};
}

// One field line of a block: the keyword (with its colon) of one of the entries, then that
// entry's value, which must follow (as `keyword > value`: its absence is an expectation
// failure naming the value). The same as an alternative of the entries, without X3 building
// and discarding a field attribute for every keyword a line does not start with.
template <typename... Values>
struct FieldChoice : x3::parser<FieldChoice<Values...>> {
    using attribute_type = ast::Field;
    constexpr explicit FieldChoice(FieldEntry<Values>... entries) : entries(entries...) {}
    std::tuple<FieldEntry<Values>...> entries;

    template <typename It, typename Ctx, typename RCtx>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx& rctx, ast::Field& attr) const {
        return parseFrom<0>(first, last, ctx, rctx, attr);
    }

  private:
    template <size_t I, typename It, typename Ctx, typename RCtx>
    bool parseFrom(It& first, It const& last, Ctx const& ctx, RCtx& rctx, ast::Field& attr) const {
        if constexpr (I == sizeof...(Values)) {
            return false;
        } else {
            const auto& entry = std::get<I>(entries);
            if (!FieldKeyword{ast::keyName(entry.key)}.parse(first, last, ctx, rctx, x3::unused))
                return parseFrom<I + 1>(first, last, ctx, rctx, attr);
            attr.key = entry.key;
            if (!entry.value.parse(first, last, ctx, rctx, attr.value))
                boost::throw_exception(x3::expectation_failure<It>(first, x3::what(entry.value)));
            return true;
        }
    }
};

template <typename... Values>
constexpr FieldChoice<Values...> fields(FieldEntry<Values>... entries) {
    return FieldChoice<Values...>(entries...);
}

}  // namespace ibqos::grammar::values

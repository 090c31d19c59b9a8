// SPDX-License-Identifier: MIT
// How every block is built: an opening line, a body of fields (or nested blocks), a closing
// line, with the catch-all that reports a misplaced line and resynchronises at the next one.
#pragma once

#include "grammar.hpp"
#include "values_def.hpp"

// Declares and defines <name>_open and <name>_close, the opening and closing lines of a block.
#define IBQOS_BLOCK_LINES(name, openWord, closeWord)                                            \
    struct name##_open_class : ::ibqos::grammar::LineErrorHandler {};                           \
    struct name##_close_class : ::ibqos::grammar::LineErrorHandler {};                          \
    x3::rule<name##_open_class, ::ibqos::ast::Opening> const name##_open = openWord;            \
    x3::rule<name##_close_class, ::ibqos::ast::Closing> const name##_close = closeWord;         \
    auto const name##_open_def = ::ibqos::grammar::OpenKeyword{openWord} > values::end_line;    \
    auto const name##_close_def = ::ibqos::grammar::CloseKeyword{closeWord} > values::end_line; \
    BOOST_SPIRIT_DEFINE(name##_open, name##_close)

// Declares <name>_field, one line of a block body; its definition <name>_field_def is an
// alternative of values::field(...) followed by the end of the line.
#define IBQOS_FIELD_LINE(name)                                         \
    struct name##_field_class : ::ibqos::grammar::LineErrorHandler {}; \
    x3::rule<name##_field_class, ::ibqos::ast::Field> const name##_field = "a field";

namespace ibqos::grammar {

// The keywords that open a section: any of them ends whatever body is open.
#define IBQOS_SECTION_KEYWORDS \
    "port-groups", "qos-setup", "qos-levels", "qos-match-rules", "qos-ulps", "host-sched"

// A line that belongs nowhere in the body of a block of this kind.
template <ast::BlockKind Kind>
constexpr StrayLine stray{LineContext{false, Kind}};

// A block of kind Kind: its opening line, body lines (blank, one of `body`, or a line that
// belongs nowhere, reported and skipped, unless one of `ends` starts it: that ends the body),
// and its closing line.
template <ast::BlockKind Kind, typename Open, typename Body, typename Close, size_t N>
auto block(Open const& open, Body const& body, const char* const (&ends)[N], Close const& close) {
    return open >> x3::attr(Kind) >>
           *(values::blank_line | body | (!values::terminators(ends) >> stray<Kind>)) > close;
}

}  // namespace ibqos::grammar

// SPDX-License-Identifier: MIT
// How every block is built: an opening line, a body of fields (or nested blocks), a closing
// line, with the catch-all that reports a misplaced line and resynchronises at the next one.
#pragma once

#include <boost/container/small_vector.hpp>

#include "policy-grammar/grammar.hpp"
#include "policy-grammar/values_def.hpp"

// Declares and defines <name>_open and <name>_close, the opening and closing lines of a block
// of kind `kind` (a BlockKind), with the keywords of the table in keywords.hpp.
#define IBQOS_BLOCK_LINES(name, kind)                                                        \
    struct name##_open_class : ::ibqos::grammar::LineErrorHandler {};                        \
    struct name##_close_class : ::ibqos::grammar::LineErrorHandler {};                       \
    x3::rule<name##_open_class, ::ibqos::ast::Opening> const name##_open =                   \
        ::ibqos::ast::openKeyword(kind);                                                     \
    x3::rule<name##_close_class, ::ibqos::ast::Closing> const name##_close =                 \
        ::ibqos::ast::closeKeyword(kind);                                                    \
    auto const name##_open_def =                                                             \
        ::ibqos::grammar::OpenKeyword{::ibqos::ast::openKeyword(kind)} > values::end_line;   \
    auto const name##_close_def =                                                            \
        ::ibqos::grammar::CloseKeyword{::ibqos::ast::closeKeyword(kind)} > values::end_line; \
    BOOST_SPIRIT_DEFINE(name##_open, name##_close)

// Declares <name>_field, one line of a block body; its definition <name>_field_def is an
// alternative of values::field(...) followed by the end of the line.
#define IBQOS_FIELD_LINE(name)                                         \
    struct name##_field_class : ::ibqos::grammar::LineErrorHandler {}; \
    x3::rule<name##_field_class, ::ibqos::ast::Field> const name##_field = "a field";

namespace ibqos::grammar {

// A line that belongs nowhere in the body of a block of this kind.
template <ast::BlockKind Kind>
constexpr StrayLine stray{LineContext{false, Kind}};

// The lines of a body, read into a container: blank lines and whole-line comments are skipped,
// a line `element` reads adds one item, a line that `end` recognises ends the body, and any other
// line is reported by `stray` and skipped. A parser of its own rather than a Kleene star over
// alternatives: X3 would push a default-constructed item for every line an attribute-less
// alternative (a blank line, a stray line) consumes.
template <typename Container, typename Element, typename End, typename Stray>
struct Lines : x3::parser<Lines<Container, Element, End, Stray>> {
    using attribute_type = Container;
    using Item = typename Container::value_type;
    constexpr Lines(Element element, End end, Stray stray)
        : element(element), end(end), stray(stray) {}
    Element element;
    End end;
    Stray stray;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx& rctx, Attr& attr) const {
        // The items are gathered first (a block's few on the stack) and stored at their exact
        // number: the container never grows, moving its items, while the body is read. A body
        // of fields (most lines of a policy) is read straight into its slot, moved once.
        using Parsed = typename x3::traits::attribute_of<Element, Ctx>::type;
        using Slot = std::conditional_t<std::is_same_v<Parsed, ast::Field>, ast::Field, Item>;
        boost::container::small_vector<Slot, 8> items;
        auto store = [&] {
            attr.reserve(attr.size() + items.size());
            for (Slot& item : items) attr.emplace_back(std::move(item));
        };
        bool reading = false;  // the last slot is the line being read
        try {
            for (;;) {
                if (values::blank_line.parse(first, last, ctx, rctx, x3::unused)) continue;
                It start = first;
                reading = true;
                const bool read = element.parse(first, last, ctx, rctx, items.emplace_back());
                reading = false;
                if (read) continue;
                items.pop_back();
                first = start;
                if (end.parse(first, last, ctx, rctx, x3::unused) ||
                    !stray.parse(first, last, ctx, rctx, x3::unused)) {
                    store();
                    return true;
                }
            }
        } catch (...) {
            // What was read stays in the tree, as the caller's recovery expects; the line that
            // failed is not kept.
            if (reading) items.pop_back();
            store();
            throw;
        }
    }
};

template <typename Container, typename Element, typename End, typename Stray>
constexpr auto lines(Element const& element, End const& end, Stray const& stray) {
    return Lines<Container, typename x3::extension::as_parser<Element>::value_type,
                 typename x3::extension::as_parser<End>::value_type, Stray>(
        x3::as_parser(element), x3::as_parser(end), stray);
}

// The terminators of a block kind's body (ast::terminatorsOf), kept for the parser to point at.
template <ast::BlockKind Kind>
inline constexpr ast::Terminators terminators = ast::terminatorsOf(Kind);

// A block of kind Kind: its opening line, body lines (blank, one of `body`, or a line that
// belongs nowhere, reported and skipped, unless one of its terminators starts it: that ends the
// body), and its closing line.
template <ast::BlockKind Kind, typename Open, typename Body, typename Close>
auto block(Open const& open, Body const& body, Close const& close) {
    constexpr AnyKeyword ends{terminators<Kind>.words.data(), terminators<Kind>.count};
    return open >> x3::attr(Kind) >> lines<std::vector<ast::Item>>(body, ends, stray<Kind>) > close;
}

}  // namespace ibqos::grammar

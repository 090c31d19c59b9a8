// SPDX-License-Identifier: MIT
// The parser's iterator and context types, shared by every grammar translation unit.
#pragma once

#include <boost/spirit/home/x3.hpp>

#include "common/diagnostics.hpp"
#include "common/source.hpp"

namespace ibqos::grammar {

namespace x3 = boost::spirit::x3;

using Iterator = const char*;

// What every rule can reach through the context: the source (for positions) and the sink.
struct ParseState {
    const SourceFile& source;
    Diagnostics& diagnostics;
    // Whether a value held OpenSM's "use:" keyword (set when read, on a path the grammar may
    // still leave): without one, parsePolicy need not look for them.
    bool embeddedUse = false;

    uint32_t offset(Iterator p) const { return static_cast<uint32_t>(p - source.begin()); }
    SourceLocation locate(Iterator p) const { return source.locate(p); }
};
struct ParseStateTag;

// Skips blanks and '#' comments, never a line end: lines are significant in the language.
struct Skipper : x3::parser<Skipper> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const&, RCtx&, Attr&) const {
        // (On a copy: the loop keeps it in a register, not stored back at every character.)
        It p = first;
        while (p != last) {
            const char c = *p;
            if (c == ' ' || c == '\t') {
                ++p;
            } else if (c == '#') {
                while (p != last && *p != '\n') ++p;
            } else {
                break;
            }
        }
        const bool skipped = p != first;
        first = p;
        return skipped;
    }
};

using SkipperContext = x3::context<x3::skipper_tag, Skipper const, x3::unused_type>;
using Context = x3::context<ParseStateTag, ParseState, SkipperContext>;

}  // namespace ibqos::grammar

// SPDX-License-Identifier: MIT
// Rule ID bases: source positions on success, reporting and resynchronisation on failure.
#pragma once

#include <string>
#include <type_traits>

#include "policy-grammar/ast.hpp"
#include "policy-grammar/config.hpp"
#include "policy-grammar/keywords.hpp"
#include "policy-grammar/tokens.hpp"

namespace ibqos::grammar {

// Records where a node starts and ends (byte offsets) once its rule has matched.
struct Annotate {
    template <typename It, typename Attr, typename Ctx>
    void on_success(It const& first, It const& last, Attr& attr, Ctx const& ctx) const {
        if constexpr (std::is_base_of_v<x3::position_tagged, Attr>) {
            ParseState& state = x3::get<ParseStateTag>(ctx);
            attr.id_first = static_cast<int>(state.offset(first));
            attr.id_last = static_cast<int>(state.offset(last));
        }
    }
};

// "'abc'", "end of line" or "end of file": what stands at a position, for messages.
std::string describeFound(const char* where, const char* last);
// The message for a carriage return where OpenSM rejects one (after the given keyword, if any).
std::string carriageReturnMessage(std::string_view after);
// The keyword a failed line starts with ("sl:", "qos-level"), for messages.
std::string leadingWord(const char* first, const char* last);

// For one line (a field, a qos-ulps line, an opening or closing keyword): a failure after the
// line was recognised is reported at the exact column, the rest of the line is skipped, and
// parsing goes on with the next line. The node keeps no position, which marks its value as lost.
struct LineErrorHandler : Annotate {
    template <typename It, typename Exception, typename Ctx>
    x3::error_handler_result on_error(It& first, It const& last, Exception const& x,
                                      Ctx const& ctx) const {
        ParseState& state = x3::get<ParseStateTag>(ctx);
        It where = x.where();
        x3::skip_over(where, last, ctx);
        std::string message;
        if (!x.which().empty() && x.which()[0] == '!') {
            message = x.which().substr(1);  // a token's own complete message
        } else if (where != last && *where == '\r') {
            message = carriageReturnMessage(leadingWord(first, last));
        } else if (x.which() == "end of line") {
            message =
                "unexpected " + describeFound(where, last) + " after " + leadingWord(first, last);
        } else {
            message = "expected " + x.which() + " after " + leadingWord(first, last) + ", found " +
                      describeFound(where, last);
        }
        state.diagnostics.syntaxError("syntax", state.source.name(), state.locate(where), message);
        first = skipLine(where, last);
        return x3::error_handler_result::accept;
    }
};

// For a block: its closing keyword is missing. The block ends where the failure was found, and
// that line is parsed again by the enclosing body (it usually opens the next block).
template <ast::BlockKind Kind>
struct BlockErrorHandler {
    template <typename It, typename Exception, typename Ctx>
    x3::error_handler_result on_error(It& first, It const& last, Exception const& x,
                                      Ctx const& ctx) const {
        ParseState& state = x3::get<ParseStateTag>(ctx);
        It open = first;
        x3::skip_over(open, last, ctx);
        It where = x.where();
        x3::skip_over(where, last, ctx);
        std::string opened = std::string("'") + ast::openKeyword(Kind) + "' at line " +
                             std::to_string(state.locate(open).line);
        std::string close = std::string("'") + ast::closeKeyword(Kind) + "'";
        if (where == last) {
            state.diagnostics.syntaxError("unclosed-block", state.source.name(), state.locate(open),
                                          std::string("'") + ast::openKeyword(Kind) +
                                              "' is never closed: expected " + close +
                                              " before the end of the file");
        } else {
            state.diagnostics.syntaxError("unclosed-block", state.source.name(),
                                          state.locate(where),
                                          "expected " + close + " to close " + opened + " before " +
                                              describeFound(where, last));
        }
        first = x.where();
        return x3::error_handler_result::accept;
    }
};

}  // namespace ibqos::grammar

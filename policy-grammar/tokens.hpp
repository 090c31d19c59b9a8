// SPDX-License-Identifier: MIT
// The lexical level of the grammar: keywords, numbers, text, line ends, written as X3 primitive
// parsers so that they are fast and report exactly where a token goes wrong.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "policy-grammar/ast.hpp"
#include "policy-grammar/config.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::grammar {

inline bool isWordChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}
// Only '\n' ends a line, as in OpenSM's lexer: a carriage return before it (a Windows line end)
// is a character of the line, which OpenSM ignores in a comment and at the end of a name and
// rejects anywhere else.
inline bool isLineEnd(char c) { return c == '\n'; }
// What OpenSM trims from both ends of a name (isspace()).
inline bool isTrimmedBlank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// True when [first, last) starts with word (ASCII case folded when noCase) followed by a
// character that cannot continue a keyword.
template <typename It>
bool startsWithWord(It first, It const& last, std::string_view word, bool noCase = false) {
    if (static_cast<size_t>(last - first) < word.size()) return false;
    if (noCase) {
        for (char w : word) {
            if (lower(*first++) != w) return false;
        }
    } else {
        if (*first != word[0] || std::memcmp(&*first, word.data(), word.size()) != 0) return false;
        first += word.size();
    }
    return first == last || !isWordChar(*first);
}

// Advances past the end of the current line (its terminator included).
template <typename It>
It skipLine(It p, It const& last) {
    while (p != last && !isLineEnd(*p)) ++p;
    if (p != last) ++p;
    return p;
}

// A block keyword such as "qos-level" or "end-qos-level". The opening keyword of a block
// yields an ast::Opening, so that the block is located even if it is never closed.
template <typename Attribute = x3::unused_type>
struct BasicKeyword : x3::parser<BasicKeyword<Attribute>> {
    using attribute_type = Attribute;
    static bool const has_attribute = !std::is_same_v<Attribute, x3::unused_type>;
    explicit constexpr BasicKeyword(const char* w) : word(w) {}
    std::string_view word;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        if (!startsWithWord(first, last, word)) return false;
        It start = first;
        first += word.size();
        if constexpr (has_attribute) {
            // Located here, not on the rule's success: a line that fails after its keyword (a
            // carriage return after "qos-setup") still opens or closes its block at this place.
            Attribute node;
            const ParseState& state = x3::get<ParseStateTag>(ctx);
            node.id_first = static_cast<int>(state.offset(start));
            node.id_last = static_cast<int>(state.offset(first));
            x3::traits::move_to(std::move(node), attr);
        }
        return true;
    }
};
using Keyword = BasicKeyword<>;
using OpenKeyword = BasicKeyword<ast::Opening>;
using CloseKeyword = BasicKeyword<ast::Closing>;

// A field keyword with its colon: "name:", "port-guid :".
struct FieldKeyword : x3::parser<FieldKeyword> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    explicit constexpr FieldKeyword(const char* w) : word(w) {}
    std::string_view word;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        const size_t n = word.size();
        // The first letter alone tells most keywords apart: memcmp only when it matches.
        if (static_cast<size_t>(last - first) < n + 1 || *first != word[0] ||
            std::memcmp(first, word.data(), n) != 0)
            return false;
        It p = first + n;
        while (p != last && (*p == ' ' || *p == '\t')) ++p;
        if (p == last || *p != ':') return false;
        first = p + 1;
        return true;
    }
};

// Any of several block keywords, looked at without being consumed (a body's terminators).
struct AnyKeyword : x3::parser<AnyKeyword> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    constexpr AnyKeyword(const std::string_view* words, size_t count)
        : words(words), count(count) {}
    const std::string_view* words;
    size_t count;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        It p = first;
        x3::skip_over(p, last, ctx);
        for (size_t i = 0; i < count; ++i) {
            if (startsWithWord(p, last, words[i])) return true;
        }
        return false;
    }
};

// A line end, or the end of the input (a last line need not end with a newline).
struct EndOfLine : x3::parser<EndOfLine> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    explicit constexpr EndOfLine(bool allowEnd = true) : allowEnd(allowEnd) {}
    bool allowEnd;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        if (first == last) return allowEnd;
        if (!isLineEnd(*first)) return false;
        ++first;
        return true;
    }
};

// Whether a line goes on with a list of names cut after a comma, as OpenSM reads it: its lexer
// forgets at a line end that names are expected, so the next line must read as plain text: no
// digit, '-', ':' or '*' outside quotes (every keyword holds a '-' or a ':').
inline bool continuesNameList(std::string_view line) {
    bool quoted = false;
    for (char c : line) {
        if (c == '"') quoted = !quoted;
        if (quoted) continue;
        if (c == '#') break;
        if ((c >= '0' && c <= '9') || c == '-' || c == ':' || c == '*') return false;
    }
    return true;
}

// What a list may go on with on the next line after a comma, as OpenSM's lexer allows.
enum class ListGoesOn : uint8_t {
    Numbers,  // a number (numbers, ranges and pairs read the same in every lexer mode)
    Names,    // names, when the line reads as plain text
    Never,    // node types are only read as such on the line of their keyword
};

// The comma between list elements; after it the list may go on on a following line.
struct ListComma : x3::parser<ListComma> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    explicit constexpr ListComma(ListGoesOn next) : next(next) {}
    ListGoesOn next;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        if (first == last || *first != ',') return false;
        ++first;
        It p = first;
        x3::skip_over(p, last, ctx);
        if (p == last || !isLineEnd(*p)) return true;
        for (;;) {
            x3::skip_over(p, last, ctx);
            if (p == last || !isLineEnd(*p)) break;
            p = skipLine(p, last);
        }
        if (p == last || next == ListGoesOn::Never) return true;
        It end = p;
        while (end != last && !isLineEnd(*end)) ++end;
        bool goesOn = next == ListGoesOn::Numbers ? *p >= '0' && *p <= '9'
                                                  : continuesNameList(std::string_view(p, end - p));
        if (goesOn) first = p;
        return true;
    }
};

// A number as OpenSM's strtoull(s, NULL, 0) reads it, with how it was written.
struct NumberToken : x3::parser<NumberToken> {
    using attribute_type = ast::Number;

    static int digitValue(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return 99;
    }

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        It p = first;
        if (p == last || *p < '0' || *p > '9') return false;
        ast::Number n;
        n.offset = x3::get<ParseStateTag>(ctx).offset(first);
        unsigned base = 10;
        if (*p == '0' && last - p > 2 && (p[1] == 'x' || p[1] == 'X') && digitValue(p[2]) < 16) {
            base = 16;
            n.form = ast::NumberForm::Hex;
            p += 2;
        } else if (*p == '0' && last - p > 1 && p[1] >= '0' && p[1] <= '9') {
            base = 8;
            n.form = ast::NumberForm::Octal;
        }
        uint64_t value = 0;
        bool overflow = false, prefixEnded = false;
        for (; p != last && digitValue(*p) < static_cast<int>(base == 8 ? 10 : base); ++p) {
            unsigned d = static_cast<unsigned>(digitValue(*p));
            if (base == 8 && d >= 8) {
                // strtoull stops at the first 8 or 9: OpenSM keeps the value read so far.
                n.form = ast::NumberForm::BadOctal;
                prefixEnded = true;
            }
            if (prefixEnded || overflow) continue;
            overflow = __builtin_mul_overflow(value, base, &value) ||
                       __builtin_add_overflow(value, d, &value);
        }
        if (overflow) {
            n.form = ast::NumberForm::Overflow;
            value = UINT64_MAX;
        }
        n.value = value;
        first = p;
        x3::traits::move_to(n, attr);
        return true;
    }
};

// How a text token ends.
enum class TextMode : uint8_t {
    Item,       // one name in a comma-separated list: stops at ',', '#' and the line end
    Remainder,  // a description ("use:"): the rest of the line, commas included
};

// Without the blanks at both ends, as OpenSM's __parser_strip_white() drops them.
inline std::string_view trimmed(std::string_view s) {
    size_t from = 0, to = s.size();
    while (from < to && isTrimmedBlank(s[from])) ++from;
    while (to > from && isTrimmedBlank(s[to - 1])) --to;
    return s.substr(from, to - from);
}
inline void trimBlanks(std::string& s) {
    const std::string_view t = trimmed(s);
    const auto from = static_cast<size_t>(t.data() - s.data());
    s.erase(from + t.size());
    s.erase(0, from);
}

// A string: quoted parts ("...", no line break inside; commas and '#' are text there) and
// unquoted parts, glued together as OpenSM's lexer glues its text tokens. Inner blanks are kept
// (OpenSM drops unquoted ones: a documented deviation, and the node keeps OpenSM's reading
// too); blanks at both ends are trimmed, quoted or not, as OpenSM's __parser_strip_white() does.
//
// In a value OpenSM reads (openSmReads), its lexer finds its keywords inside unquoted text too:
// a block keyword or a field keyword with its colon is a syntax error, for which OpenSM drops
// the file; "use:" ends the value, and the rest of the line is the block's description.
struct TextToken : x3::parser<TextToken> {
    using attribute_type = ast::Text;
    explicit constexpr TextToken(TextMode mode, bool openSmReads = true)
        : mode(mode), openSmReads(openSmReads) {}
    TextMode mode;
    bool openSmReads;

    // One scan of the value's characters that keeps both readings, and where an embedded "use:"
    // starts, as it goes: kept whole (91 lines) because its pieces share that state and the
    // scan is the parser's busiest loop.
    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        auto ends = [&](It p) {
            return p == last || isLineEnd(*p) || *p == '#' || (mode == TextMode::Item && *p == ',');
        };
        if (ends(first)) return false;
        ast::Text text;
        if (mode == TextMode::Item) {
            // Most names are one unquoted word: both readings are that word, trimmed, and no
            // keyword can hide in it (every keyword holds a ':' or a '-').
            It word = first;
            auto plain = [](char c) {
                return c != '"' && c != ':' && c != '-' && c != ' ' && c != '\t';
            };
            while (!ends(word) && plain(*word)) ++word;
            It end = word;
            while (!ends(end) && isTrimmedBlank(*end)) ++end;
            if (ends(end)) {
                text.value.assign(trimmed(std::string_view(first, word - first)));
                text.openSm = text.value;
                first = end;
                x3::traits::move_to(std::move(text), attr);
                return true;
            }
        }
        It end = first;
        while (!ends(end)) {
            if (*end != '"') {
                It run = end;
                while (!ends(end) && *end != '"') ++end;
                It use = last;
                if (mode == TextMode::Item && openSmReads) {
                    if (auto k = ast::openSmKeywordIn(std::string_view(&*run, end - run))) {
                        It at = run + static_cast<std::ptrdiff_t>(k->at);
                        if (k->field != ast::Key::Use) {
                            const std::string word(at, at + static_cast<std::ptrdiff_t>(k->length));
                            boost::throw_exception(x3::expectation_failure<It>(
                                at, "!OpenSM's lexer reads '" + word +
                                        "' as a keyword even inside a value, and drops the file: "
                                        "quote the value (\"...\")"));
                        }
                        use = at;
                        end = at;
                    }
                }
                text.value.append(run, end);
                // OpenSM's lexer swallows blanks outside quotes, except in a description.
                const size_t from = text.openSm.size();
                text.openSm.append(run, end);
                if (mode == TextMode::Item) {
                    auto blank = [](char c) { return c == ' ' || c == '\t'; };
                    text.openSm.erase(
                        std::remove_if(text.openSm.begin() + from, text.openSm.end(), blank),
                        text.openSm.end());
                }
                if (use != last) {
                    // The description runs to the line end (or a comment), as in "use:".
                    end = use;
                    while (*end != ':') ++end;
                    ++end;
                    while (end != last && !isLineEnd(*end) && *end != '#') ++end;
                    auto& state = x3::get<ParseStateTag>(ctx);
                    text.useFirst = static_cast<int>(state.offset(use));
                    text.useLast = static_cast<int>(state.offset(end));
                    state.embeddedUse = true;
                    break;
                }
                continue;
            }
            It close = end + 1;
            while (close != last && *close != '"' && !isLineEnd(*close)) ++close;
            if (close == last || *close != '"') {
                if (mode == TextMode::Remainder) {  // a lone '"' in a description is text
                    text.value.push_back(*end++);
                    continue;
                }
                auto column = std::to_string(x3::get<ParseStateTag>(ctx).locate(end).column);
                boost::throw_exception(
                    x3::expectation_failure<It>(close, "!unterminated string: the '\"' at column " +
                                                           column + " is not closed on its line"));
            }
            text.value.append(end + 1, close);
            text.openSm.append(end + 1, close);
            end = close + 1;
        }
        trimBlanks(text.value);
        trimBlanks(text.openSm);
        first = end;
        x3::traits::move_to(std::move(text), attr);
        return true;
    }
};

// A node type word of "node-type:" (CA, SWITCH, ROUTER, ALL, SELF), case-insensitive.
struct NodeTypeToken : x3::parser<NodeTypeToken> {
    using attribute_type = ast::NodeType;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        for (size_t n = 0; n < std::size(ast::nodeTypeWords); ++n) {
            const std::string_view word = ast::nodeTypeWords[n];
            if (startsWithWord(first, last, word, true)) {
                first += word.size();
                ast::NodeType t;
                t.name = static_cast<ast::NodeTypeName>(n);
                x3::traits::move_to(t, attr);
                return true;
            }
        }
        return false;
    }
};

// The ULP word that starts a qos-ulps line, case-insensitive.
struct UlpToken : x3::parser<UlpToken> {
    using attribute_type = ast::Ulp;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        for (size_t u = 0; u < std::size(ast::ulpWords); ++u) {
            const std::string_view word = ast::ulpWords[u];
            if (!startsWithWord(first, last, word, true)) continue;
            // Only a ULP line when ',' or ':' follows: "default" alone is something else.
            It p = first + word.size();
            while (p != last && (*p == ' ' || *p == '\t')) ++p;
            if (p == last || (*p != ',' && *p != ':')) return false;
            first += word.size();
            x3::traits::move_to(static_cast<ast::Ulp>(u), attr);
            return true;
        }
        return false;
    }
};

// The qualifier of a qos-ulps line ("service-id", "port-num", ...), lower case as in OpenSM.
struct UlpQualifierToken : x3::parser<UlpQualifierToken> {
    using attribute_type = ast::UlpQualifierWord;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr& attr) const {
        x3::skip_over(first, last, ctx);
        for (size_t q = static_cast<size_t>(ast::UlpQualifier::ServiceId);
             q < std::size(ast::ulpQualifierWords); ++q) {
            const std::string_view word = ast::ulpQualifierWords[q];
            // OpenSM's lexer reads "any, service-id" as one token: a number may follow at once.
            if (static_cast<size_t>(last - first) >= word.size() &&
                std::string_view(first, word.size()) == word) {
                first += word.size();
                ast::UlpQualifierWord w;
                w.kind = static_cast<ast::UlpQualifier>(q);
                x3::traits::move_to(w, attr);
                return true;
            }
        }
        return false;
    }
};

// Where a line that fits nowhere was found: the enclosing block, or the top level.
struct LineContext {
    bool topLevel = false;
    ast::BlockKind block = ast::BlockKind::PortGroups;
};

// Explains a line that is not valid where it stands (see messages.cpp).
std::string strayLineMessage(LineContext where, std::string_view line);
// Explains a block keyword met outside its section, or "" when the line opens no block that
// belongs in a section.
std::string orphanBlockMessage(std::string_view line);

// Consumes a line that is not valid where it stands and reports it: the recovery point.
struct StrayLine : x3::parser<StrayLine> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;
    explicit constexpr StrayLine(LineContext where) : where(where) {}
    LineContext where;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        x3::skip_over(first, last, ctx);
        if (first == last || isLineEnd(*first)) return false;
        It end = first;
        while (end != last && !isLineEnd(*end)) ++end;
        ParseState& state = x3::get<ParseStateTag>(ctx);
        state.diagnostics.syntaxError(
            "syntax", state.source.name(), state.locate(first),
            strayLineMessage(where, std::string_view(first, end - first)));
        first = skipLine(end, last);
        return true;
    }
};

// Looks at a line without consuming it: when it opens a block that belongs inside a section
// (a "qos-level" with no "qos-levels" around it), reports that and lets the block be parsed.
struct OrphanBlock : x3::parser<OrphanBlock> {
    using attribute_type = x3::unused_type;
    static bool const has_attribute = false;

    template <typename It, typename Ctx, typename RCtx, typename Attr>
    bool parse(It& first, It const& last, Ctx const& ctx, RCtx&, Attr&) const {
        It p = first;
        x3::skip_over(p, last, ctx);
        It end = p;
        while (end != last && !isLineEnd(*end)) ++end;
        std::string message = orphanBlockMessage(std::string_view(p, end - p));
        if (message.empty()) return false;
        ParseState& state = x3::get<ParseStateTag>(ctx);
        state.diagnostics.syntaxError("outside-section", state.source.name(), state.locate(p),
                                      std::move(message));
        return true;
    }
};

}  // namespace ibqos::grammar

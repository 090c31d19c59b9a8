// SPDX-License-Identifier: MIT
// parsePolicy: runs the X3 grammar over a source file.
#include "policy-grammar/parse.hpp"

#include <cstring>
#include <set>
#include <string_view>
#include <utility>

#include "policy-grammar/grammar.hpp"

namespace ibqos {

namespace {

// What an editor may put at the start of a UTF-8 file. OpenSM 3.3.23's lexer reads it as text
// before the first keyword: a syntax error at 1:2 (ERR AC05), and the policy is dropped, with a
// comment or a blank line after it too (seen on ibsim).
constexpr std::string_view ByteOrderMark = "\xEF\xBB\xBF";

// Where the carriage returns of Windows line ends ("\r\n") stand.
std::set<std::pair<uint32_t, uint32_t>> lineEndCarriageReturns(const SourceFile& source) {
    std::set<std::pair<uint32_t, uint32_t>> out;
    std::string_view text = source.text();
    uint32_t line = 1;
    for (size_t i = text.find("\r\n"); i != std::string_view::npos; i = text.find("\r\n", i + 2)) {
        SourceLocation at = source.locate(static_cast<uint32_t>(i), line);
        out.emplace(at.line, at.column);
    }
    return out;
}

// Moves the grammar's diagnostics to the caller's. A file with Windows line ends gets one
// error for its carriage returns, at the first OpenSM rejects, instead of one a line: the
// lines stay marked, so that nothing lost on them is reported again.
void keepSyntaxDiagnostics(const SourceFile& source, const Diagnostics& parsed,
                           Diagnostics& diagnostics) {
    const auto carriageReturns = lineEndCarriageReturns(source);
    auto atCarriageReturn = [&](const Diagnostic& d) {
        return d.severity == Severity::Error && d.file == source.name() &&
               carriageReturns.count({d.location.line, d.location.column}) != 0;
    };
    const Diagnostic* first = nullptr;
    size_t count = 0;
    for (const Diagnostic& d : parsed.all()) {
        if (!atCarriageReturn(d)) continue;
        ++count;
        if (!first || d.location.line < first->location.line) first = &d;
    }
    if (count < 2) {
        diagnostics.append(parsed);
        return;
    }
    diagnostics.append(parsed, [&](const Diagnostic& d) { return !atCarriageReturn(d); });
    diagnostics.report(Severity::Error, first->code, first->file, first->location,
                       first->message +
                           " (the file has Windows line ends: " + std::to_string(count - 1) +
                           " more lines where OpenSM rejects the carriage return are not "
                           "reported one by one)",
                       true);
}

// A "use:" OpenSM's lexer read inside a value (TextToken) is the block's description, as a use:
// line would be: a field of its own after the value's, so that a second one is a duplicate, as
// in OpenSM.
void addEmbeddedUses(std::vector<ast::Item>& items, const SourceFile& source,
                     Diagnostics& diagnostics) {
    for (size_t i = 0; i < items.size(); ++i) {
        if (auto* block = boost::get<ast::x3::forward_ast<ast::Block>>(&items[i])) {
            addEmbeddedUses(block->get().items, source, diagnostics);
            continue;
        }
        const auto* field = boost::get<ast::Field>(&items[i]);
        if (!field) continue;
        const ast::Text* text = boost::get<ast::Text>(&field->value.get());
        if (const auto* list = boost::get<ast::TextList>(&field->value.get()))
            text = list->empty() ? nullptr : &list->back();
        if (!text || text->useFirst < 0) continue;
        // The description: after the colon of "use:", blanks trimmed.
        const std::string_view line =
            source.text().substr(static_cast<size_t>(text->useFirst),
                                 static_cast<size_t>(text->useLast - text->useFirst));
        ast::Text use;
        use.value = std::string(line.substr(line.find(':') + 1));
        grammar::trimBlanks(use.value);
        use.openSm = use.value;
        use.id_first = text->useFirst;
        use.id_last = text->useLast;
        ast::Field described;
        described.key = ast::Key::Use;
        described.id_first = text->useFirst;
        described.id_last = text->useLast;
        described.value = std::move(use);
        diagnostics.warning("keyword-in-value", source.name(),
                            source.locate(static_cast<uint32_t>(text->useFirst)),
                            "OpenSM's lexer reads 'use:' as a keyword even inside a value: the "
                            "value ends before it, and the rest of the line describes the block; "
                            "quote the value if 'use:' belongs to it");
        items.insert(items.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                     ast::Item(std::move(described)));
        ++i;
    }
}

}  // namespace

std::optional<ast::PolicyFile> parsePolicy(const SourceFile& source, Diagnostics& diagnostics) {
    ast::PolicyFile file;
    const char* first = source.begin();
    const char* last = source.end();

    // A NUL byte means this is not a text file: one clear error instead of one per line.
    if (const void* nul = std::memchr(first, '\0', source.text().size())) {
        diagnostics.syntaxError("binary-file", source.name(),
                                source.locate(static_cast<const char*>(nul)),
                                "this is not a text file (it holds a NUL byte)");
        return std::nullopt;
    }
    // The mark is named once and the text after it read as it stands, so that nothing else is
    // reported for it; the line keeps its own errors.
    if (source.text().starts_with(ByteOrderMark)) {
        diagnostics.report(Severity::Error, "byte-order-mark", source.name(), {1, 1},
                           "the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which "
                           "OpenSM reads as text: it rejects the file; save it without the mark "
                           "(sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)",
                           true);
        first += ByteOrderMark.size();
    }

    Diagnostics parsed;
    grammar::ParseState state{source, parsed};
    grammar::Skipper const skipper{};
    grammar::SkipperContext skipContext(skipper);
    grammar::Context context(state, skipContext);
    try {
        if (!grammar::policy.parse(first, last, context, boost::spirit::x3::unused, file.blocks)) {
            parsed.syntaxError("syntax", source.name(), source.locate(first),
                               "this line cannot be read");
        }
    } catch (const boost::spirit::x3::expectation_failure<const char*>& x) {
        // Every line-level failure is recovered inside the grammar; this is the end-of-file
        // expectation, reached only when a line could not be consumed at all.
        parsed.syntaxError("syntax", source.name(), source.locate(x.where()),
                           "expected " + x.which());
    }
    keepSyntaxDiagnostics(source, parsed, diagnostics);
    if (state.embeddedUse) {
        for (ast::Block& block : file.blocks) addEmbeddedUses(block.items, source, diagnostics);
    }
    // OpenSM's lexer reads '#' to the line end as a comment only when a line end follows it: on
    // a last line without one, the comment is text, and OpenSM drops the file.
    std::string_view text = source.text();
    if (!text.empty() && text.back() != '\n') {
        size_t start = text.rfind('\n');
        start = start == std::string_view::npos ? 0 : start + 1;
        bool quoted = false;
        for (size_t i = start; i < text.size(); ++i) {
            if (text[i] == '"') quoted = !quoted;
            if (quoted || text[i] != '#') continue;
            diagnostics.syntaxError("syntax", source.name(),
                                    source.locate(static_cast<uint32_t>(i)),
                                    "a comment on the last line needs a line end after it: "
                                    "without one OpenSM reads it as text and drops the file");
            break;
        }
    }
    return file;
}

}  // namespace ibqos

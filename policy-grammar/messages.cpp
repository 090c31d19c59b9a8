// SPDX-License-Identifier: MIT
// Wording of syntax errors: what a misplaced or unknown line is, and what was expected instead.
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "policy-grammar/ast.hpp"
#include "policy-grammar/error_handler.hpp"
#include "policy-grammar/keywords.hpp"
#include "policy-grammar/tokens.hpp"

namespace ibqos {

namespace grammar {

namespace {

using ast::BlockKind;

// What a block's body may hold: field keywords, or the blocks nested in it.
struct BodyWords {
    std::vector<std::string_view> fields;
    std::vector<std::string_view> blocks;
};

BodyWords bodyWords(BlockKind kind) {
    BodyWords words;
    for (ast::Key k : ast::wordsOf(kind).fields) words.fields.push_back(ast::keyName(k));
    for (BlockKind b : ast::wordsOf(kind).blocks) words.blocks.push_back(ast::openKeyword(b));
    return words;
}

// Every block kind, in the table's order.
std::vector<BlockKind> allKinds() {
    std::vector<BlockKind> kinds;
    for (size_t k = 0; k < std::size(ast::blockWords); ++k) kinds.push_back(BlockKind(k));
    return kinds;
}

std::string joinWords(const std::vector<std::string_view>& words, std::string_view suffix) {
    std::string out;
    for (size_t i = 0; i < words.size(); ++i) {
        if (i) out += i + 1 == words.size() ? " or " : ", ";
        out += "'" + std::string(words[i]) + std::string(suffix) + "'";
    }
    return out;
}

std::string article(std::string_view word) {
    return (word.size() && std::string_view("aeiou").find(word[0]) != std::string_view::npos) ? "an"
                                                                                              : "a";
}

std::string blockName(BlockKind kind) { return ast::openKeyword(kind); }

// The blocks whose body takes this field keyword.
std::vector<std::string_view> blocksWithField(std::string_view field) {
    std::vector<std::string_view> found;
    for (BlockKind k : allKinds()) {
        auto w = bodyWords(k);
        if (std::find(w.fields.begin(), w.fields.end(), field) != w.fields.end()) {
            found.push_back(ast::openKeyword(k));
        }
    }
    return found;
}

const ast::BlockWords* findBlockWord(std::string_view word, bool& isClose) {
    for (BlockKind k : allKinds()) {
        const auto& w = ast::wordsOf(k);
        if (word == w.open) {
            isClose = false;
            return &w;
        }
        if (word == w.close) {
            isClose = true;
            return &w;
        }
    }
    return nullptr;
}

std::string unknownUlp(std::string_view word) {
    std::string ulps;
    for (std::string_view ulp : ast::ulpWords)
        ulps += (ulps.empty() ? "" : ", ") + std::string(ulp);
    return "unknown ULP '" + std::string(word) +
           "' in qos-ulps: a line is '<ulp>[, <qualifier> <values>] : <sl>' with <ulp> one of " +
           ulps;
}

// The sections' keywords, in the table's order.
std::vector<std::string_view> sectionKeywords() {
    std::vector<std::string_view> out;
    for (const ast::BlockWords& w : ast::blockWords) {
        if (!w.parent) out.push_back(w.open);
    }
    return out;
}

// "a policy is made of the sections A, B and C".
std::string sectionListText(const std::vector<std::string_view>& sections) {
    std::string out = "a policy is made of the sections ";
    for (size_t i = 0; i < sections.size(); ++i) {
        if (i > 0) out += i + 1 == sections.size() ? " and " : ", ";
        out += sections[i];
    }
    return out;
}

// A word with a colon ("sl: 3") that is no field where it stands.
std::string strayFieldMessage(LineContext where, std::string_view word, const std::string& inBlock,
                              const BodyWords& body) {
    std::string kw(word);
    auto owners = blocksWithField(word);
    if (!owners.empty()) {
        return "'" + kw + ":' does not belong " + inBlock + "; it is a field of " +
               joinWords(owners, "");
    }
    if (!where.topLevel && where.block == BlockKind::QosUlps) return unknownUlp(word);
    std::string message = "unknown field '" + kw + ":' " + inBlock;
    if (body.fields.empty()) return message;
    std::string_view guess = closest(word, body.fields);
    if (!guess.empty()) return message + "; did you mean '" + std::string(guess) + ":'?";
    return message + " (" + article(blockName(where.block)) + " " + blockName(where.block) +
           " takes " + joinWords(body.fields, ":") + ")";
}

// A block's keyword where it cannot stand; nothing when the word opens or closes no block.
std::optional<std::string> strayBlockWordMessage(LineContext where, std::string_view word,
                                                 const std::string& inBlock) {
    bool isClose = false;
    const ast::BlockWords* w = findBlockWord(word, isClose);
    if (!w) return std::nullopt;
    if (isClose) {
        if (where.topLevel)
            return "'" + std::string(word) + "' closes nothing: no '" + w->open + "' is open";
        return "'" + std::string(word) + "' does not close " + blockName(where.block) +
               "; close it with '" + ast::closeKeyword(where.block) + "' first";
    }
    if (where.topLevel && w->parent)
        return "'" + std::string(word) + "' must be inside a '" + ast::openKeyword(*w->parent) +
               "' section";
    std::string message = "'" + std::string(word) + "' cannot stand " + inBlock;
    if (w->parent) message += "; it belongs in '" + std::string(ast::openKeyword(*w->parent)) + "'";
    return message;
}

// Any other word inside a block: a guess among what the block takes, or what it takes.
std::string strayWordMessage(LineContext where, std::string_view word, const std::string& inBlock,
                             const BodyWords& body) {
    std::vector<std::string_view> expected = body.fields;
    for (std::string_view b : body.blocks) expected.push_back(b);
    std::string_view guess = closest(word, expected);
    if (!guess.empty())
        return "unknown keyword '" + std::string(word) + "' " + inBlock + "; did you mean '" +
               std::string(guess) + "'?";
    std::string message = "unexpected '" + std::string(word) + "' " + inBlock;
    if (!body.fields.empty())
        return message + "; expected " + joinWords(body.fields, ":") + " or '" +
               ast::closeKeyword(where.block) + "'";
    if (!body.blocks.empty())
        return message + "; expected " + joinWords(body.blocks, "") + " or '" +
               ast::closeKeyword(where.block) + "'";
    return message;
}

}  // namespace

std::string strayLineMessage(LineContext where, std::string_view line) {
    size_t n = 0;
    while (n < line.size() && isWordChar(line[n])) ++n;
    std::string_view word = line.substr(0, n);
    size_t p = n;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
    bool hasColon = n > 0 && p < line.size() && line[p] == ':';

    std::vector<std::string_view> sections = sectionKeywords();
    if (n == 0 && !line.empty() && line[0] == '\r') return carriageReturnMessage("");
    if (n == 0) {
        std::string shown(line.substr(0, std::min<size_t>(line.size(), 20)));
        return "unexpected '" + shown + "'" +
               (where.topLevel ? "; " + sectionListText(sections) : "");
    }

    BodyWords body = where.topLevel ? BodyWords{} : bodyWords(where.block);
    std::string inBlock = where.topLevel ? "outside any section" : "in " + blockName(where.block);
    if (hasColon) return strayFieldMessage(where, word, inBlock, body);
    if (auto message = strayBlockWordMessage(where, word, inBlock)) return *message;

    if (!where.topLevel && where.block == BlockKind::QosUlps) {
        for (std::string_view ulp : ast::ulpWords) {
            if (editDistance(word, ulp) == 0) {
                return "expected ':' or ',' after '" + std::string(word) + "'";
            }
        }
    }
    // A known field keyword without its colon ("sl 3").
    if (std::find(body.fields.begin(), body.fields.end(), word) != body.fields.end() ||
        !blocksWithField(word).empty()) {
        return "expected ':' after '" + std::string(word) + "'";
    }
    if (!where.topLevel && where.block == BlockKind::QosUlps) return unknownUlp(word);
    if (where.topLevel) {
        std::string_view guess = closest(word, sections);
        if (!guess.empty())
            return "unknown section '" + std::string(word) + "'; did you mean '" +
                   std::string(guess) + "'?";
        return "unexpected '" + std::string(word) + "'; " + sectionListText(sections);
    }
    return strayWordMessage(where, word, inBlock, body);
}

std::string orphanBlockMessage(std::string_view line) {
    size_t n = 0;
    while (n < line.size() && isWordChar(line[n])) ++n;
    std::string_view word = line.substr(0, n);
    bool isClose = false;
    const ast::BlockWords* w = findBlockWord(word, isClose);
    if (!w || isClose || !w->parent) return "";
    return "'" + std::string(word) + "' must be inside a '" + ast::openKeyword(*w->parent) +
           "' section (read as if it were)";
}

// OpenSM reads a carriage return as text: it drops it at the end of a name or in a comment and
// fails the whole file anywhere else.
std::string carriageReturnMessage(std::string_view after) {
    return "a carriage return (a Windows line end)" +
           (after.empty() ? std::string() : " after " + std::string(after)) +
           ": OpenSM rejects the file; convert it with dos2unix";
}

std::string describeFound(const char* where, const char* last) {
    if (where == last) return "end of file";
    if (isLineEnd(*where)) return "end of line";
    if (*where == '\r') return "a carriage return";
    const char* end = where;
    while (end != last && !isLineEnd(*end) && !isTrimmedBlank(*end) && end - where < 40) ++end;
    std::string token(where, end);
    if (end != last && !isLineEnd(*end) && !isTrimmedBlank(*end)) token += "...";
    for (char& c : token) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return "'" + token + "'";
}

std::string leadingWord(const char* first, const char* last) {
    while (first != last && (*first == ' ' || *first == '\t')) ++first;
    const char* end = first;
    while (end != last && isWordChar(*end)) ++end;
    const char* p = end;
    while (p != last && (*p == ' ' || *p == '\t')) ++p;
    std::string word(first, end);
    if (p != last && *p == ':') {
        word += ':';
    } else if (p != last && *p == ',') {
        // A qos-ulps line: name its qualifier too ("sdp, port-num").
        ++p;
        while (p != last && (*p == ' ' || *p == '\t')) ++p;
        const char* q = p;
        while (q != last && isWordChar(*q)) ++q;
        if (q != p) word += ", " + std::string(p, q);
    }
    return "'" + word + "'";
}

}  // namespace grammar

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// Small text and hash helpers shared by the readers, the emitters, the commands and the plugin.
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibqos {

// v in hex with a 0x prefix, zero-padded to at least `digits` digits, appended to out.
inline void appendHex(std::string& out, uint64_t v, int digits = 0) {
    // (By hand: snprintf took most of the time of `ibqos diff` on regions with many GUID
    // ranges.)
    char buf[16];
    char* p = buf + sizeof buf;
    do {
        *--p = "0123456789abcdef"[v % 16];
        v /= 16;
    } while (v != 0);
    const auto shown = static_cast<int>(buf + sizeof buf - p);
    out += "0x";
    out.append(static_cast<size_t>(std::max(digits - shown, 0)), '0');
    out.append(p, buf + sizeof buf);
}

// v in hex with a 0x prefix, zero-padded to at least `digits` digits.
inline std::string hex(uint64_t v, int digits = 0) {
    std::string out;
    appendHex(out, v, digits);
    return out;
}

// v with at most three decimals, without trailing zeros ("12.5", "40").
inline std::string decimal(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    std::string text = buf;
    while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
        bool point = text.back() == '.';
        text.pop_back();
        if (point) break;
    }
    return text == "-0" ? "0" : text;
}

// s without the blanks (spaces, tabs, carriage returns...) at either end.
inline std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// A whole string read as an unsigned number as strtoull reads it (base 0: decimal, 0x hex, 0
// octal; base 16 takes an optional 0x), or nullopt when it is empty, does not start with a digit
// of its base (no blank, no sign), has anything after the number (a NUL byte included), or does
// not fit in 64 bits. Read in place: batch lines hold four numbers each.
inline std::optional<uint64_t> parseNumber(std::string_view text, int base = 0) {
    if (text.empty()) return std::nullopt;
    auto first = static_cast<unsigned char>(text.front());
    if (!(base == 16 ? std::isxdigit(first) : std::isdigit(first))) return std::nullopt;
    const bool prefixed = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    int radix = base;
    if (base == 0) radix = prefixed ? 16 : text[0] == '0' ? 8 : 10;
    if (radix == 16 && prefixed) text.remove_prefix(2);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, radix);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return v;
}

// c in lower case if it is an ASCII capital, as strcasecmp() folds it in the C locale (neither
// ibqos nor OpenSM sets another).
inline char foldCase(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}

// Whether two names are equal ignoring ASCII case, as OpenSM's strcasecmp() compares them.
inline bool sameName(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (foldCase(a[i]) != foldCase(b[i])) return false;
    }
    return true;
}

// The edit distance (insertions, deletions, substitutions) between two words, ignoring ASCII
// case.
inline size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                               diagonal + (foldCase(a[i - 1]) == foldCase(b[j - 1]) ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

// The candidate closest to a misspelt word, for "did you mean": within an edit distance of
// max(2, a quarter of the word), the first of the closest; "" when none is that close.
template <typename Candidates>
std::string_view closest(std::string_view word, const Candidates& candidates) {
    std::string_view best;
    size_t bestDistance = std::max<size_t>(2, word.size() / 4) + 1;
    for (std::string_view c : candidates) {
        // Words whose lengths differ by more than the bound cannot be within it.
        size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
        if (gap >= bestDistance) continue;
        size_t d = editDistance(word, c);
        if (d < bestDistance) {
            bestDistance = d;
            best = c;
        }
    }
    return best;
}

// A line split into fields at blanks (spaces and tabs), a field in double quotes keeping its
// blanks (no escapes): the form of `ibqos query --batch` lines and --port-caps lines. False,
// with a reason in error, for an unclosed quote, a quote inside a field, or a quoted field
// followed by something other than a blank. Field is std::string, or std::string_view for
// fields that point into line.
template <typename Field>
bool splitFields(std::string_view line, std::vector<Field>& fields, std::string& error) {
    fields.clear();
    size_t i = 0;
    while (true) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        if (i >= line.size()) return true;
        if (line[i] == '"') {
            size_t close = line.find('"', i + 1);
            if (close == std::string_view::npos) {
                error = "a double quote is not closed";
                return false;
            }
            fields.emplace_back(line.substr(i + 1, close - i - 1));
            i = close + 1;
            if (i < line.size() && line[i] != ' ' && line[i] != '\t') {
                error = "a quoted field must be followed by a blank";
                return false;
            }
            continue;
        }
        size_t end = line.find_first_of(" \t", i);
        if (end == std::string_view::npos) end = line.size();
        std::string_view field = line.substr(i, end - i);
        if (field.find('"') != std::string_view::npos) {
            error = "a double quote inside a field";
            return false;
        }
        fields.emplace_back(field);
        i = end;
    }
}

// The length of the well-formed UTF-8 sequence at the start of s (1 to 4 bytes), or 0 where
// none starts (a stray byte, an overlong form, a surrogate, a code point past U+10FFFF, or a
// sequence cut short).
size_t utf8SequenceLength(std::string_view s);

// Whether every byte of text is part of well-formed UTF-8.
bool isUtf8(std::string_view text);

// text as valid UTF-8: every byte that starts no well-formed sequence written as \xNN (what
// outputs that must be UTF-8 make of a NodeDescription in Latin-1).
std::string validUtf8(std::string_view text);

// text as XML character data or an attribute value: markup characters as entities; control
// characters (but tab and newline) and bytes that are not valid UTF-8 as \xNN.
std::string xmlText(std::string_view text);

// The 64-bit FNV-1a hash of some bytes: a file's identity in logs.
inline uint64_t fnv1a(std::string_view bytes) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
    return h;
}

}  // namespace ibqos

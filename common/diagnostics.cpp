// SPDX-License-Identifier: MIT
// Diagnostics collection and rendering (text with source excerpt, JSON).
#include "common/diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "common/json.hpp"
#include "common/source.hpp"

namespace ibqos {

namespace {

std::string lineKey(std::string_view file, uint32_t line) {
    std::string key(file);
    key.push_back('\0');
    key += std::to_string(line);
    return key;
}

}  // namespace

void Diagnostics::report(Severity severity, std::string code, std::string file,
                         SourceLocation location, std::string message, bool openSmRejects) {
    if (severity == Severity::Error) ++errors_;
    if (severity == Severity::Warning) ++warnings_;
    if (openSmRejects) ++openSmRejects_;
    items_.push_back(
        {severity, std::move(code), std::move(file), location, std::move(message), openSmRejects});
}

bool Diagnostics::syntaxError(std::string code, std::string file, SourceLocation location,
                              std::string message) {
    if (!syntaxLines_.insert(lineKey(file, location.line)).second) return false;
    report(Severity::Error, std::move(code), std::move(file), location, std::move(message), true);
    return true;
}

bool Diagnostics::hasSyntaxErrorOnLine(std::string_view file, uint32_t line) const {
    return syntaxLines_.count(lineKey(file, line)) != 0;
}

void Diagnostics::sort() {
    // The order is found on indices, and each diagnostic then moved once (a large policy has
    // thousands, each with three strings).
    std::vector<uint32_t> order(items_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](uint32_t i, uint32_t j) {
        const Diagnostic &a = items_[i], &b = items_[j];
        if (a.file != b.file) return a.file < b.file;
        if (a.location.line != b.location.line) return a.location.line < b.location.line;
        return a.location.column < b.location.column;
    });
    std::vector<Diagnostic> sorted;
    sorted.reserve(items_.size());
    for (uint32_t i : order) sorted.push_back(std::move(items_[i]));
    items_ = std::move(sorted);
}

void Diagnostics::append(const Diagnostics& other) {
    append(other, [](const Diagnostic&) { return true; });
}

void Diagnostics::append(const Diagnostics& other,
                         const std::function<bool(const Diagnostic&)>& keep) {
    for (const Diagnostic& d : other.items_) {
        if (keep(d)) report(d.severity, d.code, d.file, d.location, d.message, d.openSmRejects);
    }
    for (const std::string& k : other.syntaxLines_) syntaxLines_.insert(k);
}

std::string_view severityName(Severity severity) {
    switch (severity) {
        case Severity::Error:
            return "error";
        case Severity::Warning:
            return "warning";
        case Severity::Note:
            return "note";
    }
    return "error";
}

std::string renderText(const Diagnostic& d, const SourceFile* source) {
    // Appended piece by piece: a large policy may have thousands of these.
    std::string out;
    out.reserve(d.file.size() + d.code.size() + d.message.size() + 64);
    out += d.file;
    if (d.location.line != 0) {
        out += ':';
        out += std::to_string(d.location.line);
        out += ':';
        out += std::to_string(d.location.column);
    }
    out += ": ";
    out += severityName(d.severity);
    out += ": [";
    out += d.code;
    out += "] ";
    out += d.message;
    out += '\n';
    if (!source || d.location.line == 0 || d.location.line > source->lineCount()) return out;

    std::string_view line = source->line(d.location.line);
    size_t column = d.location.column == 0 ? 0 : d.location.column - 1;
    column = std::min(column, line.size());
    // Show at most 200 characters, centred on the column when the line is longer.
    constexpr size_t Width = 200;
    size_t start = 0;
    if (line.size() > Width && column > Width / 2)
        start = std::min(column - Width / 2, line.size() - Width);
    std::string_view shown = line.substr(start, Width);
    out += "    ";
    for (char c : shown) {
        const auto u = static_cast<unsigned char>(c);
        out += u == '\t' || (u >= 0x20 && u != 0x7f) ? c : '?';
    }
    out += "\n    ";
    for (size_t i = 0; i < shown.size() && start + i < column; ++i)
        out += shown[i] == '\t' ? '\t' : ' ';
    out += "^\n";
    return out;
}

Json diagnosticsJson(const std::vector<Diagnostic>& diagnostics) {
    Json out = Json::array();
    for (const Diagnostic& d : diagnostics) {
        out.push_back({{"severity", severityName(d.severity)},
                       {"code", d.code},
                       {"file", d.file},
                       {"line", d.location.line},
                       {"column", d.location.column},
                       {"message", d.message},
                       {"opensm_rejects", d.openSmRejects}});
    }
    return out;
}

std::string renderJson(const std::vector<Diagnostic>& diagnostics) {
    return dumpJson(diagnosticsJson(diagnostics)) + "\n";
}

}  // namespace ibqos

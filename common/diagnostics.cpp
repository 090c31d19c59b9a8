// SPDX-License-Identifier: MIT
// Diagnostics collection and rendering (text with source excerpt, JSON).
#include "common/diagnostics.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

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
    // By file, line and column, equals in the order reported. The order is found on integer
    // keys (the file's rank among the files, the line; the column, the index), and each
    // diagnostic then moved once (a large policy has thousands, each with three strings).
    std::vector<std::string_view> files;
    for (const Diagnostic& d : items_) {
        if (std::find(files.begin(), files.end(), d.file) == files.end()) files.push_back(d.file);
    }
    std::sort(files.begin(), files.end());
    std::vector<std::pair<uint64_t, uint64_t>> keys(items_.size());
    for (uint32_t i = 0; i < items_.size(); ++i) {
        const Diagnostic& d = items_[i];
        const auto file = static_cast<uint64_t>(
            std::lower_bound(files.begin(), files.end(), d.file) - files.begin());
        keys[i] = {file << 32 | d.location.line, uint64_t{d.location.column} << 32 | i};
    }
    if (std::is_sorted(keys.begin(), keys.end())) return;
    std::sort(keys.begin(), keys.end());
    std::vector<Diagnostic> sorted;
    sorted.reserve(items_.size());
    for (const auto& key : keys) sorted.push_back(std::move(items_[key.second & UINT32_MAX]));
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
    std::string out;
    out.reserve(d.file.size() + d.code.size() + d.message.size() + 64);
    appendText(out, d, source);
    return out;
}

void appendText(std::string& out, const Diagnostic& d, const SourceFile* source) {
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
    if (!source || d.location.line == 0 || d.location.line > source->lineCount()) return;

    std::string_view line = source->line(d.location.line);
    size_t column = d.location.column == 0 ? 0 : d.location.column - 1;
    column = std::min(column, line.size());
    // Show at most 200 characters, centred on the column when the line is longer.
    constexpr size_t Width = 200;
    size_t start = 0;
    if (line.size() > Width && column > Width / 2)
        start = std::min(column - Width / 2, line.size() - Width);
    std::string_view shown = line.substr(start, Width);
    // The line as it is, a control character as '?' (a tab kept); the caret under the column,
    // with the line's tabs before it kept so that it lines up.
    auto printable = [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u == '\t' || (u >= 0x20 && u != 0x7f);
    };
    out += "    ";
    if (std::all_of(shown.begin(), shown.end(), printable)) {
        out += shown;
    } else {
        for (char c : shown) out += printable(c) ? c : '?';
    }
    out += "\n    ";
    const std::string_view before = shown.substr(0, column - std::min(column, start));
    if (before.find('\t') == std::string_view::npos) {
        out.append(before.size(), ' ');
    } else {
        for (char c : before) out += c == '\t' ? '\t' : ' ';
    }
    out += "^\n";
}

std::vector<DiagnosticGroup> groupByCause(const std::vector<Diagnostic>& sorted) {
    std::vector<DiagnosticGroup> groups;
    std::unordered_map<std::string, size_t> byCause;
    std::string key;
    for (const Diagnostic& d : sorted) {
        key.assign(1, static_cast<char>(d.severity));
        key += d.code;
        key += '\0';
        key += d.file;
        key += '\0';
        key += d.message;
        auto [it, fresh] = byCause.emplace(key, groups.size());
        if (fresh) {
            groups.push_back({&d, {}});
        } else {
            groups[it->second].others.push_back(&d);
        }
    }
    return groups;
}

void appendGroupText(std::string& out, const DiagnosticGroup& group, const SourceFile* source) {
    appendText(out, *group.first, source);
    if (group.others.empty()) return;
    constexpr size_t Shown = 5;
    out += "    (and at ";
    out += std::to_string(group.others.size());
    out += group.others.size() == 1 ? " more place: " : " more places: ";
    for (size_t i = 0; i < group.others.size() && i < Shown; ++i) {
        const SourceLocation& at = group.others[i]->location;
        if (i) out += ", ";
        out += std::to_string(at.line);
        out += ':';
        out += std::to_string(at.column);
    }
    if (group.others.size() > Shown) out += ", ...; --json lists every one";
    out += ")\n";
}

Json diagnosticsJson(const std::vector<Diagnostic>& diagnostics) {
    Json out = Json::array();
    for (const DiagnosticGroup& g : groupByCause(diagnostics)) {
        const Diagnostic& d = *g.first;
        Json object = {{"severity", severityName(d.severity)},
                       {"code", d.code},
                       {"file", d.file},
                       {"line", d.location.line},
                       {"column", d.location.column},
                       {"message", d.message},
                       {"opensm_rejects", d.openSmRejects}};
        if (!g.others.empty()) {
            Json related = Json::array();
            for (const Diagnostic* o : g.others)
                related.push_back({{"file", o->file},
                                   {"line", o->location.line},
                                   {"column", o->location.column}});
            object["related"] = std::move(related);
        }
        out.push_back(std::move(object));
    }
    return out;
}

std::string renderJson(const std::vector<Diagnostic>& diagnostics) {
    return dumpJson(diagnosticsJson(diagnostics)) + "\n";
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// Diagnostics: user mistakes as data, collected and reported together.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ibqos {

class SourceFile;

enum class Severity : uint8_t { Error, Warning, Note };

// A 1-based line and column; line 0 means "no position" (a whole-file problem).
struct SourceLocation {
    uint32_t line = 0;
    uint32_t column = 0;
};

// One problem found in an input file.
struct Diagnostic {
    Severity severity = Severity::Error;
    std::string code;  // stable, documented in docs/diagnostics.md
    std::string file;
    SourceLocation location;
    std::string message;
    // Whether a stock OpenSM 3.3.23 drops the whole policy for the same problem (its ERR AC03 or
    // AC04). True for most errors; false for an error only ibqos reports (OpenSM lets the file
    // through, and the Policy keeps OpenSM's meaning: see docs/compatibility.md); true for the
    // few warnings about files OpenSM rejects and ibqos reads.
    bool openSmRejects = false;
};

// Collects diagnostics from every stage. Syntax errors are limited to one per line per file
// (recovery resynchronises at the next line, so a second report on a line is a consequence
// of the first); other diagnostics are all kept.
class Diagnostics {
  public:
    void report(Severity severity, std::string code, std::string file, SourceLocation location,
                std::string message, bool openSmRejects);
    // An error OpenSM also drops the policy for.
    void error(std::string code, std::string file, SourceLocation location, std::string message) {
        report(Severity::Error, std::move(code), std::move(file), location, std::move(message),
               true);
    }
    // An error OpenSM lets through: ibqos is stricter, the policy keeps OpenSM's meaning.
    void stricterError(std::string code, std::string file, SourceLocation location,
                       std::string message) {
        report(Severity::Error, std::move(code), std::move(file), location, std::move(message),
               false);
    }
    // A warning; openSmRejects for a file OpenSM drops and ibqos reads.
    void warning(std::string code, std::string file, SourceLocation location, std::string message,
                 bool openSmRejects = false) {
        report(Severity::Warning, std::move(code), std::move(file), location, std::move(message),
               openSmRejects);
    }
    void note(std::string code, std::string file, SourceLocation location, std::string message) {
        report(Severity::Note, std::move(code), std::move(file), location, std::move(message),
               false);
    }
    // Reports a syntax error unless the line already has one; returns whether it was kept.
    bool syntaxError(std::string code, std::string file, SourceLocation location,
                     std::string message);
    bool hasSyntaxErrorOnLine(std::string_view file, uint32_t line) const;

    const std::vector<Diagnostic>& all() const { return items_; }
    size_t errorCount() const { return errors_; }
    size_t warningCount() const { return warnings_; }
    bool hasErrors() const { return errors_ != 0; }
    // Whether a stock OpenSM would drop the policy for one of these diagnostics.
    bool openSmRejects() const { return openSmRejects_ != 0; }
    // Orders by file, line and column, keeping the report order for equal positions.
    void sort();
    void append(const Diagnostics& other);
    // The same with only the diagnostics `keep` accepts; the lines of the other's syntax errors
    // all stay marked (what follows from a dropped one stays quiet).
    void append(const Diagnostics& other, const std::function<bool(const Diagnostic&)>& keep);

  private:
    std::vector<Diagnostic> items_;
    std::unordered_set<std::string> syntaxLines_;  // "file\0line"
    size_t errors_ = 0;
    size_t warnings_ = 0;
    size_t openSmRejects_ = 0;
};

std::string_view severityName(Severity severity);

// Diagnostics with one cause: the same severity, code, file and message at several places (a
// rule that shadows 3,913 later rules gives 3,913 such warnings).
struct DiagnosticGroup {
    const Diagnostic* first = nullptr;      // where the cause is shown
    std::vector<const Diagnostic*> others;  // its other places, in order
};
// Sorted diagnostics grouped by cause, in the order of each group's first place.
std::vector<DiagnosticGroup> groupByCause(const std::vector<Diagnostic>& sorted);

// A group as text: its first diagnostic as appendText writes it, then one line with how many
// other places share the cause and the first few of their lines.
void appendGroupText(std::string& out, const DiagnosticGroup& group, const SourceFile* source);

// "FILE:LINE:COL: error: [CODE] message", then the source line (at most 200 characters
// around the column) and a caret under the column when the source is known.
std::string renderText(const Diagnostic& diagnostic, const SourceFile* source);
// The same, appended to out (a large policy has thousands: one buffer for all of them).
void appendText(std::string& out, const Diagnostic& diagnostic, const SourceFile* source);

// The diagnostics as a JSON array of {"severity","code","file","line","column","message",
// "opensm_rejects"}, one object per cause: the other places of a cause are its "related" list
// of {"file","line","column"}. The value, and the document printed on one line with a newline.
nlohmann::ordered_json diagnosticsJson(const std::vector<Diagnostic>& diagnostics);
std::string renderJson(const std::vector<Diagnostic>& diagnostics);

}  // namespace ibqos

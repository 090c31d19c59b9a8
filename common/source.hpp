// SPDX-License-Identifier: MIT
// An input file held in memory, with the line index that diagnostics need.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostics.hpp"

namespace ibqos {

// Owns the text of one input file. Offsets are bytes from the start of the text.
class SourceFile {
  public:
    // Files at or above this size are refused: AST positions are 32-bit offsets.
    static constexpr uint64_t MaxSize = (uint64_t{1} << 31) - 1;

    SourceFile(std::string name, std::string text);

    // Reads a whole file; on failure returns nullopt and sets error to a readable reason.
    static std::optional<SourceFile> load(const std::string& path, std::string& error);
    // The same, the text alone, for a reader that needs no line index (or not yet).
    static std::optional<std::string> readText(const std::string& path, std::string& error);
    // Opens a file to read as a stream (a reader that goes line by line); false, with error
    // set as load() sets it, when it cannot be opened or is a directory.
    static bool open(const std::string& path, std::ifstream& in, std::string& error);

    const std::string& name() const { return name_; }
    std::string_view text() const { return text_; }
    const char* begin() const { return text_.data(); }
    const char* end() const { return text_.data() + text_.size(); }

    SourceLocation locate(uint32_t offset) const;
    // The same as locate(offset), in constant time when offsets come mostly in file order: the
    // search starts from line, the line of the previous answer, and leaves the answer's there.
    SourceLocation locate(uint32_t offset, uint32_t& line) const;
    SourceLocation locate(const char* p) const {
        return locate(static_cast<uint32_t>(p - begin()));
    }
    // The text of a 1-based line, without its line terminator.
    std::string_view line(uint32_t number) const;
    uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }

  private:
    std::string name_;
    std::string text_;
    std::vector<uint32_t> lineStarts_;
};

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// SourceFile: file loading and offset-to-line lookup.
#include "common/source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ibqos {

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
    lineStarts_.push_back(0);
    const char* base = text_.data();
    const char* end = base + text_.size();
    for (const char* p = base; p < end;) {
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (!nl) break;
        p = static_cast<const char*>(nl) + 1;
        if (p < end) lineStarts_.push_back(static_cast<uint32_t>(p - base));
    }
}

std::optional<SourceFile> SourceFile::load(const std::string& path, std::string& error) {
    std::optional<std::string> text = readText(path, error);
    if (!text) return std::nullopt;
    return SourceFile(path, std::move(*text));
}

bool SourceFile::open(const std::string& path, std::ifstream& in, std::string& error) {
    in.open(path, std::ios::binary);
    if (!in) {
        error = "cannot open '" + path + "': " + std::strerror(errno);
        return false;
    }
    // A directory opens as a stream that cannot be read (and claims a huge size).
    if (std::error_code ec; std::filesystem::is_directory(path, ec)) {
        error = "cannot read '" + path + "': " + std::strerror(EISDIR);
        return false;
    }
    return true;
}

std::optional<std::string> SourceFile::readText(const std::string& path, std::string& error) {
    std::ifstream in;
    if (!open(path, in, error)) return std::nullopt;
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    if (size < 0) {
        // Not seekable (a pipe): read it as a stream.
        in.clear();
        in.seekg(0);
        std::ostringstream all;
        all << in.rdbuf();
        std::string text = std::move(all).str();
        if (text.size() > MaxSize) {
            error = "'" + path + "' is larger than 2 GiB";
            return std::nullopt;
        }
        return text;
    }
    if (static_cast<uint64_t>(size) > MaxSize) {
        error = "'" + path + "' is larger than 2 GiB";
        return std::nullopt;
    }
    std::string text(static_cast<size_t>(size), '\0');
    in.seekg(0);
    if (size > 0 && !in.read(text.data(), size)) {
        error = "cannot read '" + path + "': " + std::strerror(errno);
        return std::nullopt;
    }
    return text;
}

SourceLocation SourceFile::locate(uint32_t offset) const {
    auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
    uint32_t line = static_cast<uint32_t>(it - lineStarts_.begin());  // >= 1: lineStarts_[0] = 0
    return {line, offset - lineStarts_[line - 1] + 1};
}

SourceLocation SourceFile::locate(uint32_t offset, uint32_t& line) const {
    // A few lines forward at most; anything else is a binary search.
    constexpr uint32_t Scan = 8;
    if (line >= 1 && line <= lineStarts_.size() && lineStarts_[line - 1] <= offset) {
        for (uint32_t steps = 0; steps < Scan; ++steps, ++line) {
            if (line == lineStarts_.size() || offset < lineStarts_[line]) {
                return {line, offset - lineStarts_[line - 1] + 1};
            }
        }
    }
    SourceLocation where = locate(offset);
    line = where.line;
    return where;
}

std::string_view SourceFile::line(uint32_t number) const {
    if (number == 0 || number > lineStarts_.size()) return {};
    size_t start = lineStarts_[number - 1];
    size_t stop = number < lineStarts_.size() ? lineStarts_[number] : text_.size();
    std::string_view s(text_.data() + start, stop - start);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace ibqos

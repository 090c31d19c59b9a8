// SPDX-License-Identifier: MIT
// `ibqos query --batch`'s reading: lines as a plain split gives them, however the input arrives
// (in pieces of any size, as a pipe gives them), over-long lines refused whole, and answers that
// go out before the reader waits for more input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "cli/query_batch.hpp"

using namespace ibqos;
using cli::LineReader;

namespace {

// A stream buffer that hands out its text a few bytes at a time (what a pipe does), and counts
// how often the reader had to wait for more.
class Trickle : public std::streambuf {
  public:
    Trickle(std::string text, uint64_t seed) : text_(std::move(text)), rng_(seed) {}
    size_t waits = 0;

  protected:
    int_type underflow() override {
        if (at_ == text_.size()) return traits_type::eof();
        ++waits;
        const size_t piece = std::min<size_t>(text_.size() - at_, 1 + rng_() % 7000);
        char* begin = text_.data() + at_;
        setg(begin, begin, begin + piece);
        at_ += piece;
        return traits_type::to_int_type(*begin);
    }

  private:
    std::string text_;
    size_t at_ = 0;
    std::mt19937_64 rng_;
};

// The lines as std::getline gives them, a final '\r' dropped, those over the bound marked.
struct Line {
    std::string text;
    bool tooLong;
    bool operator==(const Line&) const = default;
};

std::vector<Line> reference(const std::string& text) {
    std::vector<Line> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.size() > LineReader::MaxLine) {
            out.push_back({"", true});
            continue;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        out.push_back({line, false});
    }
    return out;
}

std::vector<Line> readAll(std::streambuf& in) {
    LineReader reader(in);
    std::vector<Line> out;
    std::string_view line;
    bool tooLong = false;
    while (reader.next(line, tooLong)) out.push_back({std::string(line), tooLong});
    return out;
}

}  // namespace

TEST_CASE("Batch lines are read as a plain split reads them, whatever pieces the input comes in",
          "[query][batch]") {
    std::mt19937_64 rng(49);
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    for (int round = 0; round < 300; ++round) {
        // Lines of every length around the buffer and the bound, CRLF ends, empty lines, and
        // sometimes no final newline.
        std::string text;
        for (uint64_t lines = pick(12); lines > 0; --lines) {
            const uint64_t kind = pick(10);
            const size_t length = kind < 6   ? pick(80)
                                  : kind < 8 ? LineReader::MaxLine - 2 + pick(5)
                                             : pick(3 * LineReader::MaxLine);
            for (size_t i = 0; i < length; ++i) text += static_cast<char>('a' + pick(26));
            if (pick(4) == 0) text += '\r';
            text += '\n';
        }
        if (!text.empty() && pick(3) == 0) text.pop_back();
        INFO("round " << round << ", " << text.size() << " bytes");
        const std::vector<Line> expected = reference(text);
        Trickle pieces(text, static_cast<uint64_t>(round));
        CHECK(readAll(pieces) == expected);
        std::stringbuf whole(text);
        CHECK(readAll(whole) == expected);
    }
}

TEST_CASE("An empty input has no line; a lone newline is one empty line", "[query][batch]") {
    std::stringbuf empty("");
    CHECK(readAll(empty).empty());
    std::stringbuf newline("\n");
    CHECK(readAll(newline) == std::vector<Line>{{"", false}});
    std::stringbuf crlf("\r\n\r\n");
    CHECK(readAll(crlf) == std::vector<Line>{{"", false}, {"", false}});
}

TEST_CASE("A line is ready without waiting only when the buffer holds it whole", "[query][batch]") {
    Trickle in(std::string(100, 'x') + "\n" + std::string(20, 'y') + "\n", 1);
    LineReader reader(in);
    CHECK_FALSE(reader.lineReady());  // nothing read yet: the first line needs input
    std::string_view line;
    bool tooLong = false;
    REQUIRE(reader.next(line, tooLong));
    CHECK(line == std::string(100, 'x'));
    // The second line came with the first piece.
    CHECK(reader.lineReady());
    REQUIRE(reader.next(line, tooLong));
    CHECK(line == std::string(20, 'y'));
    CHECK_FALSE(reader.lineReady());
    CHECK_FALSE(reader.next(line, tooLong));
}

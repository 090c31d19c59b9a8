// SPDX-License-Identifier: MIT
// The lines of `ibqos query --batch`: a request a line (SRC DST SERVICE_ID QOS_CLASS PKEY SL),
// read in bounded pieces and turned into a PathQuery or a located reason.
#pragma once

#include <istream>
#include <optional>
#include <string>

#include "fabric/fabric.hpp"
#include "sa-matcher/path_request.hpp"

namespace ibqos::cli {

// One request line read against the fabric; nullopt with the reason in error.
std::optional<PathQuery> parseBatchLine(const Fabric& fabric, const std::string& line,
                                        std::string& error);

// Reads lines of at most MaxLine bytes; a longer one is reported and skipped, never stored.
class LineReader {
  public:
    static constexpr size_t MaxLine = 65536;
    explicit LineReader(std::istream& in) : in_(in) {}

    // False at the end; otherwise a line (without its terminator) or tooLong.
    bool next(std::string& line, bool& tooLong);

  private:
    std::istream& in_;
};

}  // namespace ibqos::cli

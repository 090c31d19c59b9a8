// SPDX-License-Identifier: MIT
// `ibqos query --batch`: a request a line (SRC DST SERVICE_ID QOS_CLASS PKEY SL), read in
// bounded pieces, turned into a PathQuery or a located reason, answered and written as one JSON
// object a line.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "cli/answer_json.hpp"
#include "common/json.hpp"
#include "compiler/bind.hpp"
#include "fabric/fabric.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/path_request.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos::cli {

// One request line read against the fabric; nullopt with the reason in error.
std::optional<PathQuery> parseBatchLine(const Fabric& fabric, std::string_view line,
                                        std::string& error);

// Reads lines of at most MaxLine bytes from a stream buffer; a longer one is reported and
// skipped, never stored. It takes what the buffer has ready and waits only when it holds no
// whole line, so a co-process writing a request at a time is answered at once.
class LineReader {
  public:
    static constexpr size_t MaxLine = 65536;
    explicit LineReader(std::streambuf& in) : in_(in) {}

    // False at the end; otherwise a line (without its terminator, valid until the next call)
    // or tooLong.
    bool next(std::string_view& line, bool& tooLong);
    // Whether the next line is read without waiting for the input.
    bool lineReady() const;
    // Whether reading failed (not the end of the input).
    bool failed() const { return failed_; }

  private:
    bool fill();

    std::streambuf& in_;
    std::vector<char> buffer_ = std::vector<char>(1 << 16);
    size_t begin_ = 0, end_ = 0;  // the bytes of buffer_ not yet returned
    std::string long_;            // a line that spans refills
    bool failed_ = false, eof_ = false;
};

// What answers a request: the classifier, the ports' PKey tables and the JSON writer.
class RequestAnswerer {
  public:
    RequestAnswerer(const Policy& policy, const Fabric& fabric, const BoundPolicy& bound)
        : policy_(policy), classifier_(bound), pkeys_(fabric), writer_(policy) {}

    PathAnswer answer(const PathQuery& q) const {
        return answerPath(policy_, pkeys_, q, classifier_.match(q));
    }
    // The answer as the one-line JSON object of the contract, appended to out.
    void write(std::string& out, const PathAnswer& a) const { writer_.write(out, a); }

  private:
    const Policy& policy_;
    Classifier classifier_;
    PkeyTables pkeys_;
    AnswerWriter writer_;
};

// The object a request that cannot be answered gets: {"status": "error", "message": ...}.
inline Json errorObject(const std::string& message) {
    return {{"status", "error"}, {"message", message}};
}

// Answers every line of in on out, a JSON object a line, in order; a line that cannot be read
// gives {"status": "error", "message": ...}. What is answered is written out before the reader
// waits for more input. Returns whether every line was answered; readFailed says whether
// reading in failed before its end.
bool answerBatch(const RequestAnswerer& answerer, const Fabric& fabric, std::streambuf& in,
                 std::ostream& out, bool& readFailed);

}  // namespace ibqos::cli

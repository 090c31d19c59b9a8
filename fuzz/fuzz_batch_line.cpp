// SPDX-License-Identifier: MIT
// libFuzzer target: `ibqos query --batch` input. Any bytes are read as the command reads them,
// line by line with its bound, each line against the sample fabric. A line read is a request
// whose ports are the fabric's and whose fields are within their ranges, and it reads back the
// same from the line written with its ports' GUIDs; a line refused says why, briefly.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "cli/query_batch.hpp"
#include "common/text.hpp"
#include "fuzz/sample_fabric.hpp"
#include "ib/qos.hpp"

using namespace ibqos;

namespace {

// A broken guarantee: the line that found it, then abort (what libFuzzer reports).
#define CHECK_OR_ABORT(condition)                                                        \
    do {                                                                                 \
        if (!(condition)) {                                                              \
            std::fprintf(stderr, "fuzz_batch_line.cpp:%d: %s does not hold\n", __LINE__, \
                         #condition);                                                    \
            std::abort();                                                                \
        }                                                                                \
    } while (0)

template <typename T>
std::string field(const std::optional<T>& value) {
    return value ? std::to_string(*value) : "-";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const Fabric& fabric = fuzz::sampleFabric();
    std::stringbuf input(std::string(reinterpret_cast<const char*>(data), size));
    cli::LineReader reader(input);
    std::string_view line;
    bool tooLong = false;
    while (reader.next(line, tooLong)) {
        CHECK_OR_ABORT(line.size() <= cli::LineReader::MaxLine);
        if (tooLong) continue;
        std::string error;
        std::optional<PathQuery> q = cli::parseBatchLine(fabric, line, error);
        if (!q) {
            // A reason, and a short one: a message quotes at most an excerpt of the line.
            CHECK_OR_ABORT(!error.empty() && error.size() <= 400);
            continue;
        }
        CHECK_OR_ABORT(q->source < fabric.ports.size() && q->destination < fabric.ports.size());
        CHECK_OR_ABORT(!q->qosClass || *q->qosClass <= ib::MaxQosClass);
        CHECK_OR_ABORT(!q->sl || *q->sl <= ib::MaxSl);
        const std::string again = hex(fabric.ports[q->source].guid) + " " +
                                  hex(fabric.ports[q->destination].guid) + " " +
                                  field(q->serviceId) + " " + field(q->qosClass) + " " +
                                  field(q->pkey) + " " + field(q->sl);
        std::optional<PathQuery> back = cli::parseBatchLine(fabric, again, error);
        CHECK_OR_ABORT(back && back->source == q->source && back->destination == q->destination &&
                       back->serviceId == q->serviceId && back->qosClass == q->qosClass &&
                       back->pkey == q->pkey && back->sl == q->sl);
    }
    return 0;
}

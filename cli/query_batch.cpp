// SPDX-License-Identifier: MIT
// Batch lines: fields split as every ibqos line format splits them, ports found as the other
// commands find them, numbers bounded by the request's fields.
#include "cli/query_batch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/json.hpp"
#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos::cli {

namespace {

// At most this much of a bad value goes into a message.
std::string excerpt(std::string_view s) {
    return s.size() <= 60 ? std::string(s) : std::string(s.substr(0, 57)) + "...";
}

}  // namespace

std::optional<PathQuery> parseBatchLine(const Fabric& fabric, std::string_view line,
                                        std::string& error) {
    if (line.find('\0') != std::string_view::npos) {
        error = "the line holds a NUL byte";
        return std::nullopt;
    }
    thread_local std::vector<std::string_view> f;
    if (!splitFields(line, f, error)) return std::nullopt;
    if (f.size() != 6) {
        error = "expected 6 fields (SRC DST SERVICE_ID QOS_CLASS PKEY SL), found " +
                std::to_string(f.size());
        return std::nullopt;
    }
    PathQuery q;
    static const char* const names[] = {"SRC", "DST", "SERVICE_ID", "QOS_CLASS", "PKEY", "SL"};
    for (int i = 0; i < 2; ++i) {
        std::string why;
        uint32_t port = fabric.findEndpoint(f[i], why);
        if (port == NoPort) {
            // The whole reason, unless the field itself is too long to repeat.
            error =
                std::string(names[i]) + ": " +
                (f[i].size() <= 60 ? why : "'" + excerpt(f[i]) + "' is not a port of the fabric");
            return std::nullopt;
        }
        (i == 0 ? q.source : q.destination) = port;
    }
    static const uint64_t max[] = {0, 0, UINT64_MAX, ib::MaxQosClass, UINT16_MAX, ib::MaxSl};
    for (int i = 2; i < 6; ++i) {
        if (f[i] == "-") continue;
        auto v = parseNumber(f[i]);
        if (v && *v > max[i]) v.reset();
        if (!v) {
            error = std::string(names[i]) + " '" + excerpt(f[i]) + "' is not a number from 0 to " +
                    (i == 2 ? std::string("2^64-1") : std::to_string(max[i])) + " (or '-')";
            return std::nullopt;
        }
        if (i == 2) q.serviceId = *v;
        if (i == 3) q.qosClass = static_cast<uint16_t>(*v);
        if (i == 4) q.pkey = static_cast<uint16_t>(*v);
        if (i == 5) q.sl = static_cast<uint8_t>(*v);
    }
    return q;
}

bool LineReader::fill() {
    if (eof_) return false;
    // Keep the unread bytes, then take what the stream has ready (waiting only when it has
    // nothing). A stream buffer reports a failed read by throwing.
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    std::streamsize got = 0;
    try {
        std::streamsize ready = in_.in_avail();
        if (ready <= 0) {
            if (std::char_traits<char>::eq_int_type(in_.sgetc(), std::char_traits<char>::eof()))
                ready = 0;
            else
                ready = std::max<std::streamsize>(1, in_.in_avail());
        }
        const auto room = static_cast<std::streamsize>(buffer_.size() - end_);
        if (ready > 0) got = in_.sgetn(buffer_.data() + end_, std::min(ready, room));
    } catch (...) {
        failed_ = true;
        got = 0;
    }
    if (got <= 0) {
        eof_ = true;
        return false;
    }
    end_ += static_cast<size_t>(got);
    return true;
}

bool LineReader::lineReady() const {
    return std::memchr(buffer_.data() + begin_, '\n', end_ - begin_) != nullptr;
}

bool LineReader::next(std::string_view& line, bool& tooLong) {
    tooLong = false;
    long_.clear();
    bool any = false;
    while (true) {
        const char* start = buffer_.data() + begin_;
        const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
        size_t take = nl ? static_cast<size_t>(nl - start) : end_ - begin_;
        any = any || take > 0 || nl;
        if (!tooLong && long_.empty() && nl && take <= MaxLine) {
            line = std::string_view(start, take);  // the common case: no copy
            begin_ += take + 1;
            break;
        }
        // A line that spans refills: kept up to the bound, the rest dropped.
        if (!tooLong) {
            if (long_.size() + take <= MaxLine) {
                long_.append(start, take);
            } else {
                tooLong = true;
                long_.clear();
            }
        }
        begin_ += take + (nl ? 1 : 0);
        if (nl) {
            line = long_;
            break;
        }
        if (!fill()) {
            line = long_;
            if (!any) return false;
            break;
        }
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
}

bool answerBatch(const RequestAnswerer& answerer, const Fabric& fabric, std::streambuf& in,
                 std::ostream& out, bool& readFailed) {
    LineReader reader(in);
    std::string_view line;
    std::string text, error;
    bool tooLong = false, answeredAll = true;
    auto flush = [&] {
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.flush();
        text.clear();
    };
    while (true) {
        if (!reader.lineReady()) flush();  // what is answered is out before the reader waits
        if (!reader.next(line, tooLong)) break;
        std::optional<PathQuery> q;
        if (tooLong) {
            error = "the line is longer than " + std::to_string(LineReader::MaxLine) + " bytes";
        } else {
            q = parseBatchLine(fabric, line, error);
        }
        if (q) {
            answerer.write(text, answerer.answer(*q));
        } else {
            answeredAll = false;
            text += dumpJson(errorObject(error));
        }
        text += '\n';
        if (text.size() >= (1 << 16)) flush();
    }
    flush();
    readFailed = reader.failed();
    return answeredAll;
}

}  // namespace ibqos::cli

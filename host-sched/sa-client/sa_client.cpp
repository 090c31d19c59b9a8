// SPDX-License-Identifier: MIT
// SaClient: retries with exponential backoff, fresh transaction ids, strict answer checks.
#include "host-sched/sa-client/sa_client.hpp"

#include <algorithm>
#include <random>

namespace ibqos::host {

namespace {

std::string formatTimeouts(const std::vector<std::chrono::milliseconds>& timeouts) {
    std::string out;
    for (auto t : timeouts) out += (out.empty() ? "" : ", ") + std::to_string(t.count()) + " ms";
    return out;
}

}  // namespace

SaClient::SaClient(SaTransport& transport, RetryPolicy policy, uint64_t firstTransactionId)
    : transport_(transport), policy_(policy), nextTransactionId_(firstTransactionId) {}

uint64_t randomTransactionIdSeed() {
    std::random_device device;
    // The low 16 bits count this process's queries; the kernel owns the high 32.
    return uint64_t{device()} & 0xffff0000u;
}

PathResult SaClient::query(SaQuery query) {
    const LocalPort& port = transport_.localPort();
    // Sent by GID or by LID, the answer must come back with both of the port's own. A SLID
    // the query names (the base LID with path bits) is kept when it is one of the port's LIDs.
    query.sgid = port.gid;
    const uint32_t lids = 1u << port.lmc;
    if (query.slid < port.lid || query.slid >= port.lid + lids) query.slid = port.lid;
    PathResult result;
    if (port.smLid == 0) {
        result.message = "port " + port.caName + "/" + std::to_string(port.port) +
                         " knows no subnet manager (SM LID 0): is an SM running?";
        return result;
    }

    // Each attempt gets a new transaction id; a late answer to an earlier attempt of this
    // query is as good as an answer to the last one, so every id sent stays acceptable.
    std::vector<uint64_t> sent;
    std::string lastProblem;
    for (unsigned attempt = 0; attempt <= policy_.retries; ++attempt) {
        std::chrono::milliseconds timeout = std::min(
            policy_.firstTimeout * (int64_t{1} << std::min(attempt, 20u)), policy_.maxTimeout);
        uint64_t tid = nextTransactionId_++;
        sent.push_back(tid);
        result.attempts = attempt + 1;
        result.timeouts.push_back(timeout);
        if (std::string error = transport_.send(encodeSaQuery(query, tid), timeout);
            !error.empty()) {
            result.message = "cannot send to the SA: " + error;
            return result;
        }
        // Wait for this attempt's answer until its deadline. A busy SA is asked again only
        // after the deadline: the attempt's timeout is the backoff.
        auto deadline = std::chrono::steady_clock::now() + timeout;
        lastProblem = "no answer";
        for (bool waiting = true; waiting;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            Received in = transport_.receive(std::max(left, std::chrono::milliseconds(0)));
            switch (in.status) {
                case ReceiveStatus::Timeout:
                    waiting = false;
                    break;
                case ReceiveStatus::SendTimedOut:
                    // The MAD layer gave up on a request (a kernel after the timeout; a
                    // simulator at once when nobody listens). The attempt still lasts its
                    // whole timeout, so that retries keep their backoff.
                    if (static_cast<uint32_t>(in.transactionId) == static_cast<uint32_t>(tid)) {
                        lastProblem = "no answer (" + in.message + ")";
                    }
                    break;
                case ReceiveStatus::Error:
                    result.message = "cannot receive from the SA: " + in.message;
                    return result;
                case ReceiveStatus::Mad: {
                    DecodedAnswer answer = decodePathAnswer(in.mad, query, sent);
                    switch (answer.kind) {
                        case AnswerKind::NotOurs:
                            break;  // a stale answer to an earlier query: keep waiting
                        case AnswerKind::Busy:
                            lastProblem = "the SA was busy";
                            break;
                        case AnswerKind::Path:
                            result.status = PathStatus::Found;
                            result.record = answer.record;
                            return result;
                        case AnswerKind::NoPath:
                            result.status = PathStatus::NoPath;
                            result.message = answer.error.message;
                            return result;
                        case AnswerKind::Invalid:
                            result.message =
                                "the SA's answer is unusable: " + answer.error.toString();
                            return result;
                    }
                    break;
                }
            }
        }
    }
    result.message = lastProblem + " from the SA at LID " + std::to_string(port.smLid) + " after " +
                     std::to_string(result.attempts) + " attempts (timeouts " +
                     formatTimeouts(result.timeouts) + ")";
    return result;
}

}  // namespace ibqos::host

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

PathResult SaClient::query(SaQuery query) { return std::move(queryMany({&query, 1}).front()); }

std::vector<PathResult> SaClient::queryMany(std::span<const SaQuery> queries) {
    const LocalPort& port = transport_.localPort();
    struct Pending {
        SaQuery query;
        PathResult result;
        // Each attempt gets a new transaction id; a late answer to an earlier attempt of a
        // query is as good as an answer to the last one, so every id sent stays acceptable.
        std::vector<uint64_t> sent;
        std::string lastProblem = "no answer";
        bool done = false;
    };
    std::vector<Pending> pending(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
        // Sent by GID or by LID, the answer must come back with both of the port's own. A SLID
        // the query names (the base LID with path bits) is kept when it is one of the port's
        // LIDs.
        Pending& p = pending[i];
        p.query = queries[i];
        p.query.sgid = port.gid;
        const uint32_t lids = 1u << port.lmc;
        if (p.query.slid < port.lid || p.query.slid >= port.lid + lids) p.query.slid = port.lid;
        if (port.smLid == 0) {
            p.result.message = "port " + port.caName + "/" + std::to_string(port.port) +
                               " knows no subnet manager (SM LID 0): is an SM running?";
            p.done = true;
        }
    }
    auto open = [&pending] {
        return std::count_if(pending.begin(), pending.end(),
                             [](const Pending& p) { return !p.done; });
    };

    for (unsigned attempt = 0; attempt <= policy_.retries && open() > 0; ++attempt) {
        std::chrono::milliseconds timeout = std::min(
            policy_.firstTimeout * (int64_t{1} << std::min(attempt, 20u)), policy_.maxTimeout);
        for (Pending& p : pending) {
            if (p.done) continue;
            uint64_t tid = nextTransactionId_++;
            p.sent.push_back(tid);
            p.result.attempts = attempt + 1;
            p.result.timeouts.push_back(timeout);
            if (std::string error = transport_.send(encodeSaQuery(p.query, tid), timeout);
                !error.empty()) {
                p.result.message = "cannot send to the SA: " + error;
                p.done = true;
            }
        }
        // Wait for this attempt's answers until its deadline. A busy SA is asked again only
        // after the deadline: the attempt's timeout is the backoff.
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (open() > 0) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            Received in = transport_.receive(std::max(left, std::chrono::milliseconds(0)));
            if (in.status == ReceiveStatus::Timeout) break;
            if (in.status == ReceiveStatus::Error) {
                for (Pending& p : pending) {
                    if (p.done) continue;
                    p.result.message = "cannot receive from the SA: " + in.message;
                    p.done = true;
                }
                break;
            }
            for (Pending& p : pending) {
                if (p.done) continue;
                if (in.status == ReceiveStatus::SendTimedOut) {
                    // The MAD layer gave up on a request (a kernel after the timeout; a
                    // simulator at once when nobody listens). The attempt still lasts its
                    // whole timeout, so that retries keep their backoff.
                    if (static_cast<uint32_t>(in.transactionId) ==
                        static_cast<uint32_t>(p.sent.back())) {
                        p.lastProblem = "no answer (" + in.message + ")";
                        break;
                    }
                    continue;
                }
                DecodedAnswer answer = decodePathAnswer(in.mad, p.query, p.sent);
                if (answer.kind == AnswerKind::NotOurs) continue;  // another query's, or stale
                switch (answer.kind) {
                    case AnswerKind::Busy:
                        p.lastProblem = "the SA was busy";
                        break;
                    case AnswerKind::Path:
                        p.result.status = PathStatus::Found;
                        p.result.record = answer.record;
                        p.done = true;
                        break;
                    case AnswerKind::NoPath:
                        p.result.status = PathStatus::NoPath;
                        p.result.message = answer.error.message;
                        p.done = true;
                        break;
                    case AnswerKind::Invalid:
                        p.result.message =
                            "the SA's answer is unusable: " + answer.error.toString();
                        p.done = true;
                        break;
                    case AnswerKind::NotOurs:
                        break;
                }
                break;
            }
        }
    }
    std::vector<PathResult> results;
    for (Pending& p : pending) {
        if (!p.done) {
            p.result.message = p.lastProblem + " from the SA at LID " + std::to_string(port.smLid) +
                               " after " + std::to_string(p.result.attempts) +
                               " attempts (timeouts " + formatTimeouts(p.result.timeouts) + ")";
        }
        results.push_back(std::move(p.result));
    }
    return results;
}

}  // namespace ibqos::host

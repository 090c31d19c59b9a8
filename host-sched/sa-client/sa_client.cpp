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

// One query on its way: its attempts and, once done, its result.
struct PendingQuery {
    SaQuery query;
    PathResult result;
    // Each attempt gets a new transaction id; a late answer to an earlier attempt of a
    // query is as good as an answer to the last one, so every id sent stays acceptable.
    std::vector<uint64_t> sent;
    std::string lastProblem = "no answer";
    bool done = false;
};

size_t openCount(const std::vector<PendingQuery>& pending) {
    return std::count_if(pending.begin(), pending.end(),
                         [](const PendingQuery& p) { return !p.done; });
}

std::vector<PendingQuery> prepareQueries(std::span<const SaQuery> queries, const LocalPort& port) {
    std::vector<PendingQuery> pending(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
        // Sent by GID or by LID, the answer must come back with both of the port's own. A SLID
        // the query names (the base LID with path bits) is kept when it is one of the port's
        // LIDs.
        PendingQuery& p = pending[i];
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
    return pending;
}

// One attempt of every open query, each with a fresh transaction id.
void sendAttempt(SaTransport& transport, uint64_t& nextTransactionId,
                 std::vector<PendingQuery>& pending, unsigned attempt,
                 std::chrono::milliseconds timeout) {
    for (PendingQuery& p : pending) {
        if (p.done) continue;
        uint64_t tid = nextTransactionId++;
        p.sent.push_back(tid);
        p.result.attempts = attempt + 1;
        p.result.timeouts.push_back(timeout);
        if (std::string error = transport.send(encodeSaQuery(p.query, tid), timeout);
            !error.empty()) {
            p.result.message = "cannot send to the SA: " + error;
            p.done = true;
        }
    }
}

// What one received MAD says to the open query it answers, if any.
void takeAnswer(std::vector<PendingQuery>& pending, const Received& in) {
    for (PendingQuery& p : pending) {
        if (p.done) continue;
        if (in.status == ReceiveStatus::SendTimedOut) {
            // The MAD layer gave up on a request (a kernel after the timeout; a
            // simulator at once when nobody listens). The attempt still lasts its
            // whole timeout, so that retries keep their backoff.
            if (static_cast<uint32_t>(in.transactionId) == static_cast<uint32_t>(p.sent.back())) {
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
                p.result.message = "the SA's answer is unusable: " + answer.error.toString();
                p.done = true;
                break;
            case AnswerKind::NotOurs:
                break;
        }
        break;
    }
}

// The answers of one attempt, until its deadline or until no query is open.
void awaitAnswers(SaTransport& transport, std::vector<PendingQuery>& pending,
                  std::chrono::steady_clock::time_point deadline) {
    while (openCount(pending) > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        Received in = transport.receive(std::max(left, std::chrono::milliseconds(0)));
        if (in.status == ReceiveStatus::Timeout) break;
        if (in.status == ReceiveStatus::Error) {
            for (PendingQuery& p : pending) {
                if (p.done) continue;
                p.result.message = "cannot receive from the SA: " + in.message;
                p.done = true;
            }
            break;
        }
        takeAnswer(pending, in);
    }
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
    std::vector<PendingQuery> pending = prepareQueries(queries, port);
    for (unsigned attempt = 0; attempt <= policy_.retries && openCount(pending) > 0; ++attempt) {
        std::chrono::milliseconds timeout = std::min(
            policy_.firstTimeout * (int64_t{1} << std::min(attempt, 20u)), policy_.maxTimeout);
        sendAttempt(transport_, nextTransactionId_, pending, attempt, timeout);
        // Wait for this attempt's answers until its deadline. A busy SA is asked again only
        // after the deadline: the attempt's timeout is the backoff.
        awaitAnswers(transport_, pending, std::chrono::steady_clock::now() + timeout);
    }
    std::vector<PathResult> results;
    for (PendingQuery& p : pending) {
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

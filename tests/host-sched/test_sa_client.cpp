// SPDX-License-Identifier: MIT
// Unit tests of SaClient over a scripted transport: retries, backoff, ids, stale answers.
#include <catch2/catch.hpp>

#include <deque>
#include <functional>

#include "host-sched/sa-client/sa_client.hpp"
#include "tests/host-sched/sa_answers.hpp"

using namespace ibqos;
using namespace ibqos::host;
using namespace std::chrono_literals;

namespace {

// Plays a script: each receive() returns the next step, built from the transaction ids sent
// so far; an exhausted script times out.
class ScriptedTransport : public SaTransport {
  public:
    using Step = std::function<Received(const std::vector<uint64_t>& sent)>;

    ScriptedTransport() {
        port_.caName = "mlx5_0";
        port_.port = 1;
        port_.lid = 1;
        port_.smLid = 5;
        port_.gid = ib::Gid::fromParts(0xfe80000000000000ull, 0x100001);
    }
    const LocalPort& localPort() const override { return port_; }
    std::string send(std::span<const uint8_t> mad, std::chrono::milliseconds timeout) override {
        uint64_t tid = 0;
        for (int i = 8; i < 16; ++i) tid = tid << 8 | mad[static_cast<size_t>(i)];
        sent.push_back(tid);
        timeouts.push_back(timeout);
        return sendError;
    }
    Received receive(std::chrono::milliseconds) override {
        if (script.empty()) return {};
        Step step = script.front();
        script.pop_front();
        return step(sent);
    }

    LocalPort port_;
    std::deque<Step> script;
    std::vector<uint64_t> sent;
    std::vector<std::chrono::milliseconds> timeouts;
    std::string sendError;
};

ScriptedTransport::Step answer(std::vector<ib::PathRecord> records, size_t toAttempt = SIZE_MAX,
                               int status = 0) {
    return [=](const std::vector<uint64_t>& sent) {
        Received r;
        r.status = ReceiveStatus::Mad;
        uint64_t tid = toAttempt == SIZE_MAX ? sent.back() : sent.at(toAttempt);
        r.mad = test::answerTo(test::capturedQuery(), tid, records);
        r.mad[5] = static_cast<uint8_t>(status);
        return r;
    };
}

ScriptedTransport::Step timeout() {
    return [](const std::vector<uint64_t>&) { return Received{}; };
}

SaQuery query() {
    SaQuery q;
    q.dlid = 2;
    return q;
}

}  // namespace

TEST_CASE("a query fills in the local LID and returns the SA's path", "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.script.push_back(answer({test::goodRecord(6)}));
    SaClient client(t, RetryPolicy{}, 0x10000);
    PathResult r = client.query(query());
    REQUIRE(r.status == PathStatus::Found);
    CHECK(r.record.sl == 6);
    CHECK(r.attempts == 1);
    CHECK(t.sent == std::vector<uint64_t>{0x10000});
}

TEST_CASE("unanswered attempts are retried with new ids and doubling timeouts",
          "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.script = {timeout(), timeout(), answer({test::goodRecord()})};
    SaClient client(t, RetryPolicy{100ms, 1000ms, 3}, 7);
    PathResult r = client.query(query());
    REQUIRE(r.status == PathStatus::Found);
    CHECK(r.attempts == 3);
    CHECK(t.sent == std::vector<uint64_t>{7, 8, 9});
    CHECK(t.timeouts == std::vector<std::chrono::milliseconds>{100ms, 200ms, 400ms});
}

TEST_CASE("the backoff stops growing at the largest timeout", "[host-sched][sa-client]") {
    ScriptedTransport t;
    SaClient client(t, RetryPolicy{300ms, 1000ms, 4}, 1);
    PathResult r = client.query(query());
    CHECK(r.status == PathStatus::Failed);
    CHECK(r.attempts == 5);
    CHECK(t.timeouts ==
          std::vector<std::chrono::milliseconds>{300ms, 600ms, 1000ms, 1000ms, 1000ms});
    CHECK(r.message.find("after 5 attempts") != std::string::npos);
    CHECK(r.message.find("SA at LID 5") != std::string::npos);
}

TEST_CASE("a stale answer to another query is skipped, a late one to this query is taken",
          "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.script = {[](const std::vector<uint64_t>&) {
                    Received r;
                    r.status = ReceiveStatus::Mad;
                    r.mad = test::answerTo(test::capturedQuery(), 0xdead, {test::goodRecord(9)});
                    return r;
                },
                timeout(), answer({test::goodRecord(4)}, 0)};
    SaClient client(t, RetryPolicy{10ms, 100ms, 2}, 100);
    PathResult r = client.query(query());
    REQUIRE(r.status == PathStatus::Found);
    CHECK(r.record.sl == 4);  // the first attempt's answer, arriving during the second
    CHECK(r.attempts == 2);
}

TEST_CASE("a busy SA is asked again after the attempt's timeout", "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.script = {answer({test::goodRecord()}, SIZE_MAX, 0x01), timeout(),
                answer({test::goodRecord(2)})};
    SaClient client(t, RetryPolicy{10ms, 100ms, 2}, 1);
    PathResult r = client.query(query());
    REQUIRE(r.status == PathStatus::Found);
    CHECK(r.attempts == 2);
    CHECK(r.record.sl == 2);

    ScriptedTransport busy;
    busy.script = {answer({}, SIZE_MAX, 0x01), timeout(), answer({}, SIZE_MAX, 0x01), timeout()};
    PathResult failed = SaClient(busy, RetryPolicy{10ms, 100ms, 1}, 1).query(query());
    CHECK(failed.status == PathStatus::Failed);
    CHECK(failed.message.find("busy") != std::string::npos);
}

TEST_CASE("a MAD layer that gives up keeps the attempt's backoff and says so",
          "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.script = {[](const std::vector<uint64_t>& sent) {
                    Received r;
                    r.status = ReceiveStatus::SendTimedOut;
                    r.transactionId = sent.back();
                    r.message = "the MAD layer reports Connection timed out";
                    return r;
                },
                timeout(), answer({test::goodRecord()})};
    PathResult r = SaClient(t, RetryPolicy{10ms, 100ms, 1}, 1).query(query());
    CHECK(r.status == PathStatus::Found);
    CHECK(r.attempts == 2);
}

TEST_CASE("no path, a broken answer and a transport error end the query at once",
          "[host-sched][sa-client]") {
    ScriptedTransport none;
    none.script = {answer({})};
    PathResult r = SaClient(none, RetryPolicy{}, 1).query(query());
    CHECK(r.status == PathStatus::NoPath);
    CHECK(r.attempts == 1);

    ScriptedTransport broken;
    ib::PathRecord wrong = test::goodRecord();
    wrong.dlid = 77;
    broken.script = {answer({wrong})};
    r = SaClient(broken, RetryPolicy{}, 1).query(query());
    CHECK(r.status == PathStatus::Failed);
    CHECK(r.attempts == 1);
    CHECK(r.message.find("byte 96 (dlid)") != std::string::npos);

    ScriptedTransport down;
    down.script = {[](const std::vector<uint64_t>&) {
        Received e;
        e.status = ReceiveStatus::Error;
        e.message = "Bad file descriptor";
        return e;
    }};
    r = SaClient(down, RetryPolicy{}, 1).query(query());
    CHECK(r.status == PathStatus::Failed);
    CHECK(r.message.find("Bad file descriptor") != std::string::npos);

    ScriptedTransport cannotSend;
    cannotSend.sendError = "No such device";
    r = SaClient(cannotSend, RetryPolicy{}, 1).query(query());
    CHECK(r.status == PathStatus::Failed);
    CHECK(r.message.find("No such device") != std::string::npos);
}

TEST_CASE("a port that knows no SM fails without sending", "[host-sched][sa-client]") {
    ScriptedTransport t;
    t.port_.smLid = 0;
    PathResult r = SaClient(t, RetryPolicy{}, 1).query(query());
    CHECK(r.status == PathStatus::Failed);
    CHECK(t.sent.empty());
    CHECK(r.message.find("SM LID 0") != std::string::npos);
}

TEST_CASE("a GID query leaves from the port's own GID", "[host-sched][sa-client]") {
    ScriptedTransport t;
    SaQuery q;
    q.byGid = true;
    q.dgid = test::goodRecord().dgid;
    t.script = {[&](const std::vector<uint64_t>& sent) {
        SaQuery asked = q;
        asked.sgid = t.port_.gid;
        Received r;
        r.status = ReceiveStatus::Mad;
        r.mad = test::answerTo(asked, sent.back(), {test::goodRecord(1)});
        return r;
    }};
    PathResult r = SaClient(t, RetryPolicy{}, 1).query(q);
    REQUIRE(r.status == PathStatus::Found);
    CHECK(r.record.sgid == t.port_.gid);
}

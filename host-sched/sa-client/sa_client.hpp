// SPDX-License-Identifier: MIT
// SaClient: one ib::PathRecord at a time from the Subnet Administrator, with retries and checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "host-sched/sa-client/sa_wire.hpp"

namespace ibqos::host {

// The local port a query leaves from, and where its SA is.
struct LocalPort {
    std::string caName;
    int port = 0;
    uint16_t lid = 0;
    uint8_t lmc = 0;
    uint16_t smLid = 0;
    uint8_t smSl = 0;
    ib::Gid gid;  // the port's GID 0: subnet prefix and port GUID
};

// How a MAD reached us, or did not.
enum class ReceiveStatus : uint8_t {
    Mad,           // a MAD arrived
    Timeout,       // nothing within the time given
    SendTimedOut,  // the MAD layer gave up on the request with this transaction id
    Error,         // the transport failed; see the message
};

struct Received {
    ReceiveStatus status = ReceiveStatus::Timeout;
    std::vector<uint8_t> mad;    // status Mad
    uint64_t transactionId = 0;  // status SendTimedOut
    std::string message;         // status Error
};

// The datagram service under the client: libibumad in production, a script in tests.
class SaTransport {
  public:
    virtual ~SaTransport() = default;
    virtual const LocalPort& localPort() const = 0;
    // Sends one request MAD to the SA; `timeout` is how long the MAD layer waits for its
    // answer. Returns an empty string on success, else the reason.
    virtual std::string send(std::span<const uint8_t> mad, std::chrono::milliseconds timeout) = 0;
    // Waits up to `timeout` for the next MAD addressed to this client.
    virtual Received receive(std::chrono::milliseconds timeout) = 0;
};

// Attempts and their timeouts: attempt k waits min(firstTimeout * 2^k, maxTimeout).
struct RetryPolicy {
    std::chrono::milliseconds firstTimeout{1000};
    std::chrono::milliseconds maxTimeout{16000};
    unsigned retries = 3;  // attempts = retries + 1
};

enum class PathStatus : uint8_t {
    Found,   // record holds the checked path
    NoPath,  // the SA answered that there is no such path
    Failed,  // no usable answer: timeouts, transport errors, SA errors, broken answers
};

struct PathResult {
    PathStatus status = PathStatus::Failed;
    ib::PathRecord record;
    std::string message;  // why NoPath or Failed
    unsigned attempts = 0;
    std::vector<std::chrono::milliseconds> timeouts;  // the timeout of each attempt made
};

// Queries the SA through a transport it borrows. Not thread-safe: one query at a time.
class SaClient {
  public:
    SaClient(SaTransport& transport, RetryPolicy policy, uint64_t firstTransactionId);

    // Fills the source (LID or GID) from the local port and asks for one path. A query's SLID
    // that is one of the port's LIDs (LMC) is kept; any other becomes the port's base LID.
    PathResult query(SaQuery query);
    // The same for several paths at once: every query is in flight together, each with its own
    // transaction ids, retries and result (in the order of the queries).
    std::vector<PathResult> queryMany(std::span<const SaQuery> queries);

  private:
    SaTransport& transport_;
    RetryPolicy policy_;
    uint64_t nextTransactionId_;
};

// A transaction id seed that differs between processes and runs.
uint64_t randomTransactionIdSeed();

}  // namespace ibqos::host

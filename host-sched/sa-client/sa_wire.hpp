// SPDX-License-Identifier: MIT
// The host's PathRecord queries on the wire: requests encoded and answers checked, as pure
// functions over the InfiniBand vocabulary (ib/).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ib/mad.hpp"
#include "ib/path_record.hpp"

namespace ibqos::host {

enum class SaMethod : uint8_t { Get = ib::MethodGet, GetTable = ib::MethodGetTable };

// One PathRecord request this host sends: which path, and the QoS fields the SA must honour.
struct SaQuery : ib::QosFields {
    SaMethod method = SaMethod::GetTable;
    bool byGid = false;  // false: SLID/DLID; true: SGID/DGID
    uint16_t slid = 0;   // by GID: not checked (with LMC any of the port's LIDs may come back)
    uint16_t dlid = 0;
    ib::Gid sgid;  // by LID: checked in the answer when not zero
    ib::Gid dgid;
    bool reversible = true;  // ask for a path that also works back (RC needs it)
};

// The component mask a query sends.
uint64_t componentMask(const SaQuery& query);

// The 256-byte request MAD for a query with the given transaction id.
std::array<uint8_t, ib::MadSize> encodeSaQuery(const SaQuery& query, uint64_t transactionId);

// What an answer MAD turned out to be.
enum class AnswerKind : uint8_t {
    Path,     // a checked PathRecord
    NoPath,   // the SA answered: no such path (empty table or ERR_NO_RECORDS)
    Busy,     // MAD status "busy": ask again later
    NotOurs,  // another transaction or another attribute: not an answer to this query
    Invalid,  // an answer to this query that breaks the protocol; error says where
};

// A problem in an answer, located at a byte offset of the MAD.
struct WireError {
    size_t offset = 0;
    std::string field;
    std::string message;
    std::string toString() const;
};

struct DecodedAnswer {
    AnswerKind kind = AnswerKind::Invalid;
    ib::PathRecord record;   // kind == Path
    size_t recordCount = 0;  // records in the answer (the first one is used)
    uint16_t status = 0;     // the MAD status field
    uint64_t transactionId = 0;
    WireError error;  // kind == Invalid, or the SA's status for NoPath
};

// Checks an answer MAD against the query it should answer. transactionIds are the ids this
// query was sent with (retries use new ones); only their low 32 bits are compared, because
// the kernel's MAD layer replaces the high 32 bits with its agent id.
DecodedAnswer decodePathAnswer(std::span<const uint8_t> mad, const SaQuery& query,
                               std::span<const uint64_t> transactionIds);

}  // namespace ibqos::host

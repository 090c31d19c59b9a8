// SPDX-License-Identifier: MIT
// Classifier: a bound policy compiled for PathRecord matching. One match is a few table lookups
// and ANDs of 64-rule words, over only the words that can hold a candidate rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/bind.hpp"
#include "sa-matcher/path_request.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos {

// Answers exactly what referenceMatch() answers (the first rule in OpenSM's order whose every
// named condition the request meets, else the default level), from precomputed sets of rules:
// per port (what it satisfies as a source and as a destination) and per field, block by block of
// rules, what each value between the block's own range boundaries satisfies; memory grows with
// the rules and their ranges, not with how the ranges overlap. It copies what it needs: the bound
// policy need not outlive it. Thread-safe for concurrent match() calls.
class Classifier {
  public:
    explicit Classifier(const BoundPolicy& bound);

    // The level for a request. Its ends must be ports of the fabric the policy was bound to,
    // and its QoS class below 4096 (the field has 12 bits).
    QosMatch match(const PathQuery& query) const;

    // Bytes held by the compiled tables.
    size_t memoryBytes() const;
    // How many distinct port memberships the fabric has (ports with the same groups share
    // their rule sets).
    size_t membershipClasses() const { return classSets_.size(); }

  private:
    // A set of rules is stored in pool_ as a two-level bitset at some offset: S pairs of a
    // summary word (bit b: rules 64b..64b+63 hold a member) and the count of summary bits set
    // in the pairs before, then the nonzero 64-rule words in order. A small set is one cache
    // line: its summary, count and words side by side.
    using SetRef = uint32_t;

    struct ClassSets {
        SetRef sourceOnly;       // rules with sources only, whose sources hold the port
        SetRef destinationOnly;  // rules with destinations only, whose destinations hold it
        SetRef sourceBoth;       // rules with both, whose sources hold it
        SetRef destinationBoth;  // rules with both, whose destinations hold it
    };

    // One field's value intervals, block by block (a block: the 64 rules of a word, or the 64
    // words of a summary word): block b's intervals start at starts[begin[b]] (always 0) up to
    // starts[begin[b + 1] - 1], and bits[i] holds the members of the block (rules, or words)
    // that accept the values of interval i. A block has as many intervals as its own rules'
    // ranges make, so the index grows with the ranges, never with their overlaps.
    struct BlockIntervals {
        std::vector<uint32_t> begin;  // per block, then one past the last
        std::vector<uint64_t> starts;
        std::vector<uint64_t> bits;
    };

    struct FieldIndex {
        std::vector<uint64_t> unnamed;         // dense: the rules that do not name the field
        std::vector<uint64_t> unnamedSummary;  // its summary: the words that hold such a rule
        BlockIntervals words;      // per word: its rules naming the field that accept a value
        BlockIntervals summaries;  // per summary word: the words holding such a rule
    };

    // A rule's field conditions, for the common case of a candidate word with a bit or two:
    // testing those rules reads a few small arrays, where each field set would cost a cache
    // miss (there is one per value interval). A rule whose ranges do not fit is in wide_.
    static constexpr unsigned RecordServiceIds = 3;
    struct ValueRange16 {
        uint16_t lo, hi;
    };
    struct RuleFields {
        uint8_t named = 0;  // QosClassBit, ServiceIdBit, PkeyBit of the fields it names
        ValueRange16 qosClass{0, 0};
        ValueRange16 pkey{0, 0};
    };
    struct ServiceIdRanges {
        uint64_t range[RecordServiceIds][2];  // unused slots repeat the first range
    };

    uint32_t words_ = 0;         // 64-rule words
    uint32_t summaryWords_ = 0;  // words of a summary
    std::vector<uint64_t> pool_;
    SetRef neither_ = 0;             // rules with neither sources nor destinations
    bool anyNeither_ = false;        // whether that set has a member
    std::vector<uint32_t> classOf_;  // per Fabric::ports index
    std::vector<ClassSets> classSets_;
    FieldIndex qosClass_, serviceId_, pkey_;
    std::vector<RuleFields> ruleFields_;
    std::vector<ServiceIdRanges> serviceIdRanges_;
    std::vector<uint64_t> wide_;  // dense: rules whose ranges do not fit their RuleFields
    std::vector<uint32_t> ruleLevel_;
    uint32_t defaultLevel_ = 0;

    // match() is built twice, with the popcnt instruction for the CPUs that have it (x86-64
    // before v2 lacks it) and without; the constructor picks one.
    bool popcnt_ = false;
    inline QosMatch matchIn(const PathQuery& query) const;
    QosMatch matchPopcnt(const PathQuery& query) const;
    QosMatch matchPortable(const PathQuery& query) const;

    // The steps of match(), defined (inline) in classifier.cpp.
    // The members of block b that accept value (present: all ones when the request carries
    // the field, else 0, and then none do).
    inline uint64_t accepting(const BlockIntervals& index, uint32_t block, uint64_t value,
                              uint64_t present) const;
    inline uint64_t filter(uint64_t candidates, const FieldIndex& field, uint64_t value,
                           uint64_t present, uint32_t block) const;
    // The summary word sw of the rules a field condition lets through: those not naming the
    // field, and those accepting the request's value.
    inline uint64_t fieldSummary(const FieldIndex& field, uint64_t value, uint64_t present,
                                 uint32_t sw) const;
    struct RequestFields {
        uint8_t present;  // QosClassBit, ServiceIdBit, PkeyBit of the fields it carries
        uint16_t qosClass, pkey;
        uint64_t serviceId;
    };
    inline bool accepts(uint32_t rule, const RequestFields& request) const;

    class Builder;
};

}  // namespace ibqos

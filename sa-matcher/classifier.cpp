// SPDX-License-Identifier: MIT
// Classifier: building the rule sets, and the match loop.
//
// A request matches rule r when r's endpoint condition and each of its field conditions hold.
// The endpoint condition splits the rules four ways: sources only (the source must be in one
// of them), destinations only, both, neither. For a source port s and destination port d the
// rules whose endpoint condition holds are
//     sourceOnly(s) | destinationOnly(d) | (sourceBoth(s) & destinationBoth(d)) | neither,
// each a precomputed set. A field condition holds when the rule does not name the field, or
// names it and accepts the request's value: unnamed(field) | accepts(field, value). A request
// without the field gets only unnamed(field): a rule naming a field never matches a request that
// lacks it.
//
// Sets are two-level bitsets. The summaries of the four endpoint sets say which 64-rule words
// can hold a candidate at all. Those with a rule that names a field the request lacks are cut
// at once (each field keeps a summary of the rules that do not name it); where the words left
// are still many (large groups on many rules), the summaries of the field conditions for the
// request's values cut them down too.
// The words left are visited in rule order, and the first rule that passes its field
// conditions is the answer. A word with one or two candidates tests them
// against their own ranges (RuleFields: small arrays that stay in cache); a denser word is ANDed
// with the word's accepting rules for each field. With group-based policies only a handful of
// words are visited, and a request that carries no value some rules need, or a value no rule of
// a word accepts, skips those words without reading them; in any case no more than rules / 64,
// and a few ANDs each.
//
// What a field's value accepts is kept block by block (BlockIntervals): for each word, the
// intervals between the boundaries of its own 64 rules' ranges, each with the word of rules
// accepting it; for each summary word, the same over its 4096 rules with a bit per word. A
// range is a boundary in one word's index and in one summary word's, so the index holds at most
// two intervals per range and block, however the ranges overlap. (Sets over all the rules, one
// per interval between every rule's boundaries, took memory quadratic in the rules on nested
// ranges: `ibqos query` peaked at 639 MB with 64,000 nested ServiceID ranges.) A lookup is a binary
// search among one block's own boundaries, a few cache lines at most.
//
// Every lookup in the loop is branchless where its outcome is as random as the requests: on the
// machines measured, mispredicted branches cost more than the work they would skip.
#include "sa-matcher/classifier.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <stdexcept>

#include "ib/qos.hpp"

namespace ibqos {

namespace {

constexpr uint64_t QosClassValues = ib::MaxQosClass + 1;
constexpr uint64_t PkeyValues = ib::PkeyBaseMask + 1;  // once the membership bit is masked off
constexpr unsigned SparseCandidates = 2;  // at most this many: test the rules' own records
constexpr unsigned ManyWords = 32;  // more candidate words than this in 4096 rules: cut by fields

// The fields of RuleFields::named and RequestFields::present.
constexpr uint8_t QosClassBit = 1, ServiceIdBit = 2, PkeyBit = 4;

void setBit(std::vector<uint64_t>& dense, uint32_t index) {
    dense[index >> 6] |= uint64_t{1} << (index & 63);
}

}  // namespace

class Classifier::Builder {
  public:
    Builder(Classifier& c, const BoundPolicy& bound)
        : c_(c), bound_(bound), policy_(*bound.policy) {}

    void build() {
        const size_t rules = policy_.rules.size();
        c_.words_ = static_cast<uint32_t>((rules + 63) / 64);
        c_.summaryWords_ = (c_.words_ + 63) / 64;
        dense_.assign(c_.words_, 0);
        for (uint32_t r = 0; r < rules; ++r) {
            const MatchRule& rule = policy_.rules[r];
            c_.ruleLevel_.push_back(rule.level);
            if (rule.sources.empty() && rule.destinations.empty()) {
                setBit(dense_, r);
                c_.anyNeither_ = true;
            }
        }
        c_.neither_ = store(dense_);
        c_.defaultLevel_ = policy_.defaultLevel;
        buildRecords();
        buildClasses();
        buildField(c_.qosClass_, QosClassValues - 1,
                   [](const MatchRule& r) -> const RangeSet& { return r.qosClasses; });
        buildField(c_.serviceId_, UINT64_MAX,
                   [](const MatchRule& r) -> const RangeSet& { return r.serviceIds; });
        buildField(c_.pkey_, PkeyValues - 1,
                   [](const MatchRule& r) -> const RangeSet& { return r.pkeys; });
        c_.pool_.push_back(0);  // the spare word word() may read past the last set
        c_.pool_.shrink_to_fit();
    }

  private:
    Classifier& c_;
    const BoundPolicy& bound_;
    const Policy& policy_;
    std::vector<uint64_t> dense_;  // scratch: one bit per rule

    // Appends a set given as a dense bitset.
    SetRef store(const std::vector<uint64_t>& dense) {
        const uint32_t s = c_.summaryWords_;
        SetRef ref = static_cast<SetRef>(c_.pool_.size());
        c_.pool_.resize(c_.pool_.size() + 2 * s, 0);
        uint64_t count = 0;
        for (uint32_t w = 0; w < dense.size(); ++w) {
            if (w % 64 == 0) c_.pool_[ref + 2 * (w / 64) + 1] = count;
            if (!dense[w]) continue;
            c_.pool_[ref + 2 * (w / 64)] |= uint64_t{1} << (w % 64);
            c_.pool_.push_back(dense[w]);
            ++count;
        }
        return ref;
    }

    void buildRecords() {
        const size_t rules = policy_.rules.size();
        c_.ruleFields_.assign(rules, {});
        c_.serviceIdRanges_.assign(rules, {});
        c_.wide_.assign(c_.words_, 0);
        for (uint32_t r = 0; r < rules; ++r) {
            const MatchRule& rule = policy_.rules[r];
            RuleFields& fields = c_.ruleFields_[r];
            uint8_t& named = fields.named;
            bool fits = true;
            auto narrow = [&fits](const RangeSet& set, uint64_t max) {
                // One range within the field's width; a range reaching past it is cut there,
                // as no request value lies beyond.
                fits = fits && set.ranges().size() == 1;
                Range x = set.ranges()[0];
                if (x.lo > max) return ValueRange16{1, 0};  // accepts nothing
                return ValueRange16{static_cast<uint16_t>(x.lo),
                                    static_cast<uint16_t>(std::min(x.hi, max))};
            };
            if (!rule.qosClasses.empty()) {
                named |= QosClassBit;
                fields.qosClass = narrow(rule.qosClasses, QosClassValues - 1);
            }
            if (!rule.pkeys.empty()) {
                named |= PkeyBit;
                fields.pkey = narrow(rule.pkeys, PkeyValues - 1);
            }
            if (!rule.serviceIds.empty()) {
                named |= ServiceIdBit;
                const auto& ranges = rule.serviceIds.ranges();
                fits = fits && ranges.size() <= RecordServiceIds;
                for (unsigned i = 0; i < RecordServiceIds; ++i) {
                    // Unused slots repeat the first range.
                    const Range& x = ranges[i < ranges.size() ? i : 0];
                    c_.serviceIdRanges_[r].range[i][0] = x.lo;
                    c_.serviceIdRanges_[r].range[i][1] = x.hi;
                }
            }
            if (!fits) setBit(c_.wide_, r);
        }
    }

    // Ports with the same node type and the same explicit group memberships satisfy the same
    // endpoint conditions: they form one class and share its four sets.
    void buildClasses() {
        const Fabric& fabric = *bound_.fabric;
        const size_t groups = policy_.groups.size();
        std::vector<std::vector<uint32_t>> explicitGroups(fabric.ports.size());
        std::vector<std::vector<uint32_t>> typeGroups(4);
        for (uint32_t g = 0; g < groups; ++g) {
            const GroupMembers& m = bound_.groups[g];
            for (uint32_t port : m.ports) explicitGroups[port].push_back(g);
            for (NodeType t : {NodeType::Ca, NodeType::Switch, NodeType::Router}) {
                if (m.nodeTypes & nodeTypeBit(t)) typeGroups[static_cast<size_t>(t)].push_back(g);
            }
        }
        std::vector<std::vector<uint32_t>> sourceRules(groups), destinationRules(groups);
        for (uint32_t r = 0; r < policy_.rules.size(); ++r) {
            const MatchRule& rule = policy_.rules[r];
            for (uint32_t g : rule.sources) sourceRules[g].push_back(r);
            for (uint32_t g : rule.destinations) destinationRules[g].push_back(r);
        }

        std::map<std::vector<uint32_t>, uint32_t> classes;  // {node type, explicit groups...}
        c_.classOf_.resize(fabric.ports.size());
        std::vector<uint32_t> key;
        for (uint32_t port = 0; port < fabric.ports.size(); ++port) {
            key.assign(1, static_cast<uint32_t>(fabric.typeOf(port)));
            key.insert(key.end(), explicitGroups[port].begin(), explicitGroups[port].end());
            auto [it, fresh] = classes.emplace(key, static_cast<uint32_t>(classes.size()));
            c_.classOf_[port] = it->second;
            if (!fresh) continue;
            std::vector<uint32_t> held = typeGroups[key[0]];
            held.insert(held.end(), key.begin() + 1, key.end());
            // A port's sets as a source side by side, and as a destination: a match reads a
            // few adjacent cache lines of each. (Not interned: sharing would scatter them.)
            ClassSets sets;
            sets.sourceOnly = ruleSet(held, sourceRules,
                                      [](const MatchRule& r) { return r.destinations.empty(); });
            sets.sourceBoth = ruleSet(held, sourceRules,
                                      [](const MatchRule& r) { return !r.destinations.empty(); });
            sets.destinationOnly = ruleSet(held, destinationRules,
                                           [](const MatchRule& r) { return r.sources.empty(); });
            sets.destinationBoth = ruleSet(held, destinationRules,
                                           [](const MatchRule& r) { return !r.sources.empty(); });
            c_.classSets_.push_back(sets);
        }
    }

    // The rules of one kind that a group among `held` satisfies.
    template <typename Kind>
    SetRef ruleSet(const std::vector<uint32_t>& held,
                   const std::vector<std::vector<uint32_t>>& rulesOf, Kind kind) {
        std::fill(dense_.begin(), dense_.end(), 0);
        for (uint32_t g : held) {
            for (uint32_t r : rulesOf[g]) {
                if (kind(policy_.rules[r])) setBit(dense_, r);
            }
        }
        return store(dense_);
    }

    // A boundary of a range in a block: from `at` on, `member` (a rule of the word, or a word
    // of the summary word) has one more range (+1) or one fewer (-1) accepting the value.
    struct Edge {
        uint64_t at;
        uint32_t member;
        int32_t delta;
    };

    // Each word's intervals from its own rules' ranges within [0, maxValue], and each summary
    // word's from the ranges of its words' rules.
    template <typename Ranges>
    void buildField(FieldIndex& field, uint64_t maxValue, Ranges ranges) {
        const uint32_t rules = static_cast<uint32_t>(policy_.rules.size());
        field.unnamed.assign(c_.words_, 0);
        field.unnamedSummary.assign(c_.summaryWords_, 0);
        std::vector<Edge> wordEdges, summaryEdges;
        for (uint32_t sw = 0; sw < c_.summaryWords_; ++sw) {
            summaryEdges.clear();
            for (uint32_t w = sw * 64; w < std::min(c_.words_, sw * 64 + 64); ++w) {
                wordEdges.clear();
                for (uint32_t r = w * 64; r < std::min(rules, w * 64 + 64); ++r) {
                    const RangeSet& set = ranges(policy_.rules[r]);
                    if (set.empty()) {
                        setBit(field.unnamed, r);
                        setBit(field.unnamedSummary, w);
                        continue;
                    }
                    // A RangeSet's ranges are disjoint and not adjacent: a rule's bit is set
                    // and cleared once per range.
                    for (const Range& range : set.ranges()) {
                        if (range.lo > maxValue) break;
                        wordEdges.push_back({range.lo, r % 64, 1});
                        summaryEdges.push_back({range.lo, w % 64, 1});
                        if (range.hi >= maxValue) continue;
                        wordEdges.push_back({range.hi + 1, r % 64, -1});
                        summaryEdges.push_back({range.hi + 1, w % 64, -1});
                    }
                }
                appendIntervals(field.words, wordEdges);
            }
            appendIntervals(field.summaries, summaryEdges);
        }
        field.words.begin.push_back(static_cast<uint32_t>(field.words.starts.size()));
        field.summaries.begin.push_back(static_cast<uint32_t>(field.summaries.starts.size()));
        for (BlockIntervals* index : {&field.words, &field.summaries}) {
            index->begin.shrink_to_fit();
            index->starts.shrink_to_fit();
            index->bits.shrink_to_fit();
        }
    }

    // A block's intervals: a sweep over its edges in value order, keeping how many ranges of
    // each member accept the current interval; an interval is stored when its members differ
    // from the one before. The first interval starts at 0.
    static void appendIntervals(BlockIntervals& index, std::vector<Edge>& edges) {
        std::sort(edges.begin(), edges.end(),
                  [](const Edge& a, const Edge& b) { return a.at < b.at; });
        const size_t first = index.starts.size();
        if (first > UINT32_MAX - 2 * edges.size() - 1)
            throw std::length_error("a classifier's field index past 2^32 intervals");
        index.begin.push_back(static_cast<uint32_t>(first));
        std::array<int32_t, 64> count{};
        uint64_t members = 0, at = 0;
        for (size_t i = 0;;) {
            for (; i < edges.size() && edges[i].at == at; ++i) {
                const uint32_t m = edges[i].member;
                count[m] += edges[i].delta;
                const uint64_t bit = uint64_t{1} << m;
                members = count[m] > 0 ? members | bit : members & ~bit;
            }
            if (index.starts.size() == first || index.bits.back() != members) {
                index.starts.push_back(at);
                index.bits.push_back(members);
            }
            if (i == edges.size()) break;
            at = edges[i].at;
        }
    }
};

Classifier::Classifier(const BoundPolicy& bound) {
    Builder(*this, bound).build();
#if defined(__x86_64__)
    popcnt_ = __builtin_cpu_supports("popcnt");
#endif
}

// The index of the last element <= value in a sorted array whose first element is <= value:
// a binary search without branches to mispredict.
[[gnu::always_inline]] inline size_t lastNotAbove(const uint64_t* first, size_t size,
                                                  uint64_t value) {
    const uint64_t* base = first;
    while (size > 1) {
        size_t half = size / 2;
        base = base[half] <= value ? base + half : base;
        size -= half;
    }
    return static_cast<size_t>(base - first);
}

// The lookups of match(), forced inline so that its popcnt build uses the instruction, and
// without branches: which words are present is as random as the requests, and mispredicted
// branches would cost more than the few instructions done for nothing.
[[gnu::always_inline]] inline uint64_t Classifier::accepting(const BlockIntervals& index,
                                                             uint32_t block, uint64_t value,
                                                             uint64_t present) const {
    // A block's first interval starts at 0, so the value is never below it.
    const uint32_t first = index.begin[block];
    const size_t size = index.begin[block + 1] - first;
    return index.bits[first + lastNotAbove(index.starts.data() + first, size, value)] & present;
}

[[gnu::always_inline]] inline uint64_t Classifier::fieldSummary(const FieldIndex& field,
                                                                uint64_t value, uint64_t present,
                                                                uint32_t sw) const {
    return field.unnamedSummary[sw] | accepting(field.summaries, sw, value, present);
}

[[gnu::always_inline]] inline uint64_t Classifier::filter(uint64_t candidates,
                                                          const FieldIndex& field, uint64_t value,
                                                          uint64_t present, uint32_t block) const {
    return candidates & (field.unnamed[block] | accepting(field.words, block, value, present));
}

// One set's summary pair for 64 words (4096 rules), its words read by bit within them.
struct SummaryView {
    const uint64_t* words;
    uint64_t summary;
    uint64_t before;  // words of the set before these 64

    [[gnu::always_inline]] SummaryView(const uint64_t* set, uint32_t summaryWords, uint32_t sw)
        : words(set + 2 * summaryWords), summary(set[2 * sw]), before(set[2 * sw + 1]) {}

    // As Classifier::word(), from the summary already read.
    [[gnu::always_inline]] uint64_t word(unsigned bit) const {
        uint64_t rank =
            before + static_cast<uint64_t>(std::popcount(summary & ((uint64_t{1} << bit) - 1)));
        return words[rank] & (0 - ((summary >> bit) & 1));
    }
};

// Branchless but for the ServiceID ranges, read only for a rule that needs them: the outcome
// of each test is as random as the requests.
[[gnu::always_inline]] inline bool Classifier::accepts(uint32_t rule,
                                                       const RequestFields& request) const {
    const RuleFields& f = ruleFields_[rule];
    uint8_t fail = static_cast<uint8_t>(f.named & ~request.present);  // a field the request lacks
    fail |= static_cast<uint8_t>(
        ((request.qosClass < f.qosClass.lo) | (request.qosClass > f.qosClass.hi)) *
        (f.named & QosClassBit));
    fail |= static_cast<uint8_t>(((request.pkey < f.pkey.lo) | (request.pkey > f.pkey.hi)) *
                                 (f.named & PkeyBit));
    if (fail || !(f.named & ServiceIdBit)) return fail == 0;
    const ServiceIdRanges& sid = serviceIdRanges_[rule];
    bool in = false;
    for (unsigned i = 0; i < RecordServiceIds; ++i) {
        in |= (request.serviceId >= sid.range[i][0]) & (request.serviceId <= sid.range[i][1]);
    }
    return in;
}

#if defined(__x86_64__)
[[gnu::target("popcnt")]]
#endif
QosMatch
Classifier::matchPopcnt(const PathQuery& query) const {
    return matchIn(query);
}

QosMatch Classifier::matchPortable(const PathQuery& query) const { return matchIn(query); }

QosMatch Classifier::match(const PathQuery& query) const {
    return popcnt_ ? matchPopcnt(query) : matchPortable(query);
}

[[gnu::always_inline]] inline QosMatch Classifier::matchIn(const PathQuery& query) const {
    const ClassSets& s = classSets_[classOf_[query.source]];
    const ClassSets& d = classSets_[classOf_[query.destination]];
    RequestFields fields;
    fields.present =
        static_cast<uint8_t>((query.qosClass ? QosClassBit : 0) |
                             (query.serviceId ? ServiceIdBit : 0) | (query.pkey ? PkeyBit : 0));
    fields.qosClass = query.qosClass.value_or(0);
    fields.pkey = ib::pkeyBase(query.pkey.value_or(0));
    fields.serviceId = query.serviceId.value_or(0);
    // All ones for a field the request carries: a field it lacks is accepted by no rule naming
    // it, whatever its value's intervals hold.
    const uint64_t qosPresent = 0 - uint64_t{query.qosClass.has_value()};
    const uint64_t sidPresent = 0 - uint64_t{query.serviceId.has_value()};
    const uint64_t pkeyPresent = 0 - uint64_t{query.pkey.has_value()};
    const uint64_t* pool = pool_.data();
    const bool neither = anyNeither_;
    for (uint32_t sw = 0; sw < summaryWords_; ++sw) {
        SummaryView sourceOnly(pool + s.sourceOnly, summaryWords_, sw);
        SummaryView destinationOnly(pool + d.destinationOnly, summaryWords_, sw);
        SummaryView sourceBoth(pool + s.sourceBoth, summaryWords_, sw);
        SummaryView destinationBoth(pool + d.destinationBoth, summaryWords_, sw);
        SummaryView neitherEnd(pool + neither_, summaryWords_, sw);
        uint64_t blocks = sourceOnly.summary | destinationOnly.summary |
                          (sourceBoth.summary & destinationBoth.summary) | neitherEnd.summary;
        // A rule naming a field the request lacks never matches it: that costs nothing to cut.
        if (!query.qosClass) blocks &= qosClass_.unnamedSummary[sw];
        if (!query.serviceId) blocks &= serviceId_.unnamedSummary[sw];
        if (!query.pkey) blocks &= pkey_.unnamedSummary[sw];
        if (std::popcount(blocks) > static_cast<int>(ManyWords)) {
            blocks &= fieldSummary(qosClass_, fields.qosClass, qosPresent, sw) &
                      fieldSummary(serviceId_, fields.serviceId, sidPresent, sw) &
                      fieldSummary(pkey_, fields.pkey, pkeyPresent, sw);
        }
        while (blocks) {
            unsigned bit = static_cast<unsigned>(std::countr_zero(blocks));
            uint32_t block = sw * 64 + bit;
            blocks &= blocks - 1;
            uint64_t w = sourceOnly.word(bit) | destinationOnly.word(bit) |
                         (sourceBoth.word(bit) & destinationBoth.word(bit));
            if (neither) w |= neitherEnd.word(bit);
            if (!w) continue;
            if (std::popcount(w) <= static_cast<int>(SparseCandidates) && !(w & wide_[block])) {
                for (; w; w &= w - 1) {
                    uint32_t rule = block * 64 + static_cast<uint32_t>(std::countr_zero(w));
                    if (accepts(rule, fields)) return {ruleLevel_[rule], rule};
                }
                continue;
            }
            w = filter(w, qosClass_, fields.qosClass, qosPresent, block);
            w = filter(w, serviceId_, fields.serviceId, sidPresent, block);
            w = filter(w, pkey_, fields.pkey, pkeyPresent, block);
            if (w) {
                uint32_t rule = block * 64 + static_cast<uint32_t>(std::countr_zero(w));
                return {ruleLevel_[rule], rule};
            }
        }
    }
    return {defaultLevel_, NoRule};
}

size_t Classifier::memoryBytes() const {
    size_t bytes = pool_.capacity() * sizeof(uint64_t) + classOf_.capacity() * sizeof(uint32_t) +
                   ruleFields_.capacity() * sizeof(RuleFields) +
                   serviceIdRanges_.capacity() * sizeof(ServiceIdRanges) +
                   wide_.capacity() * sizeof(uint64_t) + classSets_.capacity() * sizeof(ClassSets) +
                   ruleLevel_.capacity() * sizeof(uint32_t);
    for (const FieldIndex* f : {&qosClass_, &serviceId_, &pkey_}) {
        bytes += (f->unnamed.capacity() + f->unnamedSummary.capacity()) * sizeof(uint64_t);
        for (const BlockIntervals* index : {&f->words, &f->summaries}) {
            bytes += index->begin.capacity() * sizeof(uint32_t) +
                     (index->starts.capacity() + index->bits.capacity()) * sizeof(uint64_t);
        }
    }
    return bytes;
}

}  // namespace ibqos

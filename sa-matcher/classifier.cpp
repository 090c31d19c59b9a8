// SPDX-License-Identifier: MIT
// Classifier: building the rule sets, and the match loop.
//
// A request matches rule r when r's endpoint condition and each of its field conditions hold.
// The endpoint condition splits the rules four ways: sources only (the source must be in one
// of them), destinations only, both, neither. For a source port s and destination port d the
// rules whose endpoint condition holds are
//     sourceOnly(s) | destinationOnly(d) | (sourceBoth(s) & destinationBoth(d)) | neither,
// each a precomputed set. A field condition holds when the rule does not name the field, or
// names it and accepts the request's value: unnamed(field) | accepts(field, value), where the
// value's set comes from its interval between the sorted boundaries of every rule's ranges.
// A request without the field gets only unnamed(field): a rule naming a field never matches a
// request that lacks it.
//
// Sets are two-level bitsets. The summaries of the four endpoint sets say which 64-rule words
// can hold a candidate at all. Those with a rule that names a field the request lacks are cut
// at once (each field keeps a summary of the rules that do not name it); where the words left
// are still many (large groups on many rules), the summaries of the field conditions for the
// request's values cut them down too.
// The words left are visited in rule order, and the first rule that passes its field
// conditions is the answer. A word with one or two candidates tests them
// against their own ranges (RuleFields: small arrays that stay in cache); a denser word is ANDed
// with the field sets. With group-based policies only a handful of words are visited, and a
// request that carries no value some rules need, or a value no rule of a word accepts, skips
// those words without reading them; in any case no more than rules / 64, and a few ANDs each.
//
// Every lookup in the loop is branchless where its outcome is as random as the requests: on the
// machines measured, mispredicted branches cost more than the work they would skip.
#include "sa-matcher/classifier.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_map>

#include "ib/qos.hpp"

namespace ibqos {

namespace {

constexpr uint64_t QosClassValues = ib::MaxQosClass + 1;
constexpr uint64_t PkeyValues = ib::PkeyBaseMask + 1;  // once the membership bit is masked off
constexpr size_t CoarseStep = 16;                      // interval starts per coarse search step
constexpr unsigned SparseCandidates = 2;  // at most this many: test the rules' own records
constexpr unsigned ManyWords = 32;  // more candidate words than this in 4096 rules: cut by fields

// The fields of RuleFields::named and RequestFields::present.
constexpr uint8_t QosClassBit = 1, ServiceIdBit = 2, PkeyBit = 4;

void setBit(std::vector<uint64_t>& dense, uint32_t index) {
    dense[index >> 6] |= uint64_t{1} << (index & 63);
}
void clearBit(std::vector<uint64_t>& dense, uint32_t index) {
    dense[index >> 6] &= ~(uint64_t{1} << (index & 63));
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
        c_.empty_ = intern(dense_);
        for (uint32_t r = 0; r < rules; ++r) {
            const MatchRule& rule = policy_.rules[r];
            c_.ruleLevel_.push_back(rule.level);
            if (rule.sources.empty() && rule.destinations.empty()) setBit(dense_, r);
        }
        c_.neither_ = intern(dense_);
        c_.defaultLevel_ = policy_.defaultLevel;
        buildRecords();
        buildClasses();
        buildField(c_.qosClass_, QosClassValues - 1, true,
                   [](const MatchRule& r) -> const RangeSet& { return r.qosClasses; });
        buildField(c_.serviceId_, UINT64_MAX, false,
                   [](const MatchRule& r) -> const RangeSet& { return r.serviceIds; });
        buildField(c_.pkey_, PkeyValues - 1, true,
                   [](const MatchRule& r) -> const RangeSet& { return r.pkeys; });
        c_.pool_.push_back(0);  // the spare word word() may read past the last set
        c_.pool_.shrink_to_fit();
    }

  private:
    Classifier& c_;
    const BoundPolicy& bound_;
    const Policy& policy_;
    std::vector<uint64_t> dense_;  // scratch: one bit per rule
    std::unordered_map<uint64_t, std::vector<SetRef>> interned_;

    // Stores a set given as a dense bitset, or finds the identical one stored before.
    SetRef intern(const std::vector<uint64_t>& dense) {
        uint64_t hash = 0xcbf29ce484222325ULL;
        for (uint32_t w = 0; w < dense.size(); ++w) {
            if (dense[w]) hash = (hash ^ (dense[w] * 0x9e3779b97f4a7c15ULL + w)) * 0x100000001b3ULL;
        }
        auto& candidates = interned_[hash];
        for (SetRef ref : candidates) {
            if (holds(ref, dense)) return ref;
        }
        SetRef ref = store(dense);
        candidates.push_back(ref);
        return ref;
    }

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

    // Whether a stored set is the dense one.
    bool holds(SetRef ref, const std::vector<uint64_t>& dense) const {
        const uint64_t* words = c_.pool_.data() + ref + 2 * c_.summaryWords_;
        for (uint32_t w = 0; w < dense.size(); ++w) {
            bool present = (c_.pool_[ref + 2 * (w / 64)] >> (w % 64)) & 1;
            if (present ? *words++ != dense[w] : dense[w] != 0) return false;
        }
        return true;
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

    // A sweep over every boundary of every rule's ranges in [0, maxValue], keeping the set of
    // rules whose range covers the current interval.
    template <typename Ranges>
    void buildField(FieldIndex& field, uint64_t maxValue, bool direct, Ranges ranges) {
        struct Event {
            uint64_t at;
            uint32_t rule;
            bool add;
        };
        std::vector<Event> events;
        field.unnamed.assign(c_.words_, 0);
        field.unnamedSummary.assign(c_.summaryWords_, 0);
        for (uint32_t r = 0; r < policy_.rules.size(); ++r) {
            const RangeSet& set = ranges(policy_.rules[r]);
            if (set.empty()) {
                setBit(field.unnamed, r);
                setBit(field.unnamedSummary, r / 64);
                continue;
            }
            // A RangeSet's ranges are disjoint and not adjacent: each bit is set and cleared
            // once per range.
            for (const Range& range : set.ranges()) {
                if (range.lo > maxValue) break;
                events.push_back({range.lo, r, true});
                if (range.hi < maxValue) events.push_back({range.hi + 1, r, false});
            }
        }
        std::sort(events.begin(), events.end(),
                  [](const Event& a, const Event& b) { return a.at < b.at; });
        std::fill(dense_.begin(), dense_.end(), 0);
        uint64_t at = 0;
        for (size_t i = 0;;) {
            for (; i < events.size() && events[i].at == at; ++i) {
                if (events[i].add) {
                    setBit(dense_, events[i].rule);
                } else {
                    clearBit(dense_, events[i].rule);
                }
            }
            SetRef set = intern(dense_);
            if (field.sets.empty() || field.sets.back() != set) {
                field.starts.push_back(at);
                field.sets.push_back(set);
            }
            if (i == events.size()) break;
            at = events[i].at;
        }
        if (direct) {
            field.direct.resize(maxValue + 1);
            for (size_t i = 0; i < field.starts.size(); ++i) {
                uint64_t end = i + 1 < field.starts.size() ? field.starts[i + 1] : maxValue + 1;
                std::fill(field.direct.begin() + static_cast<ptrdiff_t>(field.starts[i]),
                          field.direct.begin() + static_cast<ptrdiff_t>(end), field.sets[i]);
            }
            field.starts.clear();
            field.starts.shrink_to_fit();
            field.sets.clear();
            field.sets.shrink_to_fit();
        }
        for (size_t i = 0; i < field.starts.size(); i += CoarseStep)
            field.coarse.push_back(field.starts[i]);
    }
};

Classifier::Classifier(const BoundPolicy& bound) {
    Builder(*this, bound).build();
#if defined(__x86_64__)
    popcnt_ = __builtin_cpu_supports("popcnt");
#endif
}

// The lookups of match(), forced inline so that its popcnt build uses the instruction, and
// without branches: which words are present is as random as the requests, and mispredicted
// branches would cost more than the few instructions done for nothing.
[[gnu::always_inline]] inline uint64_t Classifier::word(SetRef set, uint32_t block) const {
    const uint64_t* p = pool_.data() + set;
    uint64_t summary = p[2 * (block >> 6)];
    uint64_t below = (uint64_t{1} << (block & 63)) - 1;
    uint64_t rank = p[2 * (block >> 6) + 1] + static_cast<uint64_t>(std::popcount(summary & below));
    // Without the block, rank points one past the set's last word at most: pool_ ends with a
    // spare word, so the read stays inside it, and the mask drops what it read.
    uint64_t present = 0 - ((summary >> (block & 63)) & 1);
    return p[2 * summaryWords_ + rank] & present;
}

[[gnu::always_inline]] inline uint64_t Classifier::fieldSummary(const FieldIndex& field,
                                                                SetRef accepted,
                                                                uint32_t sw) const {
    return field.unnamedSummary[sw] | pool_[accepted + 2 * sw];
}

[[gnu::always_inline]] inline uint64_t Classifier::filter(uint64_t candidates,
                                                          const FieldIndex& field, SetRef accepted,
                                                          uint32_t block) const {
    return candidates & (field.unnamed[block] | word(accepted, block));
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

[[gnu::always_inline]] inline Classifier::SetRef Classifier::setOf(const FieldIndex& field,
                                                                   uint64_t value) const {
    if (!field.direct.empty()) return value < field.direct.size() ? field.direct[value] : empty_;
    // Every array starts at 0, so the value is never below the first start. The coarse starts
    // find the CoarseStep starts that hold the value's interval.
    size_t first = lastNotAbove(field.coarse.data(), field.coarse.size(), value) * CoarseStep;
    size_t size = std::min(CoarseStep, field.starts.size() - first);
    return field.sets[first + lastNotAbove(field.starts.data() + first, size, value)];
}

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
    // The field sets are looked up once a candidate word is dense, or the candidate words are
    // many: then their summaries cut the words to visit.
    bool looked = false;
    SetRef qos = empty_, sid = empty_, pkey = empty_;
    auto lookUp = [&] {
        looked = true;
        if (query.qosClass) qos = setOf(qosClass_, *query.qosClass);
        if (query.serviceId) sid = setOf(serviceId_, *query.serviceId);
        if (query.pkey) pkey = setOf(pkey_, ib::pkeyBase(*query.pkey));
    };
    const uint64_t* pool = pool_.data();
    const bool neither = neither_ != empty_;
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
            if (!looked) lookUp();
            blocks &= fieldSummary(qosClass_, qos, sw) & fieldSummary(serviceId_, sid, sw) &
                      fieldSummary(pkey_, pkey, sw);
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
            if (!looked) lookUp();
            w = filter(w, qosClass_, qos, block);
            w = filter(w, serviceId_, sid, block);
            w = filter(w, pkey_, pkey, block);
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
        bytes += (f->unnamed.capacity() + f->unnamedSummary.capacity()) * sizeof(uint64_t) +
                 (f->starts.capacity() + f->coarse.capacity()) * sizeof(uint64_t) +
                 f->sets.capacity() * sizeof(SetRef) + f->direct.capacity() * sizeof(SetRef);
    }
    return bytes;
}

}  // namespace ibqos

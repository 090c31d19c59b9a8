// SPDX-License-Identifier: MIT
// DecisionDiagram: the unique table, the memo and the recursive operations.
//
// Nodes are hash-consed in an open-addressing table that doubles at half load; operation
// results go to a direct-mapped memo that grows with the nodes (a lost entry only costs a
// recomputation). Every recursive step counts against the work budget.
#include "policy-space/decision_diagram.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace ibqos {

namespace {
constexpr size_t InitialSlots = 1 << 12;
}

DecisionDiagram::DecisionDiagram(uint64_t workBudget) : budget_(workBudget) { clear(); }

void DecisionDiagram::clear() {
    // The tables keep their size: a diagram cleared once tends to grow as large again. Emptying
    // them is work too.
    nodes_.clear();
    if (!unique_.empty()) spend(unique_.size() / 64);
    if (unique_.empty()) {
        unique_.assign(InitialSlots, 0);
        memo_.assign(InitialSlots / 4, Memo{});
    } else {
        // As bytes: an empty slot and an unused memo entry are all zeros. (std::fill stored
        // the memo's five fields one at a time: 4 % of the unlimited dead-rule analysis of
        // a 10,000-rule policy, whose judgement starts its diagram afresh 171 times.)
        static_assert(std::is_trivially_copyable_v<Memo>);
        std::memset(unique_.data(), 0, unique_.size() * sizeof(unique_[0]));
        std::memset(static_cast<void*>(memo_.data()), 0, memo_.size() * sizeof(Memo));
    }
    intern(TerminalVar, 0, 0);
    intern(TerminalVar, 1, 0);
}

uint64_t DecisionDiagram::hash(uint32_t a, uint32_t b, uint32_t c) {
    // Refs are small, dense numbers: mix every bit into the low ones (the table index).
    uint64_t h = (uint64_t{a} << 32 | b) * 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 29) ^ c) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

void DecisionDiagram::growUnique() {
    std::vector<uint64_t> bigger(unique_.size() * 2, 0);
    const uint64_t mask = bigger.size() - 1;
    for (Ref r = 0; r < nodes_.size(); ++r) {
        const uint64_t h = hash(nodes_[r].var, nodes_[r].lo, nodes_[r].hi);
        uint64_t i = h & mask;
        while (bigger[i] != 0) i = (i + 1) & mask;
        bigger[i] = (h & 0xffffffff00000000ULL) | (uint64_t{r} + 1);
    }
    unique_ = std::move(bigger);
    // The memo follows the nodes: about one entry for every two.
    if (memo_.size() < unique_.size() / 4) memo_.assign(unique_.size() / 4, Memo{});
}

// The node (v, lo, hi), found or made. Slots hold Ref + 1, so that 0 means empty.
DecisionDiagram::Ref DecisionDiagram::intern(uint32_t v, Ref lo, Ref hi) {
    const uint64_t h = hash(v, lo, hi);
    const uint64_t mask = unique_.size() - 1;
    const uint64_t tag = h & 0xffffffff00000000ULL;
    uint64_t i = h & mask;
    for (; unique_[i] != 0; i = (i + 1) & mask) {
        if ((unique_[i] & 0xffffffff00000000ULL) != tag) continue;
        const Ref r = static_cast<Ref>((unique_[i] & 0xffffffffULL) - 1);
        const Node& n = nodes_[r];
        if (n.var == v && n.lo == lo && n.hi == hi) return r;
    }
    if (nodes_.size() >= UINT32_MAX - 2) throw AnalysisBudgetSpent();
    nodes_.push_back({v, lo, hi});
    const auto r = static_cast<Ref>(nodes_.size() - 1);
    unique_[i] = tag | (uint64_t{r} + 1);
    if (nodes_.size() * 2 > unique_.size()) growUnique();
    return r;
}

DecisionDiagram::Ref DecisionDiagram::node(uint32_t v, Ref lo, Ref hi) {
    if (lo == hi) return lo;
    return intern(v, lo, hi);
}

uint64_t DecisionDiagram::memoKey(uint32_t op, Ref a, Ref b) { return hash(a, b, op); }

uint32_t DecisionDiagram::top(Ref a, Ref b) const { return std::min(nodes_[a].var, nodes_[b].var); }

DecisionDiagram::Ref DecisionDiagram::boolean(Op op, Ref a, Ref b) {
    switch (op) {
        case And:
            if (a == False || b == False) return False;
            if (a == True || a == b) return b;
            if (b == True) return a;
            if (a > b) std::swap(a, b);
            break;
        case Or:
            if (a == True || b == True) return True;
            if (a == False || a == b) return b;
            if (b == False) return a;
            if (a > b) std::swap(a, b);
            break;
        default:  // Minus
            if (a == False || b == True || a == b) return False;
            if (b == False) return a;
            break;
    }
    const uint64_t key = memoKey(op, a, b);
    const Memo& m = memoAt(key);
    if (m.op == op && m.a == a && m.b == b) return m.result;
    step();
    const uint32_t v = top(a, b);
    auto [a0, a1] = split(a, v);
    auto [b0, b1] = split(b, v);
    Ref lo = boolean(op, a0, b0);
    Ref hi = boolean(op, a1, b1);
    Ref r = node(v, lo, hi);
    // (The memo may have grown during the recursion: memoAt finds the slot again.)
    memoAt(key) = {a, b, op, r};
    return r;
}

DecisionDiagram::Ref DecisionDiagram::conj(Ref a, Ref b) { return boolean(And, a, b); }
DecisionDiagram::Ref DecisionDiagram::disj(Ref a, Ref b) { return boolean(Or, a, b); }
DecisionDiagram::Ref DecisionDiagram::minus(Ref a, Ref b) { return boolean(Minus, a, b); }

bool DecisionDiagram::implies(Ref a, Ref b) {
    // a implies b: a and (not b) is empty, walked without building not b.
    if (a == False || b == True || a == b) return true;
    if (b == False) return false;  // a is not False
    if (a == True) return false;   // b is not True
    const uint64_t key = memoKey(Implies, a, b);
    const Memo& m = memoAt(key);
    if (m.op == Implies && m.a == a && m.b == b) return m.result != 0;
    step();
    const uint32_t v = top(a, b);
    auto [a0, a1] = split(a, v);
    auto [b0, b1] = split(b, v);
    bool r = implies(a0, b0) && implies(a1, b1);
    memoAt(key) = {a, b, Implies, r ? 1u : 0u};
    return r;
}

size_t DecisionDiagram::memoryBytes() const {
    return nodes_.capacity() * sizeof(Node) + unique_.capacity() * sizeof(uint64_t) +
           memo_.capacity() * sizeof(Memo);
}

}  // namespace ibqos

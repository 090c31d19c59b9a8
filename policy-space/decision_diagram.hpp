// SPDX-License-Identifier: MIT
// DecisionDiagram: reduced ordered binary decision diagrams over bit variables, for the analyses
// of a policy's request space (policy-space/request_space.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ibqos {

// Thrown by a DecisionDiagram whose work budget is spent; the analyses catch it and say which
// questions they left undecided. It never leaves the analysis that owns the diagram.
struct AnalysisBudgetSpent : std::runtime_error {
    AnalysisBudgetSpent() : std::runtime_error("analysis budget spent") {}
};

// One diagram arena: every node lives until the arena goes, hash-consed, so two equal
// functions are the same Ref. Variables are ordered by index (0 nearest the root). A Ref
// names a node or a terminal; terminals 0 and 1 are False and True.
//
// An arena holds no process-wide state, never prints and never exits: analyses make one each
// (inside OpenSM too). Building is single-threaded; once built, its nodes (isTerminal, var,
// low, high) may be read concurrently.
class DecisionDiagram {
  public:
    using Ref = uint32_t;
    static constexpr Ref False = 0;
    static constexpr Ref True = 1;
    static constexpr uint32_t TerminalVar = UINT32_MAX;

    // workBudget: how many recursive steps the operations may take in all before they throw
    // AnalysisBudgetSpent (0: no bound). A node costs 12 bytes and its table entry 4.
    explicit DecisionDiagram(uint64_t workBudget = 0);

    bool isTerminal(Ref f) const { return nodes_[f].var == TerminalVar; }
    uint32_t var(Ref f) const { return nodes_[f].var; }
    Ref low(Ref f) const { return nodes_[f].lo; }
    Ref high(Ref f) const { return nodes_[f].hi; }

    // The node testing v: low when the bit is 0, high when it is 1 (reduced: lo == hi is lo).
    Ref node(uint32_t v, Ref lo, Ref hi);

    // Boolean operations.
    Ref conj(Ref a, Ref b);
    Ref disj(Ref a, Ref b);
    Ref minus(Ref a, Ref b);  // a and not b
    Ref negate(Ref a) { return minus(True, a); }
    // Whether every assignment of a is one of b (no node is made).
    bool implies(Ref a, Ref b);

    // Drops every node but the terminals 0 and 1: every other Ref made so far is invalid.
    // The work spent stays counted.
    void clear();

    // Nodes made so far, and the bytes they and their tables hold.
    size_t size() const { return nodes_.size(); }
    // Counts work done outside the diagram (tests of one request) against the same budget.
    void spend(uint64_t steps) {
        work_ += steps;
        if (budget_ != 0 && work_ > budget_) throw AnalysisBudgetSpent();
    }
    // Throws AnalysisBudgetSpent, spending nothing, when `steps` more would overspend: for work
    // too costly to start before knowing that the budget covers it.
    void afford(uint64_t steps) const {
        if (budget_ != 0 && work_ + steps > budget_) throw AnalysisBudgetSpent();
    }
    size_t memoryBytes() const;
    uint64_t work() const { return work_; }

  private:
    struct Node {
        uint32_t var;
        Ref lo, hi;
    };
    // 16 bytes: four to a cache line.
    struct Memo {
        Ref a = 0, b = 0;
        uint32_t op = 0;  // 0: unused
        Ref result = 0;
    };
    enum Op : uint32_t { And = 1, Or, Minus, Implies };

    std::vector<Node> nodes_;
    // Open addressing over nodes_: the Ref in the low half, the hash's high half above it, so
    // that a probe reads a node only when the hashes agree (0: empty).
    std::vector<uint64_t> unique_;
    std::vector<Memo> memo_;  // direct-mapped, lossy
    uint64_t budget_;
    uint64_t work_ = 0;

    void step() {
        if (++work_ > budget_ && budget_ != 0) throw AnalysisBudgetSpent();
    }
    static uint64_t hash(uint32_t a, uint32_t b, uint32_t c);
    void growUnique();
    Ref intern(uint32_t v, Ref lo, Ref hi);
    // A memo entry's key, and its slot: hashed once, found again after a recursion that may
    // have grown the memo.
    static uint64_t memoKey(uint32_t op, Ref a, Ref b);
    Memo& memoAt(uint64_t key) { return memo_[key & (memo_.size() - 1)]; }
    Ref boolean(Op op, Ref a, Ref b);
    uint32_t top(Ref a, Ref b) const;
    std::pair<Ref, Ref> split(Ref f, uint32_t v) const {
        return nodes_[f].var == v ? std::make_pair(nodes_[f].lo, nodes_[f].hi)
                                  : std::make_pair(f, f);
    }
};

}  // namespace ibqos

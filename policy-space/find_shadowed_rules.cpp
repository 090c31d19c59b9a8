// SPDX-License-Identifier: MIT
// Pass 4: match rules no request can reach, because the rules before them together match every
// request they do, on every fabric the policy could meet; and, on one fabric (checkReachability),
// the rules, levels and groups no request of that fabric reaches.
//
// Both judge the rules in OpenSM's order over a RequestSpace: rule j is dead exactly when the
// rules before it match every request it does. The cost follows the diagrams' sizes, which the
// policy's structure sets, not the number of request cells. Every part of the work (building
// the space, each diagram step, each request looked up) is counted against one budget; when it
// is spent, the rules not yet judged are left undecided, each with a note that says so.
#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include "compiler/passes.hpp"
#include "policy-space/reachability.hpp"
#include "policy-space/request_space.hpp"

namespace ibqos::passes {

namespace {

using Ref = DecisionDiagram::Ref;

// Nodes past which the judgement starts its diagram afresh between two rules: what one rule
// leaves behind is of little use to the next, and a small diagram stays in the cache. Measured
// on the 10,000-rule shape families (unlimited budget): 2^20 nodes took 2.3 s and 104 MB on
// shifted ranges, 2^14 takes 1.1 s and 30 MB; rebuilding the rules' diagrams costs less than
// the cache misses of a large one.
constexpr size_t DiagramNodes = 1 << 14;
// The requests of a rule the quick look tries, and the earlier rules it tries as holding a rule
// whole.
constexpr unsigned Witnesses = 4;
constexpr size_t WithinTries = 8;

// The verdict on one rule.
struct Verdict {
    enum Kind : uint8_t { Reachable, Dead, Undecided } kind = Reachable;
    bool matchesNothing = false;      // its own requests are empty (a side holds no port)
    std::vector<uint32_t> coveredBy;  // for a dead rule: the earlier rules that answer it
};

// Judges the rules of one policy: rule j is dead when the requests it matches lie inside the
// union of the rules before it. The union is never built: a request inside what is left of rule
// j is looked up in the space's point index; the first earlier rule that matches it is taken
// out of what is left, until a request escapes them all (reachable) or nothing is left (dead).
// Each round takes out a whole rule, so a rule costs at most one round per earlier rule it
// meets, and a reachable rule is usually found on the first request.
class RuleJudge {
  public:
    explicit RuleJudge(RequestSpace& space) : space_(space), dd_(space.diagram()) {}

    // A quick look, without a diagram: a few requests of rule j made from its own ranges and
    // groups, against the rules before it. Reachable when one escapes them; dead when one of
    // the earlier rules a request matches holds the whole rule (its ranges and groups hold
    // rule j's); otherwise nullopt, for the judgement.
    std::optional<Verdict> atOnce(uint32_t j) {
        for (unsigned variant = 0; variant < Witnesses; ++variant) {
            dd_.spend(space_.pointSteps());
            std::optional<RequestPoint> point = space_.witness(0, j, variant);
            // (A witness matches its rule: test_dead_rules checks it for every rule shape.)
            if (!point) return std::nullopt;  // the judgement finds that it matches nothing
            if (variant > 0) {
                if (!firstMatch(*point, j)) return Verdict{};
                continue;
            }
            // The first few earlier rules that match it: one of them often holds rule j.
            dd_.spend(space_.lookupSteps(0, j) + WithinTries / 4);
            const std::vector<uint32_t> matching =
                space_.allMatches(0, *point, j, room_, WithinTries);
            if (matching.empty()) return Verdict{};
            for (uint32_t i : matching) {
                if (space_.within(0, j, i)) {
                    Verdict v;
                    v.kind = Verdict::Dead;
                    v.coveredBy = {i};
                    return v;
                }
            }
        }
        return std::nullopt;
    }

    Verdict judge(uint32_t j) {
        Verdict v;
        const Ref rule = space_.rule(0, j);
        if (rule == DecisionDiagram::False) {
            v.kind = Verdict::Dead;
            v.matchesNothing = true;
            return v;
        }
        Ref rest = rule;
        std::vector<uint32_t> used;
        points_.clear();
        while (rest != DecisionDiagram::False) {
            // Of the earlier rules that match this request, the largest goes out: few rounds
            // cover a dead rule, as in a greedy set cover.
            dd_.spend(space_.pointSteps() + space_.lookupSteps(0, j));
            points_.push_back(space_.pointIn(rest, used.empty() ? 0 : j * 7919 + used.size()));
            const std::optional<uint32_t> largest =
                space_.largestMatch(0, points_.back(), j, room_);
            if (!largest) return v;  // this request reaches rule j
            used.push_back(*largest);
            rest = takeOut(rest, *largest);
        }
        v.kind = Verdict::Dead;
        std::sort(used.begin(), used.end());
        // One of them alone matches every request rule j does only if it matches the requests
        // the rounds drew from rule j: a direct test of those first, the diagrams' after.
        auto holdsThePoints = [&](uint32_t i) {
            return std::all_of(points_.begin(), points_.end(),
                               [&](const RequestPoint& p) { return space_.matches(0, i, p); });
        };
        for (uint32_t i : used) {
            if (used.size() == 1 || (holdsThePoints(i) && dd_.implies(rule, space_.rule(0, i)))) {
                v.coveredBy = {i};
                return v;
            }
        }
        v.coveredBy = std::move(used);
        return v;
    }

    // Whether some request matches no rule (it gets the default level).
    bool fallsThrough() {
        const auto n = static_cast<uint32_t>(space_.policy(0).rules.size());
        Ref rest = DecisionDiagram::True;
        while (rest != DecisionDiagram::False) {
            dd_.spend(space_.pointSteps());
            const std::optional<uint32_t> i = firstMatch(space_.pointIn(rest), n);
            if (!i) return true;
            rest = takeOut(rest, *i);
        }
        return false;
    }

  private:
    RequestSpace& space_;
    DecisionDiagram& dd_;
    RequestSpace::LookupRoom room_;
    std::vector<RequestPoint> points_;  // the requests a judgement drew, kept between rules

    // What is left once rule i, which matches a request of rest, is taken out.
    Ref takeOut(Ref rest, uint32_t i) { return takeOut(rest, std::vector<uint32_t>{i}); }
    Ref takeOut(Ref rest, const std::vector<uint32_t>& rules) {
        Ref left = rest;
        for (uint32_t i : rules) left = dd_.minus(left, space_.rule(0, i));
        if (left == rest)
            throw std::logic_error("RuleJudge: a rule matches a request its diagram lacks");
        return left;
    }

    std::optional<uint32_t> firstMatch(const RequestPoint& point, uint32_t before) {
        dd_.spend(space_.lookupSteps(0, before));
        return space_.firstMatch(0, point, before, room_);
    }
};

// The verdicts on every rule of a policy: first a quick look at each (most reachable rules
// show it at once), then the full judgement of the others, in order, while the budget lasts.
std::vector<Verdict> judgeRules(RequestSpace& space) {
    const auto n = static_cast<uint32_t>(space.policy(0).rules.size());
    std::vector<Verdict> verdicts(n);
    std::vector<char> settled(n);
    RuleJudge judge(space);
    uint32_t j = 0;
    try {
        for (; j < n; ++j) {
            if (std::optional<Verdict> v = judge.atOnce(j)) {
                verdicts[j] = std::move(*v);
                settled[j] = 1;
            }
        }
        for (j = 0; j < n; ++j) {
            if (!settled[j]) verdicts[j] = judge.judge(j);
            settled[j] = 1;
            space.trimDiagram(DiagramNodes);
        }
    } catch (const AnalysisBudgetSpent&) {
        for (uint32_t k = 0; k < n; ++k) {
            if (!settled[k]) verdicts[k].kind = Verdict::Undecided;
        }
    }
    return verdicts;
}

// "the match rule at line N" (or qos-ulps line), appended to a warning (a large policy has
// thousands: no string of its own).
void describe(std::string& out, const MatchRule& rule) {
    out += rule.fromUlps ? "the qos-ulps line at line " : "the match rule at line ";
    char digits[10];
    const auto end = std::to_chars(std::begin(digits), std::end(digits), rule.location.line).ptr;
    out.append(digits, end);
}

const char* undecided =
    " was not decided: the analysis budget ran out before it (raise it with --analysis-budget)";

}  // namespace

void findShadowedRules(const Reporter& report, Policy& policy, uint64_t workBudget) {
    auto& rules = policy.rules;
    DecisionDiagram dd(workBudget);
    std::vector<Verdict> verdicts(rules.size(), Verdict{Verdict::Undecided, false, {}});
    try {
        RequestSpace space(dd, std::vector<const Policy*>{&policy});
        verdicts = judgeRules(space);
    } catch (const AnalysisBudgetSpent&) {
        // Building the space spent the budget: every rule is left undecided.
    }
    // The undecided notes' two messages, written once (a large policy may have thousands).
    const std::string undecidedRule = std::string("whether this match rule can match") + undecided;
    const std::string undecidedLine =
        std::string("whether this qos-ulps line can match") + undecided;
    for (uint32_t j = 0; j < rules.size(); ++j) {
        const Verdict& v = verdicts[j];
        if (v.kind == Verdict::Undecided) {
            report.note("reachability-undecided", rules[j].location,
                        rules[j].fromUlps ? undecidedLine : undecidedRule);
            continue;
        }
        if (v.kind != Verdict::Dead) continue;
        rules[j].shadowed = true;
        std::string message = rules[j].fromUlps ? "this qos-ulps line" : "this match rule";
        if (v.matchesNothing) {
            report.warning("shadowed-rule", rules[j].location,
                           message +
                               " can never match: its source or destination groups hold no "
                               "port");
            continue;
        }
        message.reserve(message.size() + 40 * v.coveredBy.size() + 100);
        message += " can never match: ";
        bool ulpsAfterRules = rules[j].fromUlps;
        for (size_t k = 0; k < v.coveredBy.size(); ++k) {
            const MatchRule& r = rules[v.coveredBy[k]];
            message += k == 0 ? "" : k + 1 == v.coveredBy.size() ? " and " : ", ";
            describe(message, r);
            ulpsAfterRules = ulpsAfterRules && !r.fromUlps;
        }
        message += v.coveredBy.size() == 1 ? " matches" : " together match";
        message += " every request it does";
        if (ulpsAfterRules) message += " (qos-ulps lines come after every qos-match-rule)";
        report.warning("shadowed-rule", rules[j].location, std::move(message));
    }
}

void findUnused(const Reporter& report, Policy& policy) {
    // A reference that failed leaves its definition unused: the error says enough.
    if (report.diagnostics.hasErrors()) return;
    std::vector<char> levelNamed(policy.levels.size()), groupUsed(policy.groups.size());
    auto use = [&](const std::vector<uint32_t>& groups) {
        for (uint32_t g : groups) groupUsed[g] = 1;
    };
    for (const MatchRule& rule : policy.rules) {
        use(rule.sources);
        use(rule.destinations);
        if (!rule.shadowed && rule.level < levelNamed.size()) levelNamed[rule.level] = 1;
    }
    for (const VlArbScope& scope : policy.vlarbScopes) {
        use(scope.groups);
        use(scope.across);
    }
    for (const Sl2VlScope& scope : policy.sl2vlScopes) {
        use(scope.groups);
        use(scope.acrossFrom);
        use(scope.acrossTo);
    }
    std::vector<char> levelInRule(policy.levels.size());
    for (const MatchRule& rule : policy.rules) {
        if (rule.level < levelInRule.size()) levelInRule[rule.level] = 1;
    }
    for (uint32_t l = 0; l < policy.levels.size(); ++l) {
        QosLevel& level = policy.levels[l];
        if (levelNamed[l] || level.generated ||
            (policy.hasDefaultLevel && l == policy.defaultLevel))
            continue;
        level.unused = true;
        report.warning("unused-level", level.location,
                       "no request can get qos-level '" + level.name + "' on any fabric: " +
                           (levelInRule[l] ? "only rules that can never match name it"
                                           : "no match rule names it, and it is not the default"));
    }
    for (uint32_t g = 0; g < policy.groups.size(); ++g) {
        const PortGroup& group = policy.groups[g];
        if (groupUsed[g] || group.origin != GroupOrigin::Written) continue;
        report.warning("unused-group", group.location,
                       "port-group '" + group.name + "' is used by no rule or qos-setup scope");
    }
}

}  // namespace ibqos::passes

namespace ibqos {

void checkReachability(const BoundPolicy& bound, Diagnostics& diagnostics, uint64_t workBudget) {
    using namespace passes;
    const Policy& policy = *bound.policy;
    std::vector<char> levelReached(policy.levels.size());
    auto warn = [&](const char* code, SourceLocation where, std::string message) {
        diagnostics.warning(code, policy.file, where, std::move(message));
    };
    DecisionDiagram here(workBudget);
    std::optional<RequestSpace> thisFabric;
    std::vector<Verdict> verdicts(policy.rules.size(), Verdict{Verdict::Undecided, false, {}});
    try {
        thisFabric.emplace(here, std::vector<const BoundPolicy*>{&bound});
        verdicts = judgeRules(*thisFabric);
    } catch (const AnalysisBudgetSpent&) {
        // Building the space spent the budget: every rule is left undecided.
    }
    for (uint32_t j = 0; j < policy.rules.size(); ++j) {
        const MatchRule& rule = policy.rules[j];
        const Verdict& v = verdicts[j];
        const std::string what = rule.fromUlps ? "this qos-ulps line" : "this match rule";
        if (v.kind == Verdict::Undecided) {
            levelReached[rule.level] = 1;
            diagnostics.note(
                "reachability-undecided", policy.file, rule.location,
                "whether " + what + " can match on " + bound.fabric->source + undecided);
            continue;
        }
        if (v.kind != Verdict::Dead) {
            levelReached[rule.level] = 1;
            continue;
        }
        if (v.matchesNothing) {
            warn("unreachable-rule", rule.location,
                 what + " matches no port pair of " + bound.fabric->source +
                     ": its source or destination groups hold no port there");
        } else if (!rule.shadowed) {
            // (A rule dead on every fabric already has its shadowed-rule warning.)
            std::string by;
            for (size_t k = 0; k < v.coveredBy.size(); ++k) {
                by += (k == 0                        ? ""
                       : k + 1 == v.coveredBy.size() ? " and "
                                                     : ", ") +
                      std::string("line ") +
                      std::to_string(policy.rules[v.coveredBy[k]].location.line);
            }
            warn("unreachable-rule", rule.location,
                 what + " can never match on " + bound.fabric->source + ": the rules before it (" +
                     by + ") match every request it does there");
        }
    }
    // The default level: is there a request no rule matches? (Undecided: say nothing.)
    bool fallsThrough = true;
    try {
        if (thisFabric) fallsThrough = RuleJudge(*thisFabric).fallsThrough();
    } catch (const AnalysisBudgetSpent&) {
    }
    if (fallsThrough && policy.hasDefaultLevel) levelReached[policy.defaultLevel] = 1;
    for (uint32_t l = 0; l < policy.levels.size(); ++l) {
        const QosLevel& level = policy.levels[l];
        if (levelReached[l] || level.generated || level.unused) continue;
        warn("unreachable-level", level.location,
             "no request can get level '" + level.name + "' on " + bound.fabric->source +
                 (l == policy.defaultLevel ? ": the rules match every request"
                                           : ": no rule that can match leads to it"));
    }
}

}  // namespace ibqos

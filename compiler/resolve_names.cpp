// SPDX-License-Identifier: MIT
// Pass 3: duplicate names, references to levels, groups and scheduling parents, the default level.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "compiler/passes.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::passes {

namespace {

std::string folded(std::string_view name) {
    std::string s(name);
    for (char& c : s) c = foldCase(c);
    return s;
}

// Values by name, names compared ignoring case. Open addressing over flat arrays rather than a
// node-based map: a lookup touches a slot and one entry, so that resolving the references of a
// large policy is not a walk from cache miss to cache miss.
template <typename T>
class FoldedIndex {
  public:
    // Adds key with value unless a name equal to it ignoring case is there. Returns the value
    // kept under that name and whether key was added.
    std::pair<const T&, bool> emplace(std::string_view key, T value) {
        if (4 * (entries_.size() + 1) > 3 * slots_.size()) grow();
        const uint64_t h = hash(key);
        Slot& slot = slots_[probe(key, h)];
        if (slot.entry != 0) return {entries_[slot.entry - 1].second, false};
        entries_.emplace_back(std::string(key), std::move(value));
        slot = {h, static_cast<uint32_t>(entries_.size())};
        return {entries_.back().second, true};
    }
    // The value kept under a name equal to key ignoring case, or nullptr.
    const T* find(std::string_view key) const {
        if (slots_.empty()) return nullptr;
        const Slot& slot = slots_[probe(key, hash(key))];
        return slot.entry != 0 ? &entries_[slot.entry - 1].second : nullptr;
    }
    // Every name as first added, with its value, in the order they were added.
    const std::vector<std::pair<std::string, T>>& entries() const { return entries_; }

  private:
    struct Slot {
        uint64_t hash = 0;
        uint32_t entry = 0;  // index into entries_ + 1; 0 when the slot is free
    };

    static uint64_t hash(std::string_view key) {
        uint64_t h = 1469598103934665603ULL;  // FNV-1a over the folded bytes
        for (char c : key) h = (h ^ static_cast<unsigned char>(foldCase(c))) * 1099511628211ULL;
        return h ^ (h >> 32);  // FNV's low bits depend on the bytes' low bits only
    }
    // The slot holding key, or the free slot where it belongs.
    size_t probe(std::string_view key, uint64_t h) const {
        const size_t mask = slots_.size() - 1;
        for (size_t s = h & mask;; s = (s + 1) & mask) {
            const Slot& slot = slots_[s];
            if (slot.entry == 0 ||
                (slot.hash == h && sameName(entries_[slot.entry - 1].first, key))) {
                return s;
            }
        }
    }
    void grow() {
        std::vector<Slot> old(std::max<size_t>(16, 2 * slots_.size()));
        old.swap(slots_);
        const size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.entry == 0) continue;
            size_t s = slot.hash & mask;
            while (slots_[s].entry != 0) s = (s + 1) & mask;
            slots_[s] = slot;
        }
    }

    std::vector<std::pair<std::string, T>> entries_;
    std::vector<Slot> slots_;  // a power of two, at most three quarters used
};

// Names as OpenSM looks them up: its reading (blanks outside quotes dropped), without case,
// first definition wins. A reference resolves exactly where OpenSM resolves it, so the policy
// keeps OpenSM's meaning and verdict; where ibqos's reading (blanks kept) would say otherwise,
// a diagnostic says so.
class NameTable {
  public:
    NameTable(const Reporter& report, const char* what) : report_(report), what_(what) {}

    void define(const std::string& name, const std::string& openSm, SourceLocation where,
                uint32_t index) {
        if (name.empty()) return;
        auto [first, fresh] = index_.emplace(openSm, Entry{index, name, where});
        if (fresh) {
            written_.emplace(name, Entry{index, openSm, where});
            return;
        }
        const bool sameAsWritten = sameName(first.name, name);
        report_.stricterError(
            "duplicate-name", where,
            std::string(what_) + " '" + name + "' is already defined at line " +
                std::to_string(first.where.line) +
                (sameAsWritten ? " (names are case-insensitive"
                               : " as '" + first.name +
                                     "' (OpenSM drops blanks outside quotes and ignores case") +
                "; OpenSM would silently use the first)");
    }

    // The definition of a name written without blanks or quotes ("default"), if any.
    std::optional<uint32_t> find(std::string_view name) const {
        const Entry* e = index_.find(name);
        if (!e) return std::nullopt;
        return e->index;
    }

    // What a reference resolves to in OpenSM, reporting where ibqos's reading differs:
    // nullopt when OpenSM finds no definition (the caller reports it).
    std::optional<uint32_t> resolve(const NameRef& ref) const {
        const Entry* found = index_.find(ref.openSm);
        if (!found) return std::nullopt;
        const Entry& e = *found;
        if (!sameName(e.name, ref.name)) {
            const bool mine = written_.find(ref.name) != nullptr;
            report_.warning("name-blanks", ref.location,
                            "'" + ref.name + "' refers to " + what_ + " '" + e.name + "' (line " +
                                std::to_string(e.where.line) +
                                ") only as OpenSM reads names, without blanks outside quotes" +
                                (mine ? ", not to the one written '" + ref.name + "'" : "") +
                                "; write the name as it is defined");
        }
        return e.index;
    }

    // Why a reference OpenSM cannot resolve fails: a hint when ibqos's reading would resolve
    // it (blanks OpenSM drops), when the names differ only in blanks, or else the defined name
    // closest to it (a misspelling).
    std::string hint(const NameRef& ref) const {
        if (const Entry* written = written_.find(ref.name)) {
            // The reference kept its blanks (it is quoted): the definition lost them.
            if (ref.openSm == ref.name)
                return " as OpenSM reads it: the definition at line " +
                       std::to_string(written->where.line) +
                       " is not quoted, so OpenSM reads it '" + written->name +
                       "'; quote the definition: \"" + ref.name + "\"";
            return " as OpenSM reads it ('" + ref.openSm +
                   "': blanks outside quotes are dropped); quote it: \"" + ref.name + "\"";
        }
        // Of the names that differ only in blanks, the first in folded order (deterministic).
        std::string key = withoutBlanks(ref.name);
        std::optional<std::string> best;
        const Entry* suggestion = nullptr;
        for (const auto& [k, e] : index_.entries()) {
            if (withoutBlanks(e.name) != key) continue;
            std::string order = folded(k);
            if (!best || order < *best) {
                best = std::move(order);
                suggestion = &e;
            }
        }
        if (suggestion) return "; did you mean '" + suggestion->name + "'?";
        std::vector<std::string_view> names;
        for (const auto& entry : index_.entries()) names.push_back(entry.second.name);
        std::string_view guess = closest(ref.name, names);
        return guess.empty() ? "" : "; did you mean '" + std::string(guess) + "'?";
    }

  private:
    static std::string withoutBlanks(std::string_view name) {
        std::string s;
        for (char c : name) {
            if (c != ' ' && c != '\t') s.push_back(foldCase(c));
        }
        return s;
    }

    struct Entry {
        uint32_t index;
        std::string name;  // as ibqos reads it
        SourceLocation where;
    };
    const Reporter& report_;
    const char* what_;
    FoldedIndex<Entry> index_;  // OpenSM's reading -> first definition
    // ibqos's reading -> definition (its `name` there is OpenSM's reading)
    FoldedIndex<Entry> written_;
};

// References to port groups: a match rule's group must exist (OpenSM's AC12 and AC13); a
// qos-setup scope's is checked by ibqos only (OpenSM ignores the section), and then no scope is
// applied.
class GroupReferences {
  public:
    GroupReferences(const Reporter& report, const Gaps& gaps, Policy& policy)
        : report_(report),
          gaps_(gaps),
          policy_(policy),
          groups_(report, ast::openKeyword(ast::BlockKind::PortGroup)) {
        for (uint32_t i = 0; i < policy.groups.size(); ++i) {
            const PortGroup& g = policy.groups[i];
            if (g.origin != GroupOrigin::Written) continue;
            groups_.define(g.name, g.openSmName, g.location, i);
        }
    }

    // Appends the groups the references name to `out`; false when one names none.
    bool resolve(const std::vector<NameRef>& refs, std::vector<uint32_t>& out,
                 bool inQosSetup = false) {
        bool ok = true;
        for (const NameRef& ref : refs) {
            if (auto index = groups_.resolve(ref)) {
                out.push_back(*index);
            } else if (gaps_.groupName) {
                ok = false;  // the group may be the one whose name a syntax error hid
            } else {
                std::string message =
                    "no port-group is named '" + ref.name + "'" + groups_.hint(ref);
                if (inQosSetup) {
                    report_.stricterError("undefined-group", ref.location, std::move(message));
                    policy_.qosSetupIgnored = true;
                } else {
                    report_.error("undefined-group", ref.location, std::move(message));
                }
                ok = false;
            }
        }
        return ok;
    }

  private:
    const Reporter& report_;
    const Gaps& gaps_;
    Policy& policy_;
    NameTable groups_;
};

// Each rule's level and groups. Rules with an unresolved reference are dropped, so that the
// Policy stays consistent.
void resolveRules(const Reporter& report, const Gaps& gaps, const NameTable& levels,
                  GroupReferences& groups, Policy& policy) {
    size_t kept = 0;
    size_t firstUlp = policy.firstUlpRule, keptBeforeUlps = 0;
    for (size_t r = 0; r < policy.rules.size(); ++r) {
        MatchRule& rule = policy.rules[r];
        bool ok = true;
        if (!rule.fromUlps) {
            if (auto index = levels.resolve(rule.levelName)) {
                rule.level = *index;
            } else if (!rule.levelName.name.empty() && !gaps.levelName) {
                report.error("undefined-level", rule.levelName.location,
                             "no qos-level is named '" + rule.levelName.name + "'" +
                                 levels.hint(rule.levelName));
                ok = false;
            } else {
                ok = false;  // no qos-level-name: reported already
            }
            ok &= groups.resolve(rule.sourceNames, rule.sources);
            ok &= groups.resolve(rule.destinationNames, rule.destinations);
        }
        if (!ok) continue;
        if (r < firstUlp) ++keptBeforeUlps;
        if (kept != r) policy.rules[kept] = std::move(rule);
        ++kept;
    }
    policy.rules.erase(policy.rules.begin() + static_cast<std::ptrdiff_t>(kept),
                       policy.rules.end());
    policy.firstUlpRule = keptBeforeUlps;
}

// The default level: a qos-level named "default" first, else the qos-ulps default line.
void resolveDefaultLevel(const Reporter& report, const Gaps& gaps, const NameTable& levels,
                         Policy& policy) {
    if (auto index = levels.find("default")) {
        if (policy.hasDefaultLevel && policy.levels[policy.defaultLevel].generated) {
            report.warning("default-shadowed", policy.levels[policy.defaultLevel].location,
                           "the qos-level 'default' at line " +
                               std::to_string(policy.levels[*index].location.line) +
                               " is the default level, so this qos-ulps default is not used "
                               "(as in OpenSM)");
        }
        policy.defaultLevel = *index;
        policy.hasDefaultLevel = true;
    } else if (!policy.hasDefaultLevel && !gaps.anySyntaxError) {
        // Where the default belongs: the qos-levels section, else the end of the file.
        std::string_view text = report.source.text();
        SourceLocation where =
            policy.qosLevelsLocation.line
                ? policy.qosLevelsLocation
                : report.source.locate(static_cast<uint32_t>(
                      text.empty() || text.back() != '\n' ? text.size() : text.size() - 1));
        report.error("missing-default", where,
                     "no default level: add a qos-level named 'default' or a 'default : <sl>' line "
                     "in qos-ulps (without one OpenSM drops the whole policy)");
    }
}

// Scheduling elements share one namespace; parents must be nodes.
void resolveSchedParents(const Reporter& report, const Gaps& gaps, HostSched& host) {
    NameTable elements(report, "scheduling element");
    for (uint32_t i = 0; i < host.nodes.size(); ++i)
        elements.define(host.nodes[i].name, host.nodes[i].name, host.nodes[i].location, i);
    NameTable leafTable(report, "scheduling element");
    for (uint32_t i = 0; i < host.leaves.size(); ++i) {
        if (elements.find(host.leaves[i].name)) {
            report.stricterError(
                "duplicate-name", host.leaves[i].location,
                "scheduling element '" + host.leaves[i].name + "' is already defined");
        }
        leafTable.define(host.leaves[i].name, host.leaves[i].name, host.leaves[i].location, i);
    }
    auto resolveParent = [&](SchedElement& e) {
        if (e.parentName.name.empty()) return;
        if (auto index = elements.find(e.parentName.name)) {
            e.parent = *index;
        } else if (gaps.elementName) {
            // the parent may be the element whose name a syntax error hid
        } else if (leafTable.find(e.parentName.name)) {
            report.stricterError(
                "undefined-parent", e.parentName.location,
                "'" + e.parentName.name + "' is a sched-leaf; only a sched-node can be a parent");
        } else {
            report.stricterError(
                "undefined-parent", e.parentName.location,
                "no sched-node is named '" + e.parentName.name + "'" + elements.hint(e.parentName));
        }
    };
    for (SchedElement& n : host.nodes) resolveParent(n);
    for (SchedLeaf& l : host.leaves) resolveParent(l);
}

}  // namespace

void resolveNames(const Reporter& report, const Gaps& gaps, Policy& policy) {
    GroupReferences groups(report, gaps, policy);
    NameTable levels(report, ast::openKeyword(ast::BlockKind::QosLevel));
    for (uint32_t i = 0; i < policy.levels.size(); ++i) {
        const QosLevel& l = policy.levels[i];
        if (l.generated) continue;
        levels.define(l.name, l.openSmName, l.location, i);
    }
    resolveRules(report, gaps, levels, groups, policy);
    for (VlArbScope& s : policy.vlarbScopes) {
        groups.resolve(s.groupNames, s.groups, true);
        groups.resolve(s.acrossNames, s.across, true);
    }
    for (Sl2VlScope& s : policy.sl2vlScopes) {
        groups.resolve(s.groupNames, s.groups, true);
        groups.resolve(s.acrossFromNames, s.acrossFrom, true);
        groups.resolve(s.acrossToNames, s.acrossTo, true);
    }
    resolveDefaultLevel(report, gaps, levels, policy);
    resolveSchedParents(report, gaps, policy.hostSched);
}

}  // namespace ibqos::passes

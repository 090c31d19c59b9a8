// SPDX-License-Identifier: MIT
// Pass 3: duplicate names, references to levels, groups and scheduling parents, the default level.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "compiler/passes.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::passes {

namespace {

std::string folded(std::string_view name) {
    std::string s(name);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string withoutBlanks(std::string_view name) {
    std::string s;
    for (char c : name) {
        if (c != ' ' && c != '\t')
            s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return s;
}

// Case-insensitive name -> index, first definition wins (as OpenSM's lookup).
class NameTable {
  public:
    NameTable(const Reporter& report, const char* what) : report_(report), what_(what) {}

    void define(const std::string& name, SourceLocation where, uint32_t index) {
        if (name.empty()) return;
        auto [it, fresh] = index_.emplace(folded(name), Entry{index, where});
        if (!fresh) {
            report_.stricterError(
                "duplicate-name", where,
                std::string(what_) + " '" + name + "' is already defined at line " +
                    std::to_string(it->second.where.line) +
                    " (names are case-insensitive; OpenSM would silently use the first)");
        }
    }

    std::optional<uint32_t> find(std::string_view name) const {
        auto it = index_.find(folded(name));
        if (it == index_.end()) return std::nullopt;
        return it->second.index;
    }

    // A name that only matches once blanks are dropped: OpenSM's reading of unquoted names.
    std::string blankHint(std::string_view name, const std::vector<std::string>& originals) const {
        std::string key = withoutBlanks(name);
        for (const std::string& original : originals) {
            if (withoutBlanks(original) == key) {
                return "; did you mean '" + original +
                       "'? (OpenSM drops blanks inside unquoted names, ibqos keeps them)";
            }
        }
        return "";
    }

  private:
    struct Entry {
        uint32_t index;
        SourceLocation where;
    };
    const Reporter& report_;
    const char* what_;
    std::map<std::string, Entry> index_;
};

}  // namespace

void resolveNames(const Reporter& report, const Gaps& gaps, Policy& policy) {
    NameTable groups(report, ast::openKeyword(ast::BlockKind::PortGroup));
    std::vector<std::string> groupNames;
    for (uint32_t i = 0; i < policy.groups.size(); ++i) {
        const PortGroup& g = policy.groups[i];
        if (g.origin != GroupOrigin::Written) continue;
        groups.define(g.name, g.location, i);
        groupNames.push_back(g.name);
    }
    NameTable levels(report, ast::openKeyword(ast::BlockKind::QosLevel));
    std::vector<std::string> levelNames;
    for (uint32_t i = 0; i < policy.levels.size(); ++i) {
        const QosLevel& l = policy.levels[i];
        if (l.generated) continue;
        levels.define(l.name, l.location, i);
        levelNames.push_back(l.name);
    }

    // A match rule's group must exist (OpenSM's AC12 and AC13); a qos-setup scope's is checked
    // by ibqos only (OpenSM ignores the section), and then no scope is applied.
    auto resolveGroups = [&](const std::vector<NameRef>& refs, std::vector<uint32_t>& out,
                             bool inQosSetup = false) {
        bool ok = true;
        for (const NameRef& ref : refs) {
            if (auto index = groups.find(ref.name)) {
                out.push_back(*index);
            } else if (gaps.groupName) {
                ok = false;  // the group may be the one whose name a syntax error hid
            } else {
                std::string message = "no port-group is named '" + ref.name + "'" +
                                      groups.blankHint(ref.name, groupNames);
                if (inQosSetup) {
                    report.stricterError("undefined-group", ref.location, std::move(message));
                    policy.qosSetupIgnored = true;
                } else {
                    report.error("undefined-group", ref.location, std::move(message));
                }
                ok = false;
            }
        }
        return ok;
    };

    // Rules with an unresolved reference are dropped, so that the Policy stays consistent.
    std::vector<MatchRule> kept;
    size_t firstUlp = policy.firstUlpRule, keptBeforeUlps = 0;
    for (size_t r = 0; r < policy.rules.size(); ++r) {
        MatchRule& rule = policy.rules[r];
        bool ok = true;
        if (!rule.fromUlps) {
            if (auto index = levels.find(rule.levelName.name)) {
                rule.level = *index;
            } else if (!rule.levelName.name.empty() && !gaps.levelName) {
                report.error("undefined-level", rule.levelName.location,
                             "no qos-level is named '" + rule.levelName.name + "'" +
                                 levels.blankHint(rule.levelName.name, levelNames));
                ok = false;
            } else {
                ok = false;  // no qos-level-name: reported already
            }
            ok &= resolveGroups(rule.sourceNames, rule.sources);
            ok &= resolveGroups(rule.destinationNames, rule.destinations);
        }
        if (!ok) continue;
        if (r < firstUlp) ++keptBeforeUlps;
        kept.push_back(std::move(rule));
    }
    policy.rules = std::move(kept);
    policy.firstUlpRule = keptBeforeUlps;

    for (VlArbScope& s : policy.vlarbScopes) {
        resolveGroups(s.groupNames, s.groups, true);
        resolveGroups(s.acrossNames, s.across, true);
    }
    for (Sl2VlScope& s : policy.sl2vlScopes) {
        resolveGroups(s.groupNames, s.groups, true);
        resolveGroups(s.acrossFromNames, s.acrossFrom, true);
        resolveGroups(s.acrossToNames, s.acrossTo, true);
    }

    // The default level: a qos-level named "default" first, else the qos-ulps default line.
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

    // Scheduling elements share one namespace; parents must be nodes.
    HostSched& host = policy.hostSched;
    NameTable elements(report, "scheduling element");
    std::vector<std::string> nodeNames;
    for (uint32_t i = 0; i < host.nodes.size(); ++i) {
        elements.define(host.nodes[i].name, host.nodes[i].location, i);
        nodeNames.push_back(host.nodes[i].name);
    }
    NameTable leafTable(report, "scheduling element");
    for (uint32_t i = 0; i < host.leaves.size(); ++i) {
        if (elements.find(host.leaves[i].name)) {
            report.stricterError(
                "duplicate-name", host.leaves[i].location,
                "scheduling element '" + host.leaves[i].name + "' is already defined");
        }
        leafTable.define(host.leaves[i].name, host.leaves[i].location, i);
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
            report.stricterError("undefined-parent", e.parentName.location,
                                 "no sched-node is named '" + e.parentName.name + "'");
        }
    };
    for (SchedElement& n : host.nodes) resolveParent(n);
    for (SchedLeaf& l : host.leaves) resolveParent(l);
}

}  // namespace ibqos::passes

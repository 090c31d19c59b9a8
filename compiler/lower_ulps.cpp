// SPDX-License-Identifier: MIT
// Pass 2: qos-ulps lines become match rules placed after every qos-match-rule, each pointing at
// one of OpenSM's implicit per-SL levels, exactly as OpenSM's parser builds them.
#include <iterator>
#include <string>

#include "common/text.hpp"
#include "compiler/passes.hpp"
#include "ib/qos.hpp"
#include "ib/service_id.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos::passes {

namespace {

using ast::Ulp;
using ast::UlpQualifier;

constexpr uint64_t SdpServiceId = 0x10000;
// RDS and iSER share the prefix: RDMA-CM's TCP port space.
constexpr uint64_t RdsIserServiceId = ib::TcpPortSpaceServiceIds;

// The one ServiceID a ULP word without a qualifier names (OpenSM's rds and iser, and the
// extension words), or 0 for the others.
uint64_t ulpServiceId(Ulp ulp) {
    switch (ulp) {
        case Ulp::Rds:
            return ib::Rds.serviceId();
        case Ulp::Iser:
            return ib::Iser.serviceId();
        case Ulp::NfsRdma:
            return ib::NfsRdma.serviceId();
        case Ulp::Lustre:
            return ib::Lustre.serviceId();
        case Ulp::NvmeRdma:
            return ib::NvmeRdma.serviceId();
        default:
            return 0;
    }
}

// The implicit level OpenSM gives every qos-ulps line with this SL.
uint32_t simpleLevel(Policy& policy, uint8_t sl) {
    std::string name = "SimpleQoSLevel_SL" + std::to_string(sl);
    for (uint32_t i = 0; i < policy.levels.size(); ++i) {
        if (policy.levels[i].generated && policy.levels[i].name == name) return i;
    }
    QosLevel level;
    level.name = name;
    level.openSmName = name;
    level.use = "qos-ulps lines with SL " + std::to_string(sl);
    level.generated = true;
    level.sl = sl;
    policy.levels.push_back(std::move(level));
    return static_cast<uint32_t>(policy.levels.size() - 1);
}

uint32_t guidGroup(Policy& policy, const UlpEntry& e, GroupOrigin origin) {
    static constexpr const char* names[] = {"", "_ULP_Targets_", "_ULP_Sources_",
                                            "_ULP_Sources_Targets_", "_SRP_Targets_"};
    static_assert(std::size(names) == static_cast<size_t>(GroupOrigin::SrpTargets) + 1);
    PortGroup g;
    g.name = names[static_cast<size_t>(origin)];
    g.openSmName = g.name;
    g.use = "Generated from ULP rules";
    g.location = e.location;
    g.origin = origin;
    g.guids = e.values;
    g.guidRanges = e.written;
    policy.groups.push_back(std::move(g));
    return static_cast<uint32_t>(policy.groups.size() - 1);
}

RangeSet shifted(const RangeSet& ports, uint64_t base) {
    std::vector<Range> out;
    for (const Range& r : ports.ranges()) out.push_back({r.lo + base, r.hi + base});
    return RangeSet::build(std::move(out));
}

// The level a 'default' qos-ulps line makes: OpenSM's default level (a later line replaces it).
void setDefaultLevel(Policy& policy, const UlpEntry& e) {
    QosLevel level;
    level.name = "SimpleQoSLevel_DEFAULT";
    level.openSmName = level.name;
    level.use = "the qos-ulps default";
    level.location = e.location;
    level.generated = true;
    level.sl = e.sl;
    if (policy.hasDefaultLevel) {
        policy.levels[policy.defaultLevel] = std::move(level);
    } else {
        policy.levels.push_back(std::move(level));
        policy.defaultLevel = static_cast<uint32_t>(policy.levels.size() - 1);
        policy.hasDefaultLevel = true;
    }
}

// What the rule of a qos-ulps line is for, as the line reads (and as OpenSM reads an extension).
std::string ruleUse(const UlpEntry& e) {
    std::string use = "qos-ulps: " + std::string(ast::ulpWord(e.ulp));
    if (e.qualifier != UlpQualifier::None) {
        use += ", " + std::string(ast::ulpQualifierWord(e.qualifier)) + " " +
               e.values.str(e.qualifier != UlpQualifier::PortNum);
    }
    use += " : " + std::to_string(e.sl);
    if (!ast::isOpenSmUlp(e.ulp)) {
        // What a stock OpenSM reads for it (the plain policy --emit opensm writes).
        use += " (extension: " + std::string(ast::ulpWord(Ulp::Any)) + ", " +
               std::string(ast::ulpQualifierWord(UlpQualifier::ServiceId)) + " " +
               hex(ulpServiceId(e.ulp)) + " : " + std::to_string(e.sl) + ")";
    }
    return use;
}

// The requests a qos-ulps line's rule matches: its ServiceIDs, PKeys, sources or destinations.
void selectRequests(Policy& policy, const UlpEntry& e, MatchRule& rule) {
    switch (e.qualifier) {
        case UlpQualifier::None:
            if (e.ulp == Ulp::Sdp)
                rule.serviceIds = RangeSet{{SdpServiceId, SdpServiceId + 0xffff}};
            // Like OpenSM's rds and iser lines, an extension word is its ServiceID alone:
            // what 'any, service-id <id> : <sl>' is.
            if (uint64_t id = ulpServiceId(e.ulp)) rule.serviceIds = RangeSet{{id, id}};
            if (e.ulp == Ulp::Ipoib) rule.pkeys = RangeSet{{ib::DefaultPkey, ib::DefaultPkey}};
            break;
        case UlpQualifier::PortNum:
            rule.serviceIds =
                shifted(e.values, e.ulp == Ulp::Sdp ? SdpServiceId : RdsIserServiceId);
            break;
        case UlpQualifier::ServiceId:
            rule.serviceIds = e.values;
            break;
        case UlpQualifier::Pkey:
            rule.pkeys = e.values;
            break;
        case UlpQualifier::TargetPortGuid:
            rule.destinations.push_back(guidGroup(
                policy, e, e.ulp == Ulp::Srp ? GroupOrigin::SrpTargets : GroupOrigin::UlpTargets));
            break;
        case UlpQualifier::SourcePortGuid:
            rule.sources.push_back(guidGroup(policy, e, GroupOrigin::UlpSources));
            break;
        case UlpQualifier::SourceTargetPortGuid: {
            uint32_t g = guidGroup(policy, e, GroupOrigin::UlpSourcesTargets);
            rule.sources.push_back(g);
            rule.destinations.push_back(g);
            break;
        }
    }
}

}  // namespace

void lowerUlps(const std::vector<UlpEntry>& ulps, const Reporter& report, Policy& policy) {
    policy.firstUlpRule = policy.rules.size();
    SourceLocation defaultAt;
    for (const UlpEntry& e : ulps) {
        if (e.ulp == Ulp::Default) {
            if (defaultAt.line != 0) {
                report.warning(
                    "duplicate-field", e.location,
                    "a second 'default' qos-ulps line: this one replaces the one at line " +
                        std::to_string(defaultAt.line) + " (as in OpenSM)");
            }
            defaultAt = e.location;
            setDefaultLevel(policy, e);
            continue;
        }

        MatchRule rule;
        rule.fromUlps = true;
        rule.location = e.location;
        rule.use = ruleUse(e);
        rule.level = simpleLevel(policy, e.sl);
        rule.levelName = {policy.levels[rule.level].name, policy.levels[rule.level].name,
                          e.location};

        selectRequests(policy, e, rule);
        rule.ipoib = e.ulp == Ulp::Ipoib;
        if (rule.ipoib && e.qualifier == UlpQualifier::Pkey) rule.ipoibPkeys = e.written;
        policy.rules.push_back(std::move(rule));
    }
}

}  // namespace ibqos::passes

// SPDX-License-Identifier: MIT
// Elaboration of qos-match-rules and qos-ulps lines.
#include "compiler/elaborator.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>

#include "ib/qos.hpp"

namespace ibqos::passes {

void Elaborator::matchRule(const ast::Block& b) {
    MatchRule rule;
    rule.location = at(b.open);
    std::bitset<64> seen;
    std::vector<Range> classes, sids, pkeys;
    std::optional<SourceLocation> classZeroAt;  // the first qos-class range that holds 0
    for (const ast::Item& item : b.items) {
        auto* f = boost::get<ast::Field>(&item);
        if (!f) continue;
        switch (f->key) {
            case Key::Use:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) rule.use = t->value;
                break;
            case Key::QosClass:
                if (auto* r = value<ast::RangeList>(*f)) {
                    ranges(*r, classes);
                    for (const ast::Range& range : *r) {
                        uint64_t top =
                            range.hi ? std::max(range.lo.value, range.hi->value) : range.lo.value;
                        uint64_t bottom =
                            range.hi ? std::min(range.lo.value, range.hi->value) : range.lo.value;
                        if (bottom == 0 && !classZeroAt) classZeroAt = at(range.lo);
                        if (top > ib::MaxQosClass) {
                            report_.warning("value-range", at(range.lo),
                                            "a QoS class has 12 bits: values above " +
                                                std::to_string(ib::MaxQosClass) + " never match");
                        }
                    }
                }
                break;
            case Key::Source:
                if (auto* t = value<ast::TextList>(*f)) names(*t, rule.sourceNames);
                break;
            case Key::Destination:
                if (auto* t = value<ast::TextList>(*f)) names(*t, rule.destinationNames);
                break;
            case Key::ServiceId:
                if (auto* r = value<ast::RangeList>(*f)) ranges(*r, sids);
                break;
            case Key::Pkey:
                if (auto* r = value<ast::RangeList>(*f)) ranges(*r, pkeys, nullptr, true);
                break;
            case Key::QosLevelName:
                if (auto* t = single<ast::Text>(*f, seen, b.kind)) rule.levelName = nameRef(*t);
                break;
            default:
                break;
        }
    }
    requireField(b, seen, Key::QosLevelName);
    if (classZeroAt) {
        // cma_query_ib_route() puts the TOS byte in every IPv4 request's QoS class, 0 when
        // the ULP set none: most kernel storage traffic asks with class 0 (research in
        // docs/sl-enforcement.md).
        report_.warning(
            "qos-class-zero", *classZeroAt,
            std::string("QoS class 0 is what every RDMA-CM connection over IPv4 asks with when "
                        "it set no TOS: the kernel's NFS over RDMA and iSER (which never set "
                        "one), Lustre without its 'tos' parameter, NVMe over Fabrics without "
                        "--tos, and every rdma-cm application that sets none; this rule "
                        "catches all of them") +
                (sids.empty() ? " (a service-id: narrows it, or start the range at 1)"
                              : " that use its service IDs"));
    }
    rule.qosClasses = RangeSet::build(std::move(classes));
    rule.serviceIds = RangeSet::build(std::move(sids));
    rule.pkeys = RangeSet::build(std::move(pkeys));
    policy_.rules.push_back(std::move(rule));
}

void Elaborator::qosUlps(const ast::Block& b) {
    size_t lines = 0;
    for (const ast::Item& item : b.items) {
        if (auto* line = boost::get<ast::x3::forward_ast<ast::UlpLine>>(&item)) {
            ++lines;
            if (line->get().located()) ulpLine(line->get());
        }
    }
    if (lines == 0) {
        report_.warning("empty-section", at(b.open),
                        "empty qos-ulps section (OpenSM rejects a qos-ulps section without a line)",
                        true);
    }
}

namespace {

// Whether a ULP takes a qualifier (none: '<ulp> : <sl>').
bool ulpTakes(ast::Ulp ulp, ast::UlpQualifier k) {
    using ast::Ulp;
    using ast::UlpQualifier;
    switch (ulp) {
        case Ulp::Default:
            return k == UlpQualifier::None;
        case Ulp::Any:
            return k != UlpQualifier::None && k != UlpQualifier::PortNum;
        case Ulp::Sdp:
        case Ulp::Rds:
        case Ulp::Iser:
            return k == UlpQualifier::None || k == UlpQualifier::PortNum;
        case Ulp::Srp:
            return k == UlpQualifier::TargetPortGuid;
        case Ulp::Ipoib:
            return k == UlpQualifier::None || k == UlpQualifier::Pkey;
        case Ulp::NfsRdma:
        case Ulp::Lustre:
        case Ulp::NvmeRdma:
            return k == UlpQualifier::None;
    }
    return false;
}

// The forms a ULP's lines take, for a message: '<ulp> : <sl>' and
// '<ulp>, <qualifier> <values> : <sl>'.
std::string ulpForms(ast::Ulp ulp) {
    using ast::Ulp;
    using ast::UlpQualifier;
    const std::string_view ulpName = ast::ulpWord(ulp);
    auto bare = [](std::string_view name) { return "'" + std::string(name) + " : <sl>'"; };
    auto qualified = [](std::string_view name, std::string_view qualifiers, const char* values) {
        return "'" + std::string(name) + ", " + std::string(qualifiers) + " " + values + " : <sl>'";
    };
    switch (ulp) {
        case Ulp::Default:
            return bare(ulpName);
        case Ulp::Any: {
            std::string qualifiers;
            for (size_t k = 0; k < std::size(ast::ulpQualifierWords); ++k) {
                if (ulpTakes(ulp, static_cast<UlpQualifier>(k)))
                    qualifiers +=
                        (qualifiers.empty() ? "" : "|") + std::string(ast::ulpQualifierWords[k]);
            }
            return qualified(ulpName, qualifiers, "<values>");
        }
        case Ulp::Sdp:
        case Ulp::Rds:
        case Ulp::Iser:
            return bare("<ulp>") + " or " +
                   qualified("<ulp>", ast::ulpQualifierWord(UlpQualifier::PortNum), "<ports>");
        case Ulp::Srp:
            return qualified(ulpName, ast::ulpQualifierWord(UlpQualifier::TargetPortGuid),
                             "<guids>");
        case Ulp::Ipoib:
            return bare(ulpName) + " or " +
                   qualified(ulpName, ast::ulpQualifierWord(UlpQualifier::Pkey), "<pkeys>");
        case Ulp::NfsRdma:
        case Ulp::Lustre:
        case Ulp::NvmeRdma:
            // An extension word names one ServiceID; other ports are OpenSM's own form.
            return bare(ulpName) + " (another port: " +
                   qualified(ast::ulpWord(Ulp::Any), ast::ulpQualifierWord(UlpQualifier::ServiceId),
                             "<ids>") +
                   ")";
    }
    return "";
}

}  // namespace

void Elaborator::ulpLine(const ast::UlpLine& line) {
    using ast::UlpQualifier;
    UlpEntry entry;
    entry.ulp = line.ulp;
    entry.location = at(line);
    auto sl = bounded(line.sl, 0, ib::MaxSl, "the SL of a qos-ulps line");
    if (!sl) return;
    entry.sl = static_cast<uint8_t>(*sl);

    UlpQualifier q = line.condition ? line.condition->qualifier.kind : UlpQualifier::None;
    SourceLocation qualifierAt = line.condition ? at(line.condition->qualifier) : entry.location;
    if (!ulpTakes(line.ulp, q)) {
        error("ulp-form", qualifierAt,
              "this is not a form of '" + std::string(ast::ulpWord(line.ulp)) + "': write " +
                  ulpForms(line.ulp));
        return;
    }
    entry.qualifier = q;
    if (line.condition) {
        std::vector<Range> values;
        bool pkey = q == UlpQualifier::Pkey;
        ranges(line.condition->ranges, values, &entry.written, pkey);
        if (values.empty()) return;  // every value was bad (reported)
        if (q == UlpQualifier::TargetPortGuid || q == UlpQualifier::SourcePortGuid ||
            q == UlpQualifier::SourceTargetPortGuid) {
            guidRangesOpenSmWalks(entry.written, 0);
        }
        if (q == UlpQualifier::PortNum) {
            for (const WrittenRange& w : entry.written) {
                if (w.range.hi > 0xffff) {
                    error("value-range", w.location,
                          "a TCP/IP port number is at most 65535 (0xffff)");
                    return;
                }
            }
        }
        entry.values = RangeSet::build(std::move(values));
    }
    ulps_.push_back(std::move(entry));
}

}  // namespace ibqos::passes

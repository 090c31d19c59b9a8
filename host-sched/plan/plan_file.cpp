// SPDX-License-Identifier: MIT
// planFileText and parsePlanText: a line per element, checked on the way in.
#include "host-sched/plan/plan_file.hpp"

#include <cctype>
#include <vector>

#include "common/source.hpp"
#include "common/text.hpp"

namespace ibqos::host {

namespace {

constexpr std::string_view Header = "ibqos-host-plan 1";

std::string optionalText(const std::optional<uint32_t>& v) {
    return v ? std::to_string(*v) : std::string("-");
}

// The words of a line: the first `count` blank-separated fields, then the rest of the line. A
// blank is what trim() drops (a carriage return too), so that a field never holds one.
std::vector<std::string_view> split(std::string_view line, size_t count) {
    std::vector<std::string_view> out;
    while (out.size() < count) {
        line = trim(line);
        size_t end = 0;
        while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
        if (end == 0) break;
        out.push_back(line.substr(0, end));
        line.remove_prefix(end);
    }
    out.push_back(trim(line));
    return out;
}

// A list of program names as one field: joined by commas, "-" when empty.
std::string programsField(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
    return out.empty() ? "-" : out;
}

std::vector<std::string> programsOf(std::string_view field) {
    std::vector<std::string> out;
    if (field == "-") return out;
    while (!field.empty()) {
        size_t comma = field.find(',');
        if (comma != 0) out.emplace_back(field.substr(0, comma));
        field.remove_prefix(comma == std::string_view::npos ? field.size() : comma + 1);
    }
    return out;
}

}  // namespace

std::string planFileText(const HostPlan& plan, std::string_view fromPolicy) {
    std::string out = "# ibqos host plan, compiled from " + std::string(fromPolicy) +
                      " by ibqos-agent; read by libibqos_preload.so\n" + std::string(Header) + "\n";
    for (const PlanElement& e : plan.elements()) {
        out += std::string(e.leaf ? "leaf " : "node ") +
               (e.parent ? std::to_string(*e.parent) : "-") + " " + std::to_string(e.bwShare) +
               " " + std::to_string(e.maxAvgBw) + " " + hex(e.sls.to_ulong(), 4) + " " +
               optionalText(e.pccSlot) + " " + (e.pccAlgorithm.empty() ? "-" : e.pccAlgorithm) +
               " " + e.name + "\n";
    }
    for (const SlEnforcement& e : plan.enforcement()) {
        out += std::string("enforce ") + slModeName(e.mode) + " " +
               std::to_string(e.resolveTimeoutMs) + " " + programsField(e.programs) + " " +
               programsField(e.exceptPrograms) + "\n";
    }
    return out;
}

std::optional<HostPlan> parsePlanText(std::string_view text, const std::string& name,
                                      std::string& error) {
    std::vector<PlanElement> elements;
    std::vector<SlEnforcement> enforcement;
    bool header = false;
    size_t lineNumber = 0;
    auto fail = [&](const std::string& why) {
        error = name + ":" + std::to_string(lineNumber) + ": " + why;
        return std::nullopt;
    };
    while (!text.empty()) {
        size_t end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++lineNumber;
        if (line.empty() || line.front() == '#') continue;
        if (!header) {
            if (line != Header)
                return fail("not an ibqos host plan (expected '" + std::string(Header) + "')");
            header = true;
            continue;
        }
        if (line.substr(0, 8) == "enforce ") {
            auto f = split(line, 5);
            auto timeout = f.size() == 6 ? parseNumber(f[2], 10) : std::nullopt;
            auto mode = f.size() == 6 ? slModeFromName(f[1]) : std::nullopt;
            if (!mode || !timeout || *timeout < 1 || *timeout > 1000 || !f[5].empty())
                return fail("expected 'enforce MODE TIMEOUT-MS PROGRAMS EXCEPT-PROGRAMS'");
            SlEnforcement e;
            e.mode = *mode;
            e.resolveTimeoutMs = static_cast<uint32_t>(*timeout);
            e.programs = programsOf(f[3]);
            e.exceptPrograms = programsOf(f[4]);
            enforcement.push_back(std::move(e));
            continue;
        }
        auto f = split(line, 7);
        if (f.size() != 8 || f[7].empty()) return fail("expected 8 fields");
        PlanElement e;
        if (f[0] != "node" && f[0] != "leaf")
            return fail("'" + std::string(f[0]) + "' is not node or leaf");
        e.leaf = f[0] == "leaf";
        if (f[1] != "-") {
            auto parent = parseNumber(f[1], 10);
            if (!parent || *parent >= elements.size() || elements[*parent].leaf)
                return fail("the parent must be an earlier node");
            e.parent = *parent;
        }
        auto bwShare = parseNumber(f[2], 10), maxAvgBw = parseNumber(f[3], 10),
             sls = parseNumber(f[4]);
        if (!bwShare || *bwShare > 100 || !maxAvgBw || *maxAvgBw > UINT32_MAX || !sls ||
            *sls > 0xffff || (!e.leaf && *sls != 0))
            return fail("bad bw-share, max-avg-bw or SL mask");
        e.bwShare = static_cast<uint32_t>(*bwShare);
        e.maxAvgBw = static_cast<uint32_t>(*maxAvgBw);
        e.sls = std::bitset<ib::SlCount>(*sls);
        if (f[5] != "-") {
            auto slot = parseNumber(f[5], 10);
            if (!slot || *slot > 15 || f[6] == "-") return fail("bad PCC slot");
            e.pccSlot = static_cast<uint32_t>(*slot);
            e.pccAlgorithm = std::string(f[6]);
        }
        e.name = std::string(f[7]);
        for (const PlanElement& other : elements) {
            if ((other.sls & e.sls).any()) return fail("an SL on two leaves");
        }
        elements.push_back(std::move(e));
    }
    if (!header) return fail("an empty file");
    return HostPlan::fromElements(std::move(elements), std::move(enforcement));
}

std::optional<HostPlan> readPlanFile(const std::string& path, std::string& error) {
    std::optional<std::string> text = SourceFile::readText(path, error);
    if (!text) {
        error += " (is ibqos-agent running?)";
        return std::nullopt;
    }
    return parsePlanText(*text, path, error);
}

}  // namespace ibqos::host

// SPDX-License-Identifier: MIT
// Long-run VL shares of every distinct arbitration setup, as a table and as an SVG bar chart;
// a share as a percentage, for them and for ibqos diff.
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "common/text.hpp"
#include "compiler/emit.hpp"
#include "compiler/vlarb_sim.hpp"
#include "ib/qos.hpp"

namespace ibqos {

std::vector<ArbitrationSetup> arbitrationSetups(const BoundPolicy& bound,
                                                const FabricTables& tables) {
    const Policy& policy = *bound.policy;
    std::map<std::tuple<uint32_t, uint32_t, uint8_t, uint8_t, uint8_t>, size_t> index;
    std::vector<ArbitrationSetup> setups;
    for (uint32_t i = 0; i < tables.ports.size(); ++i) {
        const PortTables& t = tables.ports[i];
        if (!t.hasVlArb) continue;
        auto key =
            std::make_tuple(t.vlArbHigh, t.vlArbLow, t.highLimit, t.vlArbHighCap, t.vlArbLowCap);
        auto [it, fresh] = index.emplace(key, setups.size());
        if (fresh) {
            ArbitrationSetup s;
            s.high = t.vlArbHigh;
            s.low = t.vlArbLow;
            s.highCap = t.vlArbHighCap;
            s.lowCap = t.vlArbLowCap;
            s.highLimit = t.highLimit;
            const VlArbTable& high = tables.vlarbs[t.vlArbHigh];
            const VlArbTable& low = tables.vlarbs[t.vlArbLow];
            s.shares =
                simulateArbitration(high.data(), std::min<size_t>(t.vlArbHighCap, 64), low.data(),
                                    std::min<size_t>(t.vlArbLowCap, 64), t.highLimit);
            const TableOrigin& origin = tables.origins[t.lowOrigin];
            if (origin.kind == TableOrigin::Kind::Bandwidth && origin.scope >= 0) {
                const VlArbScope& scope = policy.vlarbScopes[static_cast<size_t>(origin.scope)];
                double total = 0;
                for (const VlShare& v : *scope.bandwidth) total += v.percent;
                for (const VlShare& v : *scope.bandwidth) s.intended[v.vl] = v.percent / total;
                s.hasIntended = true;
            }
            setups.push_back(std::move(s));
        }
        setups[it->second].ports.push_back(i);
    }
    return setups;
}

std::string percentText(double share, PercentForm form) {
    char buf[32];
    std::snprintf(buf, sizeof buf, form == PercentForm::Column ? "%5.1f%%" : "%.3g%%", share * 100);
    return buf;
}

namespace {

std::string portsLabel(const Fabric& fabric, const FabricTables& tables, const ArbitrationSetup& s,
                       size_t max) {
    std::string out =
        std::to_string(s.ports.size()) + (s.ports.size() == 1 ? " port: " : " ports: ");
    for (size_t i = 0; i < s.ports.size() && i < max; ++i)
        out += (i ? ", " : "") + fabric.portName(tables.ports[s.ports[i]].port);
    if (s.ports.size() > max) out += ", ...";
    return out;
}

}  // namespace

std::string emitSharesText(const BoundPolicy& bound, const FabricTables& tables) {
    const Fabric& fabric = *bound.fabric;
    std::string out =
        "Long-run share of the link per VL when every VL has full-size (4096-byte) packets "
        "waiting.\n";
    std::vector<ArbitrationSetup> setups = arbitrationSetups(bound, tables);
    for (size_t n = 0; n < setups.size(); ++n) {
        const ArbitrationSetup& s = setups[n];
        out +=
            "\n== setup " + std::to_string(n + 1) + ", " + portsLabel(fabric, tables, s, 6) + "\n";
        out += "   VL high limit " + std::to_string(s.highLimit) +
               (s.highLimit == 255 ? " (unbounded)" : "") + "\n";
        out += s.hasIntended
                   ? "   VL   share   intended (of low priority)   achieved (of low priority)\n"
                   : "   VL   share\n";
        double lowTotal = 0;
        const VlArbTable& low = tables.vlarbs[s.low];
        std::array<double, ib::DataVlCount> lowOnly =
            simulateArbitration(nullptr, 0, low.data(), std::min<size_t>(s.lowCap, 64), 0);
        for (double v : lowOnly) lowTotal += v;
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            if (s.shares[vl] == 0 && s.intended[vl] == 0) continue;
            out += "   " + std::string(vl < 10 ? " " : "") + std::to_string(vl) + "  " +
                   percentText(s.shares[vl], PercentForm::Column);
            if (s.hasIntended) {
                out += "   " + percentText(s.intended[vl], PercentForm::Column) +
                       "                       " +
                       percentText(lowTotal > 0 ? lowOnly[vl] / lowTotal : 0, PercentForm::Column);
            }
            out += "\n";
        }
    }
    if (setups.empty()) out += "\nNo port has VL arbitration (every port has a single data VL).\n";
    return out;
}

std::string emitSharesSvg(const BoundPolicy& bound, const FabricTables& tables) {
    const Fabric& fabric = *bound.fabric;
    std::vector<ArbitrationSetup> setups = arbitrationSetups(bound, tables);
    const int barWidth = 22, gap = 6, chartHeight = 160, top = 40, left = 50, groupGap = 40;
    int width = left + 20;
    for (const ArbitrationSetup& s : setups) {
        int vls = 0;
        for (double v : s.shares) vls += v > 0;
        width += std::max(vls, 1) * (barWidth + gap) + groupGap;
    }
    width = std::max(width, 320);
    int height = top + chartHeight + 90;
    std::string svg;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" "
                  "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                  "<text x=\"%d\" y=\"20\" font-size=\"14\">Long-run link share per VL (full-size "
                  "packets)</text>\n",
                  width, height, left);
    svg += buf;
    for (int pct = 0; pct <= 100; pct += 25) {
        int y = top + chartHeight - chartHeight * pct / 100;
        std::snprintf(buf, sizeof buf,
                      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text "
                      "x=\"%d\" y=\"%d\" "
                      "text-anchor=\"end\">%d%%</text>\n",
                      left, y, width - 10, y, left - 4, y + 4, pct);
        svg += buf;
    }
    static const char* colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
    int x = left + 10;
    for (size_t n = 0; n < setups.size(); ++n) {
        const ArbitrationSetup& s = setups[n];
        int groupStart = x;
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            if (s.shares[vl] <= 0) continue;
            int h = static_cast<int>(s.shares[vl] * chartHeight + 0.5);
            std::snprintf(buf, sizeof buf,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                          "fill=\"%s\"><title>VL %u: %.1f%%</title></rect>\n"
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.0f%%</text>\n"
                          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">VL%u</text>\n",
                          x, top + chartHeight - h, barWidth, h, colours[vl], vl,
                          s.shares[vl] * 100, x + barWidth / 2, top + chartHeight - h - 3,
                          s.shares[vl] * 100, x + barWidth / 2, top + chartHeight + 14, vl);
            svg += buf;
            x += barWidth + gap;
        }
        if (x == groupStart) x += barWidth + gap;
        std::string label = "setup " + std::to_string(n + 1) + " (" +
                            std::to_string(s.ports.size()) +
                            (s.ports.size() == 1 ? " port)" : " ports)");
        std::snprintf(
            buf, sizeof buf,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">%s</text>\n",
            (groupStart + x - gap) / 2, top + chartHeight + 32, xmlText(label).c_str());
        svg += buf;
        std::string detail = "limit " + std::to_string(s.highLimit) + "; " +
                             fabric.portName(tables.ports[s.ports.front()].port);
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
                      (groupStart + x - gap) / 2, top + chartHeight + 48, xmlText(detail).c_str());
        svg += buf;
        x += groupGap;
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// An SVG of achieved against intended VL shares over the history window, the lines those of the
// metric table's share metrics.
#include <algorithm>
#include <cstdio>

#include "common/text.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics.hpp"

namespace ibqos::monitor {

namespace {

const char* const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                               "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
constexpr int Width = 720, PanelHeight = 170, Left = 60, Right = 150, Top = 50;
constexpr int PlotWidth = Width - Left - Right, PlotHeight = 110;
// The lines of a VL, solid first.
const ShareMetric* const ShareLines[] = {&AchievedShare, &IntendedShare};

// The ports that fell furthest below their intent within the window, worst first, at most
// `panels`.
std::vector<uint32_t> worstPorts(const Monitor& m, size_t panels) {
    std::vector<std::pair<double, uint32_t>> order;
    for (const auto& [port, points] : m.history()) {
        double worst = -1;
        for (const SharePoint& point : points)
            for (const VlShare& v : point.vls)
                if (v.competing) worst = std::max(worst, v.intended - v.achieved);
        order.emplace_back(-worst, port);
    }
    std::sort(order.begin(), order.end());
    if (order.size() > panels) order.resize(panels);
    std::vector<uint32_t> ports;
    for (const auto& [worst, port] : order) ports.push_back(port);
    return ports;
}

// Where a time and a share of one panel are drawn.
struct PanelScale {
    double start, end;
    int y0;
    double x(double t) const {
        return Left + PlotWidth * std::clamp((t - start) / (end - start), 0.0, 1.0);
    }
    double y(double share) const { return y0 + 20 + PlotHeight * (1 - share); }
};

// One share of a VL over the window as polyline points ("x,y x,y ").
std::string sharePoints(const std::deque<SharePoint>& points, const PanelScale& scale, unsigned vl,
                        double VlShare::*value) {
    char buf[64];
    std::string out;
    for (const SharePoint& p : points) {
        std::snprintf(buf, sizeof buf, "%.1f,%.1f ", scale.x(p.unixTime),
                      scale.y(p.vls[vl].*value));
        out += buf;
    }
    if (points.size() == 1) {  // one interval: a short mark of its own
        const SharePoint& p = points.front();
        std::snprintf(buf, sizeof buf, "%.1f,%.1f ", scale.x(p.unixTime) - 8,
                      scale.y(p.vls[vl].*value));
        out = buf + out;
    }
    return out;
}

// A panel: the port's name, a frame, the share axis, and each competing VL's lines and legend.
std::string panel(const Monitor& m, uint32_t port, const PanelScale& scale) {
    const std::deque<SharePoint>& points = m.history().at(port);
    const int y0 = scale.y0;
    std::string svg;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n"
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                  "stroke=\"#999\"/>\n",
                  Left, y0 + 12, xmlText(m.fabric().portName(port)).c_str(), Left, y0 + 20,
                  PlotWidth, PlotHeight);
    svg += buf;
    for (int pct = 0; pct <= 100; pct += 50) {
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n", Left - 4,
                      scale.y(pct / 100.0) + 4, pct);
        svg += buf;
    }
    int legend = 0;
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
        bool used = false;
        for (const SharePoint& p : points) used = used || p.vls[vl].competing;
        if (!used) continue;
        for (const ShareMetric* line : ShareLines)
            svg += "<polyline points=\"" + sharePoints(points, scale, vl, line->value) +
                   "\" fill=\"none\" stroke=\"" + colours[vl] + "\" " + line->svgStroke + "/>\n";
        const VlShare& latest = points.back().vls[vl];
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%d\" fill=\"%s\">VL %u: %.0f%% (intended "
                      "%.0f%%)</text>\n",
                      Left + PlotWidth + 10, y0 + 32 + 14 * legend++, colours[vl], vl,
                      latest.*AchievedShare.value * 100, latest.*IntendedShare.value * 100);
        svg += buf;
    }
    return svg;
}

}  // namespace

std::string sharesSvg(const Monitor& m, size_t panels) {
    const std::vector<uint32_t> ports = worstPorts(m, panels);
    const int height = Top + static_cast<int>(std::max<size_t>(ports.size(), 1)) * PanelHeight + 20;
    const double end = m.last().unixTime, start = end - m.options().window;
    std::string svg;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" "
                  "height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"22\" font-size=\"14\">"
                  "Achieved (solid) and intended (dashed) VL share of congested output ports, "
                  "last %.0f s</text>\n",
                  Width, height, Left, m.options().window);
    svg += buf;
    if (ports.empty()) {
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%d\">No output port was congested with a known VL mix "
                      "in the window.</text>\n",
                      Left, Top + 20);
        svg += buf;
    }
    for (size_t i = 0; i < ports.size(); ++i)
        svg += panel(m, ports[i], {start, end, Top + static_cast<int>(i) * PanelHeight});
    svg += "</svg>\n";
    return svg;
}

}  // namespace ibqos::monitor

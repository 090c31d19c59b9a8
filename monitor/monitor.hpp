// SPDX-License-Identifier: MIT
// Monitor: the collector over one fabric compilation, each scrape turned into a Report (deltas,
// rates, totals, VL shares against the intent, findings), and the recent share history.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "compiler/drift.hpp"
#include "compiler/fabric_compilation.hpp"
#include "ib/qos.hpp"
#include "monitor/collector.hpp"
#include "monitor/intent.hpp"
#include "monitor/report.hpp"

namespace ibqos::monitor {

struct MonitorOptions {
    CollectorOptions collector;
    double margin = 0.05;  // a VL this far (share of the link) below its intended share: a finding
    double window = 600;   // seconds of share history kept
    size_t historyPoints = 20000;  // history points kept at most over all ports
};

// One output port's VL shares at one scrape in which it was judged.
struct SharePoint {
    double unixTime = 0;
    std::array<VlShare, ib::DataVlCount> vls{};
};

class Monitor {
  public:
    // Reads the ports of the compiled fabric through the transport (borrowed). `drift` lists
    // where the live tables differ from the compiled ones; `learnt` is attribute support
    // already known.
    Monitor(PmaTransport& transport, std::unique_ptr<FabricCompilation> compiled,
            MonitorOptions options, std::vector<Drift> drift = {}, SupportTable learnt = {});

    // One scrape, and its report.
    const Report& scrape();
    // The last scrape's report (empty before the first).
    const Report& last() const { return report_; }

    const FabricCompilation& compiled() const { return *compiled_; }
    const Fabric& fabric() const { return compiled_->fabric(); }
    const Intent& intent() const { return intent_; }
    const Collector& collector() const { return collector_; }
    const MonitorOptions& options() const { return options_; }
    // Each output port's judged shares within the window, oldest first.
    const std::map<uint32_t, std::deque<SharePoint>>& history() const { return history_; }

  private:
    PortReport portReport(uint32_t target, const PortTarget& port, uint64_t scrape);
    void judge(PortReport& out, const std::vector<PortReport>& reports);
    void remember(const Report& report);
    // What a scrape found: nodes whose PMA did not answer, each port's findings, table drift.
    void addFindings(Report& report) const;
    void addPortFindings(const PortReport& p, Report& report) const;

    PmaTransport& transport_;
    std::unique_ptr<FabricCompilation> compiled_;
    Intent intent_;
    MonitorOptions options_;
    std::vector<Drift> drift_;
    Collector collector_;
    Report report_;
    std::vector<Totals> totals_;          // per target port, in report order
    std::vector<uint32_t> reportOfPort_;  // fabric port -> index into report ports
    std::map<uint32_t, std::deque<SharePoint>> history_;
    std::deque<uint32_t> historyOrder_;  // the port of every point kept, oldest first
    std::optional<Clock::time_point> lastStart_;
    size_t madsTotal_ = 0, timeoutsTotal_ = 0;
};

}  // namespace ibqos::monitor

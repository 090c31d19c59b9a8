// SPDX-License-Identifier: MIT
// The pages a scrape renders for the monitor's server and files.
#include "monitor/exposition.hpp"

namespace ibqos::monitor {

ScrapePages renderPages(const Monitor& m, bool metrics, bool report, bool svg) {
    auto shared = [](std::string text) {
        return std::make_shared<const std::string>(std::move(text));
    };
    ScrapePages pages;
    if (metrics) pages.metrics = shared(prometheusText(m));
    if (report) pages.report = shared(dumpJson(reportJson(m)) + "\n");
    if (svg) pages.svg = shared(sharesSvg(m));
    return pages;
}

void addPages(MetricsServer& server) {
    for (const auto& [path, type] : ServedPages) server.addPage(path, type);
}

void servePages(MetricsServer& server, const ScrapePages& pages) {
    const std::shared_ptr<const std::string>* bodies[] = {&pages.metrics, &pages.report,
                                                          &pages.svg};
    for (size_t i = 0; i < ServedPages.size(); ++i)
        if (*bodies[i]) server.publish(ServedPages[i].first, *bodies[i]);
}

}  // namespace ibqos::monitor

// SPDX-License-Identifier: MIT
// ibqos-test-monitor-server: the monitor's real HTTP server (MetricsServer, its limits and web
// config, the pages rendered once a scrape) over a fake leaf fabric of PMAs, for the hostile
// client tests. ibsim's libumad2sim takes every descriptor from 1024 on as one of its own
// devices, so a monitor on ibsim cannot hold a thousand connections; this one needs no
// simulator. Prints "listening PORT" once it serves; SIGTERM or SIGINT stops it.
//   ibqos-test-monitor-server --listen ADDR:PORT [--hosts N] [--interval SECONDS]
//       [--max-connections N] [--max-connections-per-client N] [--idle-timeout SECONDS]
//       [--web-config-file FILE]
#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "compiler/fabric_compilation.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics_server.hpp"
#include "monitor/monitor.hpp"
#include "policy-space/load_policy.hpp"
#include "tests/doubles/fake_fabric.hpp"

using namespace ibqos;
using namespace ibqos::monitor;

namespace {

volatile sig_atomic_t stopping = 0;

const char* const PolicyText =
    "qos-levels\n"
    "  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n"
    "  qos-level\n    name: bulk\n    sl: 1\n  end-qos-level\n"
    "end-qos-levels\n";

int usage(const char* why) {
    std::fprintf(stderr, "ibqos-test-monitor-server: %s\n", why);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string listen, webConfig;
    ServerLimits limits;
    unsigned hosts = 64;
    double interval = 0.5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string option = argv[i], value = argv[i + 1];
        const auto number = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 10));
        if (option == "--listen")
            listen = value;
        else if (option == "--hosts")
            hosts = number;
        else if (option == "--interval")
            interval = std::strtod(value.c_str(), nullptr);
        else if (option == "--max-connections")
            limits.connections = number;
        else if (option == "--max-connections-per-client")
            limits.connectionsPerClient = number;
        else if (option == "--idle-timeout")
            limits.timeoutSeconds = number;
        else if (option == "--web-config-file")
            webConfig = value;
        else
            return usage(("unknown option " + option).c_str());
    }
    if (listen.empty() || hosts == 0 || hosts > 254) return usage("--listen ADDR:PORT is needed");

    std::vector<std::string> names;
    for (unsigned h = 0; h < hosts; ++h) names.push_back("h" + std::to_string(h) + " HCA-1");
    FakeLeafFabric lab(names, "Leaf");
    SourceFile source("test.conf", PolicyText);
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    auto compiled = FabricCompilation::compile(policy, lab.fabric, OpenSmConf{}, diagnostics);
    if (diagnostics.hasErrors()) return usage("the built-in policy has errors");
    Monitor monitor(lab.pma, std::move(compiled), MonitorOptions{});

    std::string error;
    std::optional<WebConfig> web;
    if (!webConfig.empty() && !(web = loadWebConfig(webConfig, error))) return usage(error.c_str());
    auto server = MetricsServer::start(listen, limits, std::move(web), error);
    if (!server) return usage(error.c_str());
    addPages(*server);
    signal(SIGTERM, [](int) { stopping = 1; });
    signal(SIGINT, [](int) { stopping = 1; });
    signal(SIGPIPE, SIG_IGN);
    std::printf("listening %u\n", server->port());
    std::fflush(stdout);

    std::mt19937 random(1);
    while (!stopping) {
        for (unsigned h = 0; h < hosts; ++h) {
            lab.pma.counter(FakeLeafFabric::hostLid(h), 1,
                            ib::perf::Attribute::PortCountersExtended, 0) += random() % 1000000;
            lab.pma.counter(FakeLeafFabric::hostLid(h), 1, ib::perf::Attribute::PortVlOpData, 1) +=
                random() % 1000;
        }
        lab.pma.advance(std::chrono::milliseconds(static_cast<int>(interval * 1000)));
        monitor.scrape();
        servePages(*server, renderPages(monitor, true, true, true));
        std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    }
    std::printf("requests %llu\n", static_cast<unsigned long long>(server->requests()));
    return 0;
}

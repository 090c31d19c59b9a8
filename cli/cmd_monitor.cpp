// SPDX-License-Identifier: MIT
// ibqos monitor: per-VL and per-SL traffic against the policy's intent, once or as a service.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/live_fabric.hpp"
#include "common/json.hpp"
#include "compiler/compile_policy.hpp"
#include "compiler/drift.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics_server.hpp"
#include "monitor/monitor.hpp"
#include "monitor/umad_pma_transport.hpp"

namespace ibqos::cli {

namespace {

const char* const monitorFooter =
    R"(Reads the fabric's performance counters over the Performance Management class and sets them
against the policy: PortCounters and PortCountersExtended of every linked port, the per-VL
PortVLXmitWaitCounters, PortVLOpData and PortVLOpPackets, and the per-SL PortXmitDataSL and
PortRcvDataSL. A device kind that does not answer an attribute is asked once (one timeout per
kind and attribute family), not per port; a PMA that does not answer is reported and skipped.
Data counters count 4-byte words (reported in bytes); XmitWait is in device ticks; a counter
stopped at its maximum is reported as saturated, not as a rate. Counters are never cleared
unless --reset-after-read is given (other readers share them).

The fabric is discovered from the local port with SMPs (as ibnetdiscover does), and every port's
SL2VL and VL arbitration tables are compared with the compiled ones (as `ibqos verify` does;
--no-table-check skips that); or it is read from --topology (ibnetdiscover output, with LIDs).
Each SL is labelled with its qos-levels, each output port's VLs with the SLs its SL2VL tables
send on them, each port with its port groups. While an output port is congested (its XmitWait
rises), each VL's share of what the link carried (the link peer's PortVLOpData) is set against
the share its VL arbitration intends among the VLs that carried traffic; a VL below it by more
than --margin, and traffic on an SL that no qos-level uses, are findings.

  --once          two scrapes --interval apart, then the report: text, or one JSON object with
                  --json ({"scrape", "ports", "findings", "pmas", "support"}; see ibqos(1))
  (otherwise)     a service: a scrape every --interval, the last one served at
                  http://--listen/metrics (Prometheus), /report.json and /shares.svg, written to
                  --textfile (node_exporter's textfile collector) and --svg. Under systemd
                  (Type=notify) READY=1 after the first scrape, WATCHDOG=1 when WatchdogSec is
                  set; SIGHUP reads the policy again, discovers the fabric again and learns
                  attribute support afresh; SIGTERM stops.

Exit status: 0 success, 1 the policy has errors, 2 usage error, or the fabric cannot be reached.)";

struct MonitorCommandOptions {
    std::string policy;
    Value topology, partitions, sm, vls, portCaps, opensmConf, hca, port;
    Value interval, listen, textfile, svg, window, margin, timeout, retries, inFlight, madBudget,
        rediscover;
    bool once = false, json = false, resetAfterRead = false, noTableCheck = false;
};

void log(const std::string& message) {
    std::fprintf(stderr, "ibqos monitor: %s\n", message.c_str());
    std::fflush(stderr);
}

// A decimal number (seconds, a percentage) from an option, within [min, max].
double decimalOption(const std::string& name, const Value& value, double fallback, double min,
                     double max) {
    if (!value) return fallback;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < min || v > max) {
        char range[64];
        std::snprintf(range, sizeof range, "from %g to %g", min, max);
        throw UsageError{"--" + name + " takes a number " + range + ", not '" + *value + "'"};
    }
    return v;
}

// The policy compiled for the fabric the options name, and where its live tables differ.
struct Session {
    std::unique_ptr<Policy> policy;
    std::unique_ptr<FabricCompilation> compiled;
    std::vector<Drift> drift;
};

// Reads the policy and the fabric and compiles; nullopt when the policy has errors (printed).
std::optional<Session> openSession(const MonitorCommandOptions& o) {
    Inputs inputs;
    Diagnostics diagnostics;
    Session session;
    session.policy = std::make_unique<Policy>(loadPolicy(inputs.load(o.policy), diagnostics));
    if (diagnostics.hasErrors()) {
        emitDiagnostics(diagnostics, inputs, false);
        return std::nullopt;
    }
    if (o.topology) {
        FabricOptions fabric;
        fabric.topology = o.topology;
        fabric.partitions = o.partitions;
        fabric.sm = o.sm;
        fabric.vls = o.vls;
        fabric.portCaps = o.portCaps;
        fabric.opensmConf = o.opensmConf;
        session.compiled = compileForFabric(*session.policy, fabric, inputs, diagnostics);
    } else {
        OpenSmConf conf = loadOpenSmConf(o.opensmConf, inputs, diagnostics);
        auto live = discoverFabric(o.hca, o.port, o.sm, o.partitions, inputs, diagnostics);
        session.compiled =
            FabricCompilation::compile(*session.policy, live->fabric(), conf, diagnostics);
        if (!diagnostics.hasErrors() && !o.noTableCheck)
            session.drift = findDrift(*live, session.compiled->tables());
    }
    emitDiagnostics(diagnostics, inputs, false);
    if (diagnostics.hasErrors()) return std::nullopt;
    return session;
}

struct Outputs {
    Value textfile, svg;
    monitor::MetricsServer* server = nullptr;
};

// Publishes the last report where it goes each scrape (the JSON report and the SVG the server
// renders when asked). A file that cannot be written is an IoError.
void publish(const monitor::Monitor& m, const Outputs& out) {
    if (out.server || out.textfile) {
        auto metrics = std::make_shared<const std::string>(monitor::prometheusText(m));
        if (out.textfile) writeFileAtomically(*out.textfile, *metrics);
        if (out.server) out.server->publishMetrics(std::move(metrics));
    }
    if (out.svg) writeFileAtomically(*out.svg, monitor::sharesSvg(m));
}

std::string summary(const monitor::Report& r) {
    const monitor::ScrapeStats& s = r.stats;
    size_t unanswered = 0;
    for (const monitor::Finding& f : r.findings)
        unanswered += f.kind == monitor::Finding::Kind::PmaUnanswered;
    char line[256];
    std::snprintf(line, sizeof line,
                  "scrape %llu: %zu of %zu ports read, %zu MADs (%zu timeouts) in %.3f s, %zu "
                  "findings, %zu PMAs not answering",
                  static_cast<unsigned long long>(s.scrape), s.portsRead, s.portsPlanned, s.sent,
                  s.timedOut, s.seconds, r.findings.size(), unanswered);
    return line;
}

int timerFd(double seconds) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0) throw IoError{"timerfd_create failed"};
    itimerspec period{};
    auto ns = static_cast<long long>(seconds * 1e9);
    period.it_interval.tv_sec = static_cast<time_t>(ns / 1000000000);
    period.it_interval.tv_nsec = static_cast<long>(ns % 1000000000);
    period.it_value = period.it_interval;
    timerfd_settime(fd, 0, &period, nullptr);
    return fd;
}

bool expired(int fd) {
    uint64_t expirations = 0;
    return read(fd, &expirations, sizeof expirations) == sizeof expirations;
}

int monitorCommand(const MonitorCommandOptions& o) {
    if (o.json && !o.once) throw UsageError{"--json goes with --once"};
    if (o.vls && !o.topology) throw UsageError{"--vls goes with --topology"};
    if (o.portCaps && !o.topology) throw UsageError{"--port-caps goes with --topology"};
    if (!o.once && o.policy == "-")
        throw UsageError{"the service reads the policy again at SIGHUP: give a file, not '-'"};
    if (o.once && (o.listen || o.rediscover))
        throw UsageError{"--listen and --rediscover are for the service: not with --once"};
    monitor::MonitorOptions options;
    const double interval = decimalOption("interval", o.interval, 10, 0.01, 86400);
    options.window = decimalOption("window", o.window, 600, 1, 7 * 86400);
    options.margin = decimalOption("margin", o.margin, 5, 0, 100) / 100;
    const double rediscover = decimalOption("rediscover", o.rediscover, 0, 0, 7 * 86400);
    monitor::CollectorOptions& c = options.collector;
    c.timeout = std::chrono::milliseconds(numberOption("timeout", o.timeout, 500, 60000));
    c.retries = static_cast<unsigned>(numberOption("retries", o.retries, 1, 10));
    c.inFlight = static_cast<unsigned>(numberOption("in-flight", o.inFlight, 128, 4096));
    c.madBudget = numberOption("mad-budget", o.madBudget, 0, UINT32_MAX);
    c.resetAfterRead = o.resetAfterRead;
    if (c.timeout.count() == 0 || c.inFlight == 0)
        throw UsageError{"--timeout and --in-flight must be at least 1"};

    // A service's signals arrive through a file descriptor its loop polls. They are blocked
    // before any thread starts (the simulator's, the HTTP server's), so that every thread
    // inherits the mask and none takes a signal's default action.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    if (!o.once) {
        sigprocmask(SIG_BLOCK, &signals, nullptr);
        signal(SIGPIPE, SIG_IGN);
    }

    std::optional<Session> session = openSession(o);
    if (!session) return ExitInputErrors;
    std::string error;
    const probe::ProbeOptions local = localPortOptions(o.hca, o.port);
    auto transport = monitor::UmadPmaTransport::open(
        local.ca, local.port, static_cast<unsigned>(c.timeout.count()), error);
    if (!transport) throw IoError{error};
    auto m = std::make_unique<monitor::Monitor>(*transport, std::move(session->compiled), options,
                                                std::move(session->drift));
    Outputs outputs{o.textfile, o.svg, nullptr};

    if (o.once) {
        const monitor::Report& first = m->scrape();
        double left = interval - first.stats.seconds;
        if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
        m->scrape();
        publish(*m, outputs);
        if (o.json) {
            std::cout << dumpJson(monitor::reportJson(*m)) << "\n";
        } else {
            std::cout << monitor::reportText(*m);
        }
        return ExitOk;
    }

    int signalFd = signalfd(-1, &signals, SFD_CLOEXEC);
    if (signalFd < 0) throw IoError{"signalfd failed"};
    // The scrape loop holds this while it scrapes or replaces the monitor; the server's pages
    // take it to render from the last scrape.
    std::mutex monitorLock;
    std::unique_ptr<monitor::MetricsServer> server;
    if (o.listen) {
        server = monitor::MetricsServer::start(*o.listen, error);
        if (!server) {
            close(signalFd);
            throw IoError{error};
        }
        auto page = [&](auto render) {
            return [&, render]() -> std::optional<std::string> {
                std::lock_guard<std::mutex> lock(monitorLock);
                if (m->last().stats.scrape == 0) return std::nullopt;
                return render(*m);
            };
        };
        server->addPage("/report.json", "application/json", page([](const monitor::Monitor& m) {
                            return dumpJson(monitor::reportJson(m)) + "\n";
                        }));
        server->addPage("/shares.svg", "image/svg+xml",
                        page([](const monitor::Monitor& m) { return monitor::sharesSvg(m); }));
        outputs.server = server.get();
        log("serving http://" + *o.listen + "/metrics (port " + std::to_string(server->port()) +
            ")");
    }
    int scrapeTimer = timerFd(interval);
    int rediscoverTimer = rediscover > 0 ? timerFd(rediscover) : -1;
    uint64_t watchdogUs = 0;
    int watchdogTimer = sd_watchdog_enabled(0, &watchdogUs) > 0 && watchdogUs > 0
                            ? timerFd(static_cast<double>(watchdogUs) / 2e6)
                            : -1;

    auto scrapeAndPublish = [&] {
        std::lock_guard<std::mutex> lock(monitorLock);
        const monitor::Report& r = m->scrape();
        try {
            publish(*m, outputs);
        } catch (const IoError& e) {
            log(e.message);
        }
        return summary(r);
    };
    std::string last = scrapeAndPublish();
    log(last);
    sd_notify(0, ("READY=1\nSTATUS=" + last).c_str());

    // A new session (SIGHUP, or the rediscovery timer) replaces the monitor; a policy with
    // errors or a fabric that cannot be read leaves the current one in place.
    auto renew = [&](bool relearn) {
        try {
            std::optional<Session> fresh = openSession(o);
            if (!fresh) {
                log("the policy has errors: the current one is kept");
                return;
            }
            std::lock_guard<std::mutex> lock(monitorLock);
            monitor::SupportTable learnt =
                relearn ? monitor::SupportTable{} : m->collector().support();
            m = std::make_unique<monitor::Monitor>(*transport, std::move(fresh->compiled), options,
                                                   std::move(fresh->drift), std::move(learnt));
            session->policy = std::move(fresh->policy);
            log(std::string(relearn ? "SIGHUP: " : "") + "policy and fabric read again: " +
                std::to_string(m->collector().targets().size()) + " nodes");
        } catch (const IoError& e) {
            log(e.message + ": the current fabric is kept");
        } catch (const UsageError& e) {
            log(e.message + ": the current fabric is kept");
        } catch (const InputError& e) {
            log(e.message + ": the current fabric is kept");
        }
    };

    std::vector<pollfd> fds = {{signalFd, POLLIN, 0}, {scrapeTimer, POLLIN, 0}};
    if (rediscoverTimer >= 0) fds.push_back({rediscoverTimer, POLLIN, 0});
    if (watchdogTimer >= 0) fds.push_back({watchdogTimer, POLLIN, 0});
    size_t findings = m->last().findings.size();
    for (bool running = true; running;) {
        if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            throw IoError{"poll failed"};
        }
        for (const pollfd& p : fds) {
            if (!(p.revents & POLLIN)) continue;
            if (p.fd == watchdogTimer) {
                if (expired(watchdogTimer)) sd_notify(0, "WATCHDOG=1");
            } else if (p.fd == scrapeTimer) {
                if (!expired(scrapeTimer)) continue;
                last = scrapeAndPublish();
                if (m->last().findings.size() != findings) log(last);
                findings = m->last().findings.size();
                sd_notify(0, ("STATUS=" + last).c_str());
            } else if (p.fd == rediscoverTimer) {
                if (expired(rediscoverTimer)) renew(false);
            } else if (p.fd == signalFd) {
                signalfd_siginfo info{};
                if (read(signalFd, &info, sizeof info) != sizeof info) continue;
                if (info.ssi_signo == SIGHUP) {
                    sd_notify(0, "RELOADING=1");
                    renew(true);
                    sd_notify(0, "READY=1");
                } else {
                    log(std::string("stopping on ") +
                        (info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM"));
                    sd_notify(0, "STOPPING=1");
                    running = false;
                }
            }
        }
    }
    for (int fd : {signalFd, scrapeTimer, rediscoverTimer, watchdogTimer})
        if (fd >= 0) close(fd);
    return ExitOk;
}

}  // namespace

void addMonitor(Program& program) {
    auto o = std::make_shared<MonitorCommandOptions>();
    CLI::App& c = program.command("monitor", monitorSummary, monitorFooter,
                                  [o] { return monitorCommand(*o); });
    addPolicyArgument(c, o->policy);
    addValue(c, "--topology", o->topology, "FILE",
             "the fabric as ibnetdiscover wrote it (with LIDs) instead of discovering it");
    addValue(c, "--partitions", o->partitions, "FILE",
             "the partitions.conf the SM uses (default: the Default partition only)");
    addValue(c, "--sm", o->sm, "PORT",
             "the SM's port, for node-type SELF (default: the master SM the local port knows)");
    addValue(c, "--vls", o->vls, "N", "with --topology: data VLs assumed on every port");
    addValue(c, "--port-caps", o->portCaps, "FILE", "with --topology: per-port capabilities");
    addValue(c, "--opensm-conf", o->opensmConf, "FILE",
             "the opensm.conf the SM uses: its qos_* options give the tables qos-setup does not");
    addValue(c, "--hca", o->hca, "NAME",
             "the local HCA that discovers the fabric and sends the MADs (default: the first)");
    addValue(c, "--port", o->port, "N", "its port (default: the first active)");
    addValue(c, "--interval", o->interval, "SECONDS",
             "time between scrapes (default 10; decimals allowed)");
    c.add_flag("--once", o->once, "two scrapes --interval apart, then the report (below)");
    c.add_flag("--json", o->json, "with --once: the report as one JSON object");
    addValue(c, "--listen", o->listen, "[ADDRESS:]PORT",
             "serve /metrics, /report.json and /shares.svg over HTTP there");
    addValue(c, "--textfile", o->textfile, "FILE",
             "write each scrape's metrics there (node_exporter's textfile collector reads *.prom)");
    addValue(c, "--svg", o->svg, "FILE", "write the achieved and intended VL shares there");
    addValue(c, "--window", o->window, "SECONDS", "the SVG's history (default 600)");
    addValue(c, "--margin", o->margin, "PERCENT",
             "how far (share of the link) a VL may fall below its intended share before it is a "
             "finding (default 5)");
    addValue(c, "--timeout", o->timeout, "MS", "how long a PMA has to answer (default 500)");
    addValue(c, "--retries", o->retries, "N", "times a MAD is sent again (default 1)");
    addValue(c, "--in-flight", o->inFlight, "N",
             "MADs outstanding at most over the fabric, one per node (default 128)");
    addValue(c, "--mad-budget", o->madBudget, "N",
             "MADs a scrape may send (default: no bound); the next scrape goes on where it "
             "stopped");
    addValue(c, "--rediscover", o->rediscover, "SECONDS",
             "discover the fabric again this often (default: only at start and on SIGHUP)");
    c.add_flag("--reset-after-read", o->resetAfterRead,
               "clear the 32- and 16-bit counters after each read (other readers of the counters "
               "lose them)");
    c.add_flag("--no-table-check", o->noTableCheck,
               "do not compare the live SL2VL and VL arbitration tables with the compiled ones");
}

}  // namespace ibqos::cli

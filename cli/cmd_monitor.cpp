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
#include <condition_variable>
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
#include "compiler/drift.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics_server.hpp"
#include "monitor/monitor.hpp"
#include "monitor/umad_pma_transport.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::cli {

namespace {

const char* const monitorFooter =
    R"(Reads the fabric's performance counters over the Performance Management class and sets them
against the policy: PortCounters and PortCountersExtended of every linked port, the per-VL
PortVLXmitWaitCounters, PortVLOpData and PortVLOpPackets, and the per-SL PortXmitDataSL and
PortRcvDataSL. A device kind that does not answer an attribute is asked once (one timeout per
kind and attribute family), not per port; a PMA that does not answer is reported and skipped.
Data counters count 4-byte words (reported in bytes); XmitWait is in device ticks. The 64-bit
PortCountersExtended is read wherever the PMA has it, its XmitWait too where ClassPortInfo says
so. The per-VL and per-SL counters have no 64-bit form (PortVLOpData and PortXmitDataSL stop
after 16 GiB, under a second of HDR traffic; PortVLXmitWait is 16 bits): they are cleared after
each read (--reset-counters lanes, the default). OpenSM's PerfMgr reads only PortCounters and
PortCountersExtended, so clearing the others takes nothing from it; another tool that reads the
per-VL or per-SL counters loses what ibqos clears (--reset-counters none leaves every counter
as it is; all also clears PortCounters' 32-bit data, packet and XmitWait counters). An interval
in which a counter stopped at its maximum is reported as saturated and judged with what is known
(at least the maximum's worth); the next interval is judged afresh.

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
                  --textfile (node_exporter's textfile collector) and --svg. Each scrape
                  renders every page once; requests share it. Under systemd (Type=notify)
                  EXTEND_TIMEOUT_USEC while discovery and the first scrape run, READY=1 after
                  the first scrape, WATCHDOG=1 when WatchdogSec is set (also while a long
                  rediscovery or scrape runs); SIGHUP reads the policy again, discovers the
                  fabric again and learns attribute support afresh; SIGTERM stops.

The HTTP server listens on every address unless --listen names one. It holds at most
--max-connections connections, --max-connections-per-client from one address, and closes a
connection idle for --idle-timeout seconds; --web-config-file takes Prometheus' web-config
format (tls_server_config: cert_file, key_file, min_version, max_version; basic_auth_users:
bcrypt hashes; http_server_config: headers).

Exit status: 0 success, 1 the policy has errors, 2 usage error, or the fabric cannot be reached.)";

struct MonitorCommandOptions {
    std::string policy;
    FabricOptions fabric;
    LocalPortOptions local;
    Value interval, listen, textfile, svg, window, margin, timeout, retries, inFlight, madBudget,
        rediscover, resetCounters, webConfig, maxConnections, maxPerClient, idleTimeout;
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
    if (o.fabric.topology) {
        session.compiled = compileForFabric(*session.policy, o.fabric, inputs, diagnostics);
    } else {
        OpenSmConf conf = loadOpenSmConf(o.fabric.opensmConf, inputs, diagnostics);
        auto live = discoverFabric(o.local, o.fabric.sm, o.fabric.partitions, inputs, diagnostics);
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

// Renders the last report once for every output that takes it: the server's pages (requests
// share each rendering until the next scrape), the textfile and the SVG. A file that cannot be
// written is an IoError.
void publish(const monitor::Monitor& m, const Outputs& out) {
    const monitor::ScrapePages pages =
        monitor::renderPages(m, out.server || out.textfile, out.server, out.server || out.svg);
    if (out.textfile) writeFileAtomically(*out.textfile, *pages.metrics);
    if (out.svg) writeFileAtomically(*out.svg, *pages.svg);
    if (out.server) monitor::servePages(*out.server, pages);
}

// While it lives, a thread tells systemd every `period` that the service is at work (a long
// discovery or scrape runs on the loop that would otherwise tell it): `message` is
// EXTEND_TIMEOUT_USEC=... before READY=1, WATCHDOG=1 after. It gives up after `most`, so that
// a loop that truly hangs still trips the watchdog.
class Keepalive {
  public:
    Keepalive(std::string message, std::chrono::milliseconds period,
              std::chrono::milliseconds most = std::chrono::minutes(30))
        : thread_([this, message = std::move(message), period, most] {
              const auto end = std::chrono::steady_clock::now() + most;
              std::unique_lock<std::mutex> lock(lock_);
              do {
                  sd_notify(0, message.c_str());
              } while (!stop_.wait_for(lock, period, [this] { return stopping_; }) &&
                       std::chrono::steady_clock::now() < end);
          }) {}
    ~Keepalive() {
        {
            std::lock_guard<std::mutex> lock(lock_);
            stopping_ = true;
        }
        stop_.notify_one();
        thread_.join();
    }
    Keepalive(const Keepalive&) = delete;
    Keepalive& operator=(const Keepalive&) = delete;

  private:
    std::mutex lock_;
    std::condition_variable stop_;
    bool stopping_ = false;
    std::thread thread_;  // last: it starts once the members it reads exist
};

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

// --reset-counters, or --reset-after-read (its older spelling of `all`).
monitor::CounterReset resetOption(const MonitorCommandOptions& o) {
    if (o.resetAfterRead && o.resetCounters)
        throw UsageError{"--reset-after-read is --reset-counters all: give one of them"};
    if (o.resetAfterRead) return monitor::CounterReset::All;
    if (!o.resetCounters || *o.resetCounters == "lanes") return monitor::CounterReset::Lanes;
    if (*o.resetCounters == "none") return monitor::CounterReset::None;
    if (*o.resetCounters == "all") return monitor::CounterReset::All;
    throw UsageError{"--reset-counters takes none, lanes or all, not '" + *o.resetCounters + "'"};
}

// What the options ask for, read and checked before anything starts.
struct MonitorSettings {
    monitor::MonitorOptions options;
    double interval = 10, rediscover = 0;
    monitor::ServerLimits limits;
    std::optional<monitor::WebConfig> web;
};

// The web server's options: limits, and --web-config-file (read here: its errors are usage).
void readServerOptions(const MonitorCommandOptions& o, MonitorSettings& s) {
    if (o.once && (o.webConfig || o.maxConnections || o.maxPerClient || o.idleTimeout))
        throw UsageError{"the web server's options go with --listen, not with --once"};
    monitor::ServerLimits& limits = s.limits;
    limits.connections = static_cast<unsigned>(
        numberOption("max-connections", o.maxConnections, limits.connections, 1000000));
    limits.connectionsPerClient = static_cast<unsigned>(numberOption(
        "max-connections-per-client", o.maxPerClient, limits.connectionsPerClient, 1000000));
    limits.timeoutSeconds = static_cast<unsigned>(
        numberOption("idle-timeout", o.idleTimeout, limits.timeoutSeconds, 86400));
    if (limits.connections == 0 || limits.connectionsPerClient == 0 || limits.timeoutSeconds == 0)
        throw UsageError{
            "--max-connections, --max-connections-per-client and --idle-timeout "
            "must be at least 1"};
    if (o.webConfig) {
        if (!o.listen) throw UsageError{"--web-config-file goes with --listen"};
        std::string error;
        s.web = monitor::loadWebConfig(*o.webConfig, error);
        if (!s.web) throw IoError{error};
    }
}

MonitorSettings readSettings(const MonitorCommandOptions& o) {
    if (o.json && !o.once) throw UsageError{"--json goes with --once"};
    if (o.fabric.vls && !o.fabric.topology) throw UsageError{"--vls goes with --topology"};
    if (o.fabric.portCaps && !o.fabric.topology)
        throw UsageError{"--port-caps goes with --topology"};
    if (!o.once && o.policy == "-")
        throw UsageError{"the service reads the policy again at SIGHUP: give a file, not '-'"};
    if (o.once && (o.listen || o.rediscover))
        throw UsageError{"--listen and --rediscover are for the service: not with --once"};
    MonitorSettings s;
    monitor::MonitorOptions& options = s.options;
    s.interval = decimalOption("interval", o.interval, 10, 0.01, 86400);
    options.window = decimalOption("window", o.window, 600, 1, 7 * 86400);
    options.margin = decimalOption("margin", o.margin, 5, 0, 100) / 100;
    s.rediscover = decimalOption("rediscover", o.rediscover, 0, 0, 7 * 86400);
    monitor::CollectorOptions& c = options.collector;
    c.timeout = std::chrono::milliseconds(numberOption("timeout", o.timeout, 500, 60000));
    c.retries = static_cast<unsigned>(numberOption("retries", o.retries, 1, 10));
    c.inFlight = static_cast<unsigned>(numberOption("in-flight", o.inFlight, 128, 4096));
    c.madBudget = numberOption("mad-budget", o.madBudget, 0, UINT32_MAX);
    c.reset = resetOption(o);
    if (c.timeout.count() == 0 || c.inFlight == 0)
        throw UsageError{"--timeout and --in-flight must be at least 1"};
    readServerOptions(o, s);
    return s;
}

// The server, answering from the start (503 until the first scrape is published); null without
// --listen.
std::unique_ptr<monitor::MetricsServer> startServer(const MonitorCommandOptions& o,
                                                    MonitorSettings& s) {
    if (!o.listen) return nullptr;
    const bool tls = s.web && s.web->tls();
    std::string error;
    auto server = monitor::MetricsServer::start(*o.listen, s.limits, std::move(s.web), error);
    if (!server) throw IoError{error};
    monitor::addPages(*server);
    log("serving http" + std::string(tls ? "s" : "") + "://" + *o.listen + "/metrics (port " +
        std::to_string(server->port()) + ")");
    return server;
}

// --once: two scrapes an interval apart, the report printed.
int reportOnce(const MonitorCommandOptions& o, monitor::Monitor& m, double interval,
               const Outputs& outputs) {
    const monitor::Report& first = m.scrape();
    double left = interval - first.stats.seconds;
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
    m.scrape();
    publish(m, outputs);
    if (o.json) {
        std::cout << dumpJson(monitor::reportJson(m)) << "\n";
    } else {
        std::cout << monitor::reportText(m);
    }
    return ExitOk;
}

// The service: a loop over a signal descriptor and timers (scrape, rediscovery, watchdog), the
// only thread that touches the monitor (the server reads the pages published from it).
class MonitorService {
  public:
    MonitorService(const MonitorCommandOptions& o, const MonitorSettings& s,
                   monitor::UmadPmaTransport& transport, std::unique_ptr<monitor::Monitor> m,
                   Session& session, const Outputs& outputs)
        : o_(o),
          s_(s),
          transport_(transport),
          m_(std::move(m)),
          session_(session),
          outputs_(outputs) {
        watchdog_ = sd_watchdog_enabled(0, &watchdogUs_) > 0 && watchdogUs_ > 0;
    }

    // Runs until SIGTERM or SIGINT. `starting` tells systemd to wait until the first scrape.
    int run(const sigset_t& signals, std::unique_ptr<Keepalive> starting);

  private:
    // While the loop scrapes or rediscovers, the watchdog is told from another thread.
    std::unique_ptr<Keepalive> busy() const {
        return watchdog_ ? std::make_unique<Keepalive>(
                               "WATCHDOG=1", std::chrono::milliseconds(watchdogUs_ / 2000))
                         : nullptr;
    }
    std::string scrapeAndPublish() {
        const monitor::Report& r = m_->scrape();
        try {
            publish(*m_, outputs_);
        } catch (const IoError& e) {
            log(e.message);
        }
        return summary(r);
    }
    void renew(bool relearn);
    void scrapeTick();
    // Handles a signal; false to stop.
    bool onSignal(int signalFd);

    const MonitorCommandOptions& o_;
    const MonitorSettings& s_;
    monitor::UmadPmaTransport& transport_;
    std::unique_ptr<monitor::Monitor> m_;
    Session& session_;
    const Outputs& outputs_;
    bool watchdog_ = false;
    uint64_t watchdogUs_ = 0;
    std::string last_;
    size_t findings_ = 0;
};

// A new session (SIGHUP, or the rediscovery timer) replaces the monitor; a policy with errors
// or a fabric that cannot be read leaves the current one in place.
void MonitorService::renew(bool relearn) {
    auto keepalive = busy();
    try {
        std::optional<Session> fresh = openSession(o_);
        if (!fresh) {
            log("the policy has errors: the current one is kept");
            return;
        }
        monitor::SupportTable learnt =
            relearn ? monitor::SupportTable{} : m_->collector().support();
        m_ = std::make_unique<monitor::Monitor>(transport_, std::move(fresh->compiled), s_.options,
                                                std::move(fresh->drift), std::move(learnt));
        session_.policy = std::move(fresh->policy);
        log(std::string(relearn ? "SIGHUP: " : "") + "policy and fabric read again: " +
            std::to_string(m_->collector().targets().size()) + " nodes");
    } catch (const IoError& e) {
        log(e.message + ": the current fabric is kept");
    } catch (const UsageError& e) {
        log(e.message + ": the current fabric is kept");
    } catch (const InputError& e) {
        log(e.message + ": the current fabric is kept");
    }
}

void MonitorService::scrapeTick() {
    {
        auto keepalive = busy();
        last_ = scrapeAndPublish();
    }
    if (m_->last().findings.size() != findings_) log(last_);
    findings_ = m_->last().findings.size();
    sd_notify(0, ("STATUS=" + last_).c_str());
}

bool MonitorService::onSignal(int signalFd) {
    signalfd_siginfo info{};
    if (read(signalFd, &info, sizeof info) != sizeof info) return true;
    if (info.ssi_signo == SIGHUP) {
        sd_notify(0, "RELOADING=1");
        renew(true);
        sd_notify(0, "READY=1");
        return true;
    }
    log(std::string("stopping on ") + (info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM"));
    sd_notify(0, "STOPPING=1");
    return false;
}

int MonitorService::run(const sigset_t& signals, std::unique_ptr<Keepalive> starting) {
    int signalFd = signalfd(-1, &signals, SFD_CLOEXEC);
    if (signalFd < 0) throw IoError{"signalfd failed"};
    int scrapeTimer = timerFd(s_.interval);
    int rediscoverTimer = s_.rediscover > 0 ? timerFd(s_.rediscover) : -1;
    int watchdogTimer = watchdog_ ? timerFd(static_cast<double>(watchdogUs_) / 2e6) : -1;

    last_ = scrapeAndPublish();
    starting.reset();
    log(last_);
    sd_notify(0, ("READY=1\nSTATUS=" + last_).c_str());

    std::vector<pollfd> fds = {{signalFd, POLLIN, 0}, {scrapeTimer, POLLIN, 0}};
    if (rediscoverTimer >= 0) fds.push_back({rediscoverTimer, POLLIN, 0});
    if (watchdogTimer >= 0) fds.push_back({watchdogTimer, POLLIN, 0});
    findings_ = m_->last().findings.size();
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
                if (expired(scrapeTimer)) scrapeTick();
            } else if (p.fd == rediscoverTimer) {
                if (expired(rediscoverTimer)) renew(false);
            } else if (p.fd == signalFd) {
                running = onSignal(signalFd) && running;
            }
        }
    }
    for (int fd : {signalFd, scrapeTimer, rediscoverTimer, watchdogTimer})
        if (fd >= 0) close(fd);
    return ExitOk;
}

int monitorCommand(const MonitorCommandOptions& o) {
    MonitorSettings settings = readSettings(o);

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

    std::unique_ptr<monitor::MetricsServer> server = startServer(o, settings);
    Outputs outputs{o.textfile, o.svg, server.get()};
    // Under systemd, discovery and the first scrape of a large fabric may outlast the start
    // timeout: each EXTEND_TIMEOUT_USEC gives 30 s more, sent every 10 s until READY=1.
    auto starting = o.once ? nullptr
                           : std::make_unique<Keepalive>("EXTEND_TIMEOUT_USEC=30000000",
                                                         std::chrono::seconds(10));
    std::optional<Session> session = openSession(o);
    if (!session) return ExitInputErrors;
    const probe::ProbeOptions local = localPortOptions(o.local);
    const monitor::CollectorOptions& c = settings.options.collector;
    std::string error;
    auto transport = monitor::UmadPmaTransport::open(
        local.ca, local.port, static_cast<unsigned>(c.timeout.count()), error);
    if (!transport) throw IoError{error};
    auto m = std::make_unique<monitor::Monitor>(*transport, std::move(session->compiled),
                                                settings.options, std::move(session->drift));
    if (o.once) return reportOnce(o, *m, settings.interval, outputs);
    MonitorService service(o, settings, *transport, std::move(m), *session, outputs);
    return service.run(signals, std::move(starting));
}

}  // namespace

void addMonitor(Program& program) {
    auto o = std::make_shared<MonitorCommandOptions>();
    CLI::App& c = program.command("monitor", monitorSummary, monitorFooter,
                                  [o] { return monitorCommand(*o); });
    addPolicyArgument(c, o->policy);
    o->fabric.addLive(c, true);
    o->local.add(c);
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
    addValue(c, "--reset-counters", o->resetCounters, "none|lanes|all",
             "which counters are cleared after each read: lanes (default) the per-VL and per-SL "
             "ones, all also PortCounters' (see below)");
    c.add_flag("--reset-after-read", o->resetAfterRead, "the same as --reset-counters all");
    addValue(c, "--web-config-file", o->webConfig, "FILE",
             "TLS and basic auth for the server, in Prometheus' web-config format");
    addValue(c, "--max-connections", o->maxConnections, "N",
             "connections the server holds at most (default 8192)");
    addValue(c, "--max-connections-per-client", o->maxPerClient, "N",
             "connections from one address at most (default 128)");
    addValue(c, "--idle-timeout", o->idleTimeout, "SECONDS",
             "close a connection idle this long (default 10)");
    c.add_flag("--no-table-check", o->noTableCheck,
               "do not compare the live SL2VL and VL arbitration tables with the compiled ones");
}

}  // namespace ibqos::cli

// SPDX-License-Identifier: MIT
// ibqos-agent run and status: the daemon in the foreground, and a look at what it knows.
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"
#include "common/json.hpp"
#include "host-sched/agent/agent_server.hpp"
#include "host-sched/agent/path_table.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/agent/qp_owners.hpp"
#include "host-sched/agent/sa_path_source.hpp"
#include "host-sched/pcc/pcc_mango.hpp"
#include "host-sched/plan/plan_file.hpp"
#ifdef IBQOS_AGENT_TEST_BUILD
// The test build (tests/host-sched): QP owners from the verbs stand-in's file, not the kernel.
#include "tests/doubles/fake_qp_owners.hpp"
#endif

namespace ibqos::cli {

namespace {

const char* const runFooter =
    R"(The host daemon. It serves a unix socket where libibqos_preload.so, loaded into applications
with LD_PRELOAD, reports every QP that reaches RTR (device, QP number, SL) and every QP
destroyed. It steers a QP only when the kernel says the reporting process created it (rdma
netlink's QP owners against the connection's SO_PEERCRED, in the daemon's PID namespace);
other reports are refused and logged. For each QP accepted it applies the congestion-control
slot of the leaf the SL attaches to, registering each slot's algorithm in the device's PCC
engine first; it forgets the QPs of a process whose connection closes, and takes them off
their slot. Each user (uid) has its own limits of connections, tracked QPs, questions waiting
for the SA and answers queued unread (--max-...-per-user); the log writes at most 10 lines of
a kind a minute and then says how many it held back. It runs in the foreground (systemd starts it);
SIGTERM or SIGINT stop it cleanly, SIGHUP re-reads the policy (a policy with errors is
reported and the current one kept). It writes the policy's compiled host plan, which the
library reads, when it starts and at every reload. Under systemd (Type=notify) it reports
READY=1 once the socket serves, RELOADING=1 and READY=1 around a reload, STOPPING=1, and,
when the unit sets WatchdogSec, WATCHDOG=1 from its serving loop at half that interval.

SL enforcement (the policy's sl-enforcement blocks): the library asks the daemon for the SA's
SL of each QP's path at RTR (and of each UD address handle). The daemon answers from a cache
of PathRecord answers per (port, SLID, DLID, P_Key), bounded by --cache-size entries and
--cache-lifetime seconds and emptied at SIGHUP. On a miss, one thread asks the SA: the paths
waiting go out together, at most --sa-in-flight at once, each path once however many QPs wait
for it; beyond 4096 paths waiting, questions are answered busy and their QPs keep their own
SL (counted). An answer older than --cache-refresh seconds is still given and its path asked
again in the background; when the SA's answer for a path has changed (a new policy, a changed
fabric), the whole cache is dropped. The daemon publishes its answers in a shared-memory
table (--path-table, mapped read-only by the library, IBQOS_PATH_TABLE), so that an RTR on a
path the host knows costs a lookup; an answer there counts until the refresh age. Every SL
replaced, every audit difference and every fallback is counted (ibqos-agent status) and
audit differences are logged.

Exit status: 0 stopped by a signal, 1 the policy has errors, 2 usage or I/O error.)";

const char* const statusFooter =
    R"(Asks a running daemon for every QP it knows: process, device, QP number and type, SL, the
leaf of that SL, whether the application's preload library attached it, the PCC slot the
daemon applied, and what SL enforcement did: the mode, the SL the application chose, the SA's
SL and the outcome (agrees, replaced, differs, no-answer, no-path, cm-path, ethernet,
multicast, router, reply). Then the daemon's counters. --json prints {"qps": [{"pid",
"device", "port", "dlid", "qpn", "type", "sl", "leaf", "attached", "pcc_slot",
"pcc_algorithm", "mode", "app_sl", "sa_sl", "outcome"}], "counters": {"resolves", "cache_hits",
"sa_queries", "sa_failed", "busy", "replaced", "differs", "no_answer", "invalidations"}}.

Exit status: 0 success, 2 usage error or no daemon answering.)";

struct RunOptions {
    PolicyArgument policy;
    Value socket, plan, intervalUs, threads, saInFlight, cacheSize, cacheLifetime, cacheRefresh,
        saTimeout, pathTable, userConnections, userQps, userResolves, userAnswers;
    std::string pcc = "auto";
};

struct StatusOptions {
    Value socket, timeout;
    bool json = false;
};

void log(const std::string& message) {
    std::fprintf(stderr, "ibqos-agent: %s\n", message.c_str());
    std::fflush(stderr);
}

// Tells the service manager how the daemon is (nothing happens without $NOTIFY_SOCKET).
void notify(const std::string& state) { sd_notify(0, state.c_str()); }

// A timer at half the unit's WatchdogSec, polled by the serving loop itself: the pings stop
// when the loop does. -1 when systemd asks for no watchdog.
int watchdogTimer() {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return -1;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0) throw IoError{"timerfd_create failed"};
    const uint64_t half = usec / 2 > 0 ? usec / 2 : 1;
    itimerspec period{};
    period.it_interval.tv_sec = static_cast<time_t>(half / 1000000);
    period.it_interval.tv_nsec = static_cast<long>(half % 1000000 * 1000);
    period.it_value = period.it_interval;
    timerfd_settime(fd, 0, &period, nullptr);
    return fd;
}

// The SA cache's options and the SA client's retries, from the command line.
host::ResolverOptions resolverOptionsOf(const RunOptions& o, host::RetryPolicy& retry) {
    host::ResolverOptions resolverOptions;
    resolverOptions.inFlight = numberOption("sa-in-flight", o.saInFlight, 16, 1024);
    resolverOptions.cacheSize = numberOption("cache-size", o.cacheSize, 65536, 1u << 24);
    resolverOptions.lifetime =
        std::chrono::seconds(numberOption("cache-lifetime", o.cacheLifetime, 60, 86400));
    resolverOptions.refresh =
        std::chrono::seconds(numberOption("cache-refresh", o.cacheRefresh, 10, 86400));
    retry.firstTimeout =
        std::chrono::milliseconds(numberOption("sa-timeout", o.saTimeout, 200, 60000));
    retry.retries = 2;
    if (resolverOptions.inFlight == 0 || resolverOptions.cacheSize == 0 ||
        retry.firstTimeout.count() == 0 || resolverOptions.lifetime.count() == 0)
        throw UsageError{
            "--sa-in-flight, --cache-size, --cache-lifetime and --sa-timeout must be at least 1"};
    return resolverOptions;
}

// The per-user limits, from the command line.
host::ClientLimits clientLimitsOf(const RunOptions& o) {
    host::ClientLimits limits;
    limits.connections =
        numberOption("max-connections-per-user", o.userConnections, limits.connections, 1u << 20);
    limits.qps = numberOption("max-qps-per-user", o.userQps, limits.qps, 1u << 24);
    limits.resolves =
        numberOption("max-resolves-per-user", o.userResolves, limits.resolves, 1u << 20);
    limits.answers = numberOption("max-answers-per-user", o.userAnswers, limits.answers, 1u << 24);
    if (limits.connections == 0 || limits.qps == 0 || limits.resolves == 0 || limits.answers == 0)
        throw UsageError{"the --max-...-per-user limits must be at least 1"};
    return limits;
}

// SIGTERM, SIGINT and SIGHUP blocked and read from the descriptor returned (SIGPIPE ignored).
int signalDescriptor() {
    // Signals arrive through a file descriptor the server polls, never in the middle of work.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);
    int signalFd = signalfd(-1, &signals, SFD_CLOEXEC);
    if (signalFd < 0) throw IoError{"signalfd failed"};
    return signalFd;
}

// How many connections the server takes, after raising the descriptor limit.
size_t maxClients() {
    // Every connection is a descriptor: all users together hold what the limit leaves after
    // the agent's own (its sockets, the engines, the SA client, the log).
    constexpr size_t OwnDescriptors = 64;
    constexpr size_t MaxConnections = 65536;
    const size_t descriptors = host::raiseDescriptorLimit();
    return std::min(MaxConnections, descriptors > 2 * OwnDescriptors ? descriptors - OwnDescriptors
                                                                     : OwnDescriptors);
}

// One signal read from signalFd: false to stop (SIGTERM, SIGINT); SIGHUP reloads the policy.
bool takeSignal(int signalFd, const std::string& policyPath, const std::string& planPath,
                host::AgentState& state) {
    signalfd_siginfo info{};
    if (read(signalFd, &info, sizeof info) != sizeof info) return true;
    if (info.ssi_signo != SIGHUP) {
        log(std::string("stopping on ") + (info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM"));
        notify("STOPPING=1");
        return false;
    }
    notify("RELOADING=1");
    std::string why;
    auto fresh = host::loadHostPlan(policyPath, why);
    if (!fresh) {
        log("SIGHUP: keeping the current plan: " + why);
    } else {
        try {
            writeFileAtomically(planPath, host::planFileText(*fresh, policyPath));
        } catch (const IoError& e) {
            log("SIGHUP: " + e.message + "; applications keep the plan they read");
        }
        state.replacePlan(std::move(*fresh));
        log("SIGHUP: policy " + policyPath + " reloaded");
    }
    state.invalidatePaths();  // the SM may have a new policy too: ask the SA afresh
    notify("READY=1");
    return true;
}

// Who owns each reported QP: the kernel's resource tracking, never the message.
std::unique_ptr<host::QpOwners> qpOwners() {
#ifdef IBQOS_AGENT_TEST_BUILD
    const char* ownersFile = std::getenv("STANDIN_QP_OWNERS");
    return std::make_unique<host::QpOwnersFile>(ownersFile ? ownersFile : "");
#else
    return host::makeNetlinkQpOwners();
#endif
}

// What the daemon serves, for the log and the service manager.
std::string servingText(const std::string& socketPath, const std::string& policyPath,
                        const host::HostPlan& plan, const std::string& engine) {
    size_t leaves = 0;
    for (const auto& e : plan.elements()) leaves += e.leaf;
    size_t slots = plan.slots().size();
    return "serving " + socketPath + " for policy " + policyPath + " (" + std::to_string(leaves) +
           " leaves, " + std::to_string(slots) + " PCC slots, engine " + engine + ")";
}

int runDaemon(const RunOptions& o) {
    std::string policyPath = o.policy.get().value_or(host::defaultPolicyPath());
    if (policyPath == "-")
        throw UsageError{"run reads the policy again at SIGHUP: give a file, not '-'"};
    std::string socketPath = o.socket.value_or(host::DefaultAgentSocket);
    std::string planPath = o.plan.value_or(host::DefaultPlanPath);
    const std::string& engine = o.pcc;
    auto interval = static_cast<uint32_t>(numberOption("interval-us", o.intervalUs, 10, 1000000));
    auto threads = static_cast<unsigned>(numberOption("threads", o.threads, 1, 1024));
    if (interval == 0 || threads == 0)
        throw UsageError{"--interval-us and --threads must be at least 1"};

    host::RetryPolicy retry;
    const host::ResolverOptions resolverOptions = resolverOptionsOf(o, retry);
    const host::ClientLimits limits = clientLimitsOf(o);

    int exitCode = ExitOk;
    auto plan = loadPlanOrReport(policyPath, false, exitCode);
    if (!plan) return exitCode;
    writeFileAtomically(planPath, host::planFileText(*plan, policyPath));
    std::string error;
    if (engine == "mango" && !host::libmangoAvailable(error)) throw IoError{error};

    const int signalFd = signalDescriptor();

    host::PccEngineOpener opener = [engine](const std::string& device, std::string& error) {
        return host::openPccEngine(engine, device, error);
    };
    const std::string serving = servingText(socketPath, policyPath, *plan, engine);
    host::AgentState state(std::move(*plan), opener, interval, threads, log);
    state.setLimits(limits);
    std::unique_ptr<host::QpOwners> owners = qpOwners();
    state.setQpOwners(owners.get());
    host::SlResolver resolver([retry] { return host::makeSaPathSource(retry, log); },
                              resolverOptions);
    state.setResolver(&resolver);
    // The answers preloaded processes read without asking (a failure only costs speed).
    const std::string tablePath = o.pathTable.value_or(host::DefaultPathTable);
    std::optional<host::PathTable> table =
        host::PathTable::create(tablePath, resolverOptions.cacheSize, error);
    if (table) {
        resolver.setTable(&*table);
    } else {
        log(error + "; every RTR under SL enforcement asks the daemon");
    }
    host::AgentServer server(state, socketPath, maxClients());
    if (!server.listen(error)) {
        close(signalFd);
        throw IoError{error};
    }
    log(serving);
    const int timerFd = watchdogTimer();
    notify("READY=1\nSTATUS=" + serving);

    std::vector<int> events{signalFd};
    if (timerFd >= 0) events.push_back(timerFd);
    server.run(events, [&](int fd) {
        if (fd == timerFd) {
            uint64_t expirations;
            if (read(timerFd, &expirations, sizeof expirations) > 0) notify("WATCHDOG=1");
            return true;
        }
        return takeSignal(signalFd, policyPath, planPath, state);
    });
    state.shutdown();
    state.flushLog();
    resolver.setTable(nullptr);
    if (table) unlink(tablePath.c_str());
    if (timerFd >= 0) close(timerFd);
    close(signalFd);
    return ExitOk;
}

int showStatus(const StatusOptions& o) {
    std::string socketPath = o.socket.value_or(host::DefaultAgentSocket);
    auto timeout = std::chrono::milliseconds(numberOption("timeout", o.timeout, 2000, 600000));
    std::vector<host::AgentMessage> qps;
    std::optional<host::Counters> counters;
    std::string error;
    if (!host::requestAgentStatus(socketPath, timeout, qps, error, &counters)) throw IoError{error};
    auto outcome = [](const host::AgentMessage& q) {
        return q.outcome == host::SlOutcome::None ? std::string()
                                                  : std::string(host::slOutcomeName(q.outcome));
    };
    if (o.json) {
        Json list = Json::array();
        for (const host::AgentMessage& q : qps) {
            list.push_back({{"pid", q.pid},
                            {"device", q.device},
                            {"port", q.port},
                            {"qpn", q.qpNum},
                            {"type", host::qpTypeName(q.type)},
                            {"sl", jsonOptional(q.sl)},
                            {"leaf", jsonName(q.leaf)},
                            {"attached", q.attached},
                            {"pcc_slot", jsonOptional(q.slot)},
                            {"pcc_algorithm", jsonName(q.algorithm)},
                            {"dlid", q.dlid ? Json(q.dlid) : Json(nullptr)},
                            {"mode", q.mode ? Json(slModeName(*q.mode)) : Json(nullptr)},
                            {"app_sl", jsonOptional(q.appSl)},
                            {"sa_sl", jsonOptional(q.saSl)},
                            {"outcome", jsonName(outcome(q))}});
        }
        Json out = {{"qps", std::move(list)}, {"counters", nullptr}};
        if (counters) {
            Json c = Json::object();
            for (size_t i = 0; i < host::CounterCount; ++i) {
                std::string name(host::counterName(static_cast<host::Counter>(i)));
                for (char& ch : name) ch = ch == '-' ? '_' : ch;
                c[name] = (*counters)[i];
            }
            out["counters"] = std::move(c);
        }
        std::cout << dumpJson(out) << "\n";
        return ExitOk;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-8s %-10s %-9s %-5s %-3s %-16s %-8s %-12s %s\n", "pid",
                  "device", "qpn", "type", "sl", "leaf", "attached", "pcc-slot", "enforcement");
    std::cout << line;
    for (const host::AgentMessage& q : qps) {
        char qpn[16];
        std::snprintf(qpn, sizeof qpn, "0x%06x", q.qpNum);
        std::string slot = q.slot ? std::to_string(*q.slot) + " " + q.algorithm : "-";
        std::string enforcement = q.mode ? slModeName(*q.mode) : "-";
        if (!outcome(q).empty()) {
            enforcement += ": " + outcome(q);
            if (q.appSl && q.saSl && *q.appSl != *q.saSl)
                enforcement += " (app SL " + std::to_string(*q.appSl) + ", SA SL " +
                               std::to_string(*q.saSl) + ")";
        }
        std::snprintf(line, sizeof line, "%-8u %-10s %-9s %-5s %-3s %-16s %-8s %-12s %s\n", q.pid,
                      q.device.c_str(), qpn, std::string(host::qpTypeName(q.type)).c_str(),
                      q.sl ? std::to_string(*q.sl).c_str() : "-",
                      q.leaf.empty() ? "-" : q.leaf.c_str(), q.attached ? "yes" : "no",
                      slot.c_str(), enforcement.c_str());
        std::cout << line;
    }
    std::cout << qps.size() << (qps.size() == 1 ? " QP\n" : " QPs\n");
    if (counters) {
        std::cout << "enforcement:";
        for (size_t i = 0; i < host::CounterCount; ++i)
            std::cout << " " << host::counterName(static_cast<host::Counter>(i)) << " "
                      << (*counters)[i];
        std::cout << "\n";
    }
    return ExitOk;
}

}  // namespace

void addRun(Program& program) {
    auto o = std::make_shared<RunOptions>();
    CLI::App& c =
        program.command("run", "the daemon: apply PCC slots to the QPs libibqos_preload.so reports",
                        runFooter, [o] { return runDaemon(*o); });
    o->policy.add(c, "the QoS policy (default $IBQOS_POLICY, else /etc/ibqos/qos-policy.conf)",
                  false);
    addValue(c, "--socket", o->socket, "PATH",
             "the socket to serve (default /run/ibqos/agent.sock)");
    addValue(c, "--plan", o->plan, "PATH",
             "where to write the compiled host plan (default /run/ibqos/host-plan)");
    c.add_option("--pcc", o->pcc,
                 "auto (libmango when it loads, else simulated), mango or simulated (default auto)")
        ->type_name("ENGINE")
        ->check(CLI::IsMember({"auto", "mango", "simulated"}));
    addValue(c, "--interval-us", o->intervalUs, "N",
             "the PCC engine's algorithm interval (default 10)");
    addValue(c, "--threads", o->threads, "N", "the PCC engine's threads (default 1)");
    addValue(c, "--sa-in-flight", o->saInFlight, "N",
             "SA queries in flight at most, for SL enforcement (default 16)");
    addValue(c, "--sa-timeout", o->saTimeout, "MS",
             "first attempt's timeout of an SA query, doubled for each of 2 retries (default 200)");
    addValue(c, "--cache-size", o->cacheSize, "N", "SA answers kept at most (default 65536)");
    addValue(c, "--path-table", o->pathTable, "PATH",
             "where processes read the answers (default /run/ibqos/path-table)");
    addValue(c, "--cache-lifetime", o->cacheLifetime, "S",
             "how long an SA answer is kept, in seconds (default 60)");
    addValue(c, "--cache-refresh", o->cacheRefresh, "S",
             "age in seconds after which a path in use is asked again (default 10)");
    addValue(c, "--max-connections-per-user", o->userConnections, "N",
             "connections one user's processes may hold open (default 256)");
    addValue(c, "--max-qps-per-user", o->userQps, "N",
             "QPs the daemon tracks for one user at most (default 65536)");
    addValue(c, "--max-resolves-per-user", o->userResolves, "N",
             "one user's resolve questions waiting for the SA at most (default 1024)");
    addValue(c, "--max-answers-per-user", o->userAnswers, "N",
             "answers queued unread for one user's connections at most (default 65536)");
}

void addStatus(Program& program) {
    auto o = std::make_shared<StatusOptions>();
    CLI::App& c = program.command(
        "status", "show the QPs a running daemon knows, with their leaves and slots", statusFooter,
        [o] { return showStatus(*o); });
    addValue(c, "--socket", o->socket, "PATH",
             "the daemon's socket (default /run/ibqos/agent.sock)");
    addValue(c, "--timeout", o->timeout, "MS", "how long to wait for the answer (default 2000)");
    c.add_flag("--json", o->json, "print the QPs as one JSON object (below)");
}

}  // namespace ibqos::cli

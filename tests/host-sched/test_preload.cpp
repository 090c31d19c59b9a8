// SPDX-License-Identifier: MIT
// Tests of libibqos_preload.so in a real process: a driver program whose verbs calls pass
// through the preload library (LD_PRELOAD, dlsym(RTLD_NEXT)) to a recording stand-in, while
// the test listens on the agent's socket.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/agent/path_table.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "host-sched/preload/devx_command.hpp"
#include "host-sched/preload/sl_decision.hpp"
#include "tests/doubles/devx_commands.hpp"
#include "tests/host-sched/host_policies.hpp"

extern char** environ;

namespace {

const char* const tree = R"(
 sched-node
  name: jobs
  bw-share: 70
 end-sched-node
 sched-leaf
  name: rpc
  parent: jobs
  sl: 3
  bw-share: 30
  pcc-slot: 2
  pcc-algorithm: swift
 end-sched-leaf
 sched-leaf
  name: bulk
  sl: 2
  bw-share: 20
 end-sched-leaf
)";

struct Run {
    int status = -1;
    std::vector<std::string> out;       // stdout lines: the stand-in's and the driver's
    std::string err;                    // the preload library's log
    std::vector<std::string> messages;  // what the agent's socket received
};

struct Scratch {
    std::string dir;
    // extra: more lines of the host-sched section (sl-enforcement blocks).
    explicit Scratch(const std::string& extra = "") {
        char path[] = "/tmp/ibqos-preload-XXXXXX";
        dir = mkdtemp(path);
        // The plan the agent would write from the policy.
        std::ofstream(dir + "/policy.conf") << ibqos::test::withHostSched(tree + extra);
        std::string error;
        auto plan = ibqos::host::loadHostPlan(dir + "/policy.conf", error);
        REQUIRE(plan);
        std::ofstream(dir + "/host-plan") << ibqos::host::planFileText(*plan, dir + "/policy.conf");
    }
    ~Scratch() {
        for (const char* f : {"/policy.conf", "/host-plan", "/agent.sock", "/path-table"})
            unlink((dir + f).c_str());
        rmdir(dir.c_str());
    }
};

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
        out.push_back(text.substr(start, nl - start));
    }
    return out;
}

// How the test's agent answers a resolve question: what it sends back then (nothing leaves it
// unanswered; answers held back from earlier questions may go with it).
using Answerer =
    std::function<std::vector<ibqos::host::AgentMessage>(const ibqos::host::AgentMessage&)>;

// Runs the driver with the given steps and environment, serving as the agent when asked.
// release: each resolve question the agent receives lets the driver's next `wait` step go on.
// program: the driver, or another test program taking `steps` as its arguments.
Run runDriver(const Scratch& scratch, const std::vector<std::string>& steps,
              std::map<std::string, std::string> env, bool preload = true, bool agent = true,
              const Answerer& answer = {}, bool release = false,
              const std::string& program = PRELOAD_DRIVER) {
    env.emplace("IBQOS_PLAN", scratch.dir + "/host-plan");
    env.emplace("IBQOS_AGENT_SOCKET", scratch.dir + "/agent.sock");
    env.emplace("IBQOS_PATH_TABLE", scratch.dir + "/path-table");
    env.emplace("IBQOS_SCHED_BACKEND", "mlx5");
    if (preload) {
        // Under ASan the runtime has to come first in the initial library list (scripts/test).
        const char* sanitizer = std::getenv("IBQOS_SANITIZER_PRELOAD");
        env["LD_PRELOAD"] = sanitizer ? std::string(sanitizer) + " " + PRELOAD_LIB : PRELOAD_LIB;
    }
    std::vector<std::string> envText;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (!env.count(kv.substr(0, kv.find('=')))) envText.push_back(kv);
    }
    for (auto& [k, v] : env) envText.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : envText) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args{program};
    args.insert(args.end(), steps.begin(), steps.end());
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    int listener = -1;
    std::string path = scratch.dir + "/agent.sock";
    unlink(path.c_str());
    if (agent) {
        listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, path.c_str());
        REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(listen(listener, 8) == 0);
    }
    int out[2], err[2], in[2] = {-1, -1};
    REQUIRE(pipe(out) == 0);
    REQUIRE(pipe(err) == 0);
    if (release) REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    if (release) {
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    pid_t pid = -1;
    REQUIRE(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data()) == 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    if (release) close(in[0]);

    Run run;
    std::string outText;
    std::vector<int> clients;
    bool outOpen = true, errOpen = true;
    auto readClients = [&] {
        char buffer[2048];
        for (int c : clients) {
            for (ssize_t n; (n = recv(c, buffer, sizeof buffer, MSG_DONTWAIT)) > 0;) {
                run.messages.emplace_back(buffer, static_cast<size_t>(n));
                ibqos::host::MessageError error;
                auto m = ibqos::host::parseAgentMessage(run.messages.back(), error);
                if (!m || m->kind != ibqos::host::MessageKind::Resolve) continue;
                if (in[1] >= 0) REQUIRE(write(in[1], "\n", 1) == 1);
                if (!answer) continue;
                for (const ibqos::host::AgentMessage& reply : answer(*m)) {
                    std::string text = ibqos::host::encodeAgentMessage(reply);
                    REQUIRE(send(c, text.data(), text.size(), 0) ==
                            static_cast<ssize_t>(text.size()));
                }
            }
        }
    };
    while (outOpen || errOpen) {
        std::vector<pollfd> fds{{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        if (listener >= 0) fds.push_back({listener, POLLIN, 0});
        for (int c : clients) fds.push_back({c, POLLIN, 0});
        int ready = poll(fds.data(), fds.size(), 20000);
        if (ready == 0 && in[1] >= 0) {
            close(in[1]);  // a `wait` nothing released: let the driver go on, and fail below
            in[1] = -1;
            continue;
        }
        REQUIRE(ready > 0);
        char buffer[4096];
        if (fds[0].revents) {
            ssize_t n = read(out[0], buffer, sizeof buffer);
            if (n <= 0)
                outOpen = false, fds[0].fd = -1;
            else
                outText.append(buffer, static_cast<size_t>(n));
        }
        if (fds[1].revents) {
            ssize_t n = read(err[0], buffer, sizeof buffer);
            if (n <= 0)
                errOpen = false;
            else
                run.err.append(buffer, static_cast<size_t>(n));
        }
        if (listener >= 0 && fds[2].revents) {
            int c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
            if (c >= 0) clients.push_back(c);
        }
        readClients();
    }
    waitpid(pid, &run.status, 0);
    readClients();
    for (int c : clients) close(c);
    if (listener >= 0) close(listener);
    if (in[1] >= 0) close(in[1]);
    close(out[0]);
    close(err[0]);
    run.out = lines(outText);
    return run;
}

// The index of the first line that contains all of `parts`, searching from `from`.
size_t indexOf(const std::vector<std::string>& lines, std::initializer_list<std::string> parts,
               size_t from = 0) {
    for (size_t i = from; i < lines.size(); ++i) {
        bool all = true;
        for (const std::string& p : parts) all &= lines[i].find(p) != std::string::npos;
        if (all) return i;
    }
    return SIZE_MAX;
}

// The id the emulated device gave the element created with these attributes.
std::string idCreated(const std::vector<std::string>& lines, const std::string& kind,
                      const std::string& attrs) {
    size_t i = indexOf(lines, {"mlx5dv_sched_" + kind + "_create", attrs});
    if (i == SIZE_MAX) return "?";
    return lines[i].substr(lines[i].rfind(' ') + 1);
}

}  // namespace

TEST_CASE("an RC QP joins its SL's leaf while still in INIT, and leaves it before it is destroyed",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s,
                      {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "3", "rts",
                       "0x100", "destroy", "0x100", "close", "mlx5_0"},
                      {});
    INFO(r.err);
    REQUIRE(WIFEXITED(r.status));
    CHECK(WEXITSTATUS(r.status) == 0);
    const auto& out = r.out;
    size_t root = indexOf(out, {"mlx5dv_sched_node_create parent=0 flags=0", "-> 1"});
    std::string jobs = idCreated(out, "node", "bw_share=70");
    std::string rpc = idCreated(out, "leaf", "bw_share=30");
    CHECK(indexOf(out, {"mlx5dv_sched_leaf_create parent=" + jobs, "bw_share=30"}) != SIZE_MAX);
    size_t attach =
        indexOf(out, {"mlx5dv_modify_qp_sched_elem qpn=256 state=INIT requestor=" + rpc +
                      " responder=" + rpc + " -> 0"});
    size_t toRtr = indexOf(out, {"ibv_modify_qp qpn=256", "state=RTR sl=3 -> 0"});
    size_t detach = indexOf(
        out, {"mlx5dv_modify_qp_sched_elem qpn=256 state=RTS requestor=0 responder=0 -> 0"});
    size_t destroyed = indexOf(out, {"ibv_destroy_qp qpn=256 state=RTS -> 0"});
    size_t leafGone = indexOf(out, {"mlx5dv_sched_leaf_destroy -> 0"});
    size_t nodeGone = indexOf(out, {"mlx5dv_sched_node_destroy -> 0"});
    size_t closed = indexOf(out, {"ibv_close_device mlx5_0"});
    CHECK(root < attach);
    CHECK(attach < toRtr);  // the device takes attachments only in INIT or RTS
    CHECK(toRtr < detach);
    CHECK(detach < destroyed);
    CHECK(destroyed < leafGone);
    CHECK(leafGone < nodeGone);  // leaves before nodes
    CHECK(nodeGone < closed);
    CHECK(indexOf(out, {"driver: rtr 256 rc=0 errno=0"}) != SIZE_MAX);
    CHECK(r.err.empty());

    REQUIRE(r.messages.size() == 2);
    std::regex rtr(
        "ibqos1 rtr pid=[0-9]+ dev=mlx5_0 port=1 dlid=0x0002 qpn=0x000100 type=rc sl=3 leaf=rpc "
        "attached=1 mode=respect app-sl=3");
    CHECK(std::regex_match(r.messages[0], rtr));
    CHECK(std::regex_match(r.messages[1],
                           std::regex("ibqos1 destroy pid=[0-9]+ dev=mlx5_0 qpn=0x000100")));
}

TEST_CASE("UD and UC QPs attach as requestor only; a QP without an address vector stays unattached",
          "[host-sched][preload]") {
    Scratch s;
    Run r =
        runDriver(s, {"open", "mlx5_0", "qp",     "mlx5_0", "0x200",    "ud",   "rtr",   "0x200",
                      "2",    "qp",     "mlx5_0", "0x201",  "uc",       "rtr",  "0x201", "3",
                      "qp",   "mlx5_0", "0x202",  "ud",     "rtr-noav", "0x202"},
                  {});
    INFO(r.err);
    std::string bulk = idCreated(r.out, "leaf", "bw_share=20");
    std::string rpc = idCreated(r.out, "leaf", "bw_share=30");
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=512 state=INIT requestor=" + bulk +
                          " responder=0 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=513 state=INIT requestor=" + rpc +
                          " responder=0 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=514"}) == SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=514", "state=RTR -> 0"}) != SIZE_MAX);
    REQUIRE(r.messages.size() == 3);
    CHECK(r.messages[2].find("qpn=0x000202 type=ud sl=- leaf=- attached=0") != std::string::npos);
}

TEST_CASE("without the preload library the same program reaches the stand-in and nothing else",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(
        s,
        {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "3", "destroy", "0x100"},
        {}, false);
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(indexOf(r.out, {"mlx5dv_"}) == SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=3 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.empty());
}

TEST_CASE("a directory in the plan's place is named as one, not read as an empty plan",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s, {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "3"},
                      {{"IBQOS_PLAN", s.dir}});
    CHECK(WEXITSTATUS(r.status) == 0);
    auto log = lines(r.err);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("no host plan (cannot read '" + s.dir + "': Is a directory") !=
          std::string::npos);
    CHECK(indexOf(r.out, {"driver: rtr 256 rc=0"}) != SIZE_MAX);
}

TEST_CASE("a missing plan is logged once and every call still goes through",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s, {"open",  "mlx5_0", "qp",      "mlx5_0", "0x100",   "rc",   "rtr",
                          "0x100", "3",      "qp",      "mlx5_0", "0x101",   "rc",   "rtr",
                          "0x101", "2",      "destroy", "0x100",  "destroy", "0x101"},
                      {{"IBQOS_PLAN", s.dir + "/absent-plan"}});
    CHECK(WEXITSTATUS(r.status) == 0);
    auto log = lines(r.err);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("no host plan") != std::string::npos);
    CHECK(log[0].find("absent-plan") != std::string::npos);
    CHECK(indexOf(r.out, {"driver: rtr 256 rc=0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"driver: rtr 257 rc=0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"driver: destroy 257 rc=0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"mlx5dv_"}) == SIZE_MAX);
    // The agent still hears of the QPs: it applies PCC slots from its own policy.
    REQUIRE(r.messages.size() == 4);
    CHECK(r.messages[0].find("sl=3 leaf=- attached=0") != std::string::npos);
}

TEST_CASE("a device that cannot schedule is logged once and its QPs are still reported",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s,
                      {"open", "mlx5_0", "noqos", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100",
                       "3", "qp", "mlx5_0", "0x101", "rc", "rtr", "0x101", "3"},
                      {});
    CHECK(WEXITSTATUS(r.status) == 0);
    auto log = lines(r.err);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("cannot build the scheduling tree on mlx5_0") != std::string::npos);
    CHECK(log[0].find("EOPNOTSUPP") != std::string::npos);
    CHECK(indexOf(r.out, {"driver: rtr 257 rc=0"}) != SIZE_MAX);
    REQUIRE(r.messages.size() == 2);
    CHECK(r.messages[1].find("leaf=rpc attached=0") != std::string::npos);
}

TEST_CASE("a failing transition returns the library's error and errno, and is not reported",
          "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(
        s,
        {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "3", "destroy", "0x100"},
        {{"STANDIN_FAIL_RTR", "1"}});
    CHECK(indexOf(r.out, {"driver: rtr 256 rc=22 errno=22"}) != SIZE_MAX);
    // It was attached in INIT; destroyed from INIT, it is detached first.
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=256 state=INIT requestor=0 responder=0 -> 0"}) !=
          SIZE_MAX);
    CHECK(r.messages.empty());
}

TEST_CASE("with no agent listening the application is not disturbed", "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s,
                      {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "3", "qp",
                       "mlx5_0", "0x101", "rc", "rtr", "0x101", "2", "destroy", "0x100"},
                      {}, true, false);
    CHECK(WEXITSTATUS(r.status) == 0);
    auto log = lines(r.err);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("no agent at") != std::string::npos);
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=257", "-> 0"}) != SIZE_MAX);
}

TEST_CASE("the simulated backend attaches without touching the device", "[host-sched][preload]") {
    Scratch s;
    Run r = runDriver(s, {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr", "0x100", "2"},
                      {{"IBQOS_SCHED_BACKEND", "simulated"}});
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(indexOf(r.out, {"mlx5dv_"}) == SIZE_MAX);
    REQUIRE(r.messages.size() == 1);
    CHECK(r.messages[0].find("sl=2 leaf=bulk attached=1") != std::string::npos);
    CHECK(r.err.empty());
}

namespace {

using ibqos::host::AgentMessage;
using ibqos::host::MessageKind;
using ibqos::host::PathAnswer;

std::string enforcement(const std::string& mode, const std::string& more = "",
                        int resolveTimeoutMs = 200) {
    return " sl-enforcement\n  mode: " + mode +
           "\n  resolve-timeout: " + std::to_string(resolveTimeoutMs) + "\n" + more +
           " end-sl-enforcement\n";
}

// How long a driver's call took ("driver: CALL rc=N errno=E us=T"), in microseconds; -1 when
// the call is not there.
long long callMicros(const std::vector<std::string>& out, const std::string& call) {
    size_t i = indexOf(out, {"driver: " + call + " rc="});
    if (i == SIZE_MAX || out[i].find(" us=") == std::string::npos) return -1;
    return std::stoll(out[i].substr(out[i].rfind(" us=") + 4));
}

// An SA that puts DLID 5 on SL 3 and knows no path to DLID 9; the questions it got.
struct FakeSa {
    std::vector<AgentMessage> questions;
    Answerer answerer() {
        return [this](const AgentMessage& q) -> std::vector<AgentMessage> {
            questions.push_back(q);
            AgentMessage a;
            a.kind = MessageKind::Path;
            a.id = q.id;
            a.answer = q.dlid == 9 ? PathAnswer::NoPath : PathAnswer::Found;
            if (q.dlid != 9) a.sl = 3;
            return {a};
        };
    }
};

const std::vector<std::string> slZeroToFive{"open", "mlx5_0", "qp",    "mlx5_0", "0x100",
                                            "rc",   "rtr-to", "0x100", "5",      "0"};

}  // namespace

TEST_CASE("enforce: the RTR carries the SA's SL for the exact path, on that SL's leaf",
          "[host-sched][preload][enforce]") {
    Scratch s(enforcement("enforce"));
    FakeSa sa;
    Run r = runDriver(s, slZeroToFive, {{"STANDIN_LID", "7"}, {"STANDIN_PKEYS", "0x8001"}}, true,
                      true, sa.answerer());
    INFO(r.err);
    CHECK(WEXITSTATUS(r.status) == 0);
    REQUIRE(sa.questions.size() == 1);
    CHECK(sa.questions[0].device == "mlx5_0");
    CHECK(sa.questions[0].port == 1);
    CHECK(sa.questions[0].slid == 7);
    CHECK(sa.questions[0].dlid == 5);
    CHECK(sa.questions[0].pkey == std::optional<uint16_t>(0x8001));
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=3 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"the caller's attributes changed"}) == SIZE_MAX);
    std::string rpc = idCreated(r.out, "leaf", "bw_share=30");
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=256 state=INIT requestor=" + rpc}) != SIZE_MAX);
    REQUIRE(r.messages.size() == 2);
    CHECK(r.messages[1].find("sl=3 leaf=rpc attached=1 mode=enforce outcome=replaced app-sl=0 "
                             "sa-sl=3") != std::string::npos);
    CHECK(r.err.empty());
}

TEST_CASE("audit reports the SA's SL and changes nothing; respect does not ask",
          "[host-sched][preload][enforce]") {
    for (std::string mode : {"audit", "respect"}) {
        Scratch s(enforcement(mode));
        FakeSa sa;
        Run r = runDriver(s, slZeroToFive, {}, true, true, sa.answerer());
        INFO(mode << ": " << r.err);
        CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=0 -> 0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"qp_sched_elem"}) == SIZE_MAX);  // SL 0 is on no leaf
        CHECK(sa.questions.size() == (mode == "audit" ? 1u : 0u));
        std::string expected = mode == "audit" ? "mode=audit outcome=differs app-sl=0 sa-sl=3"
                                               : "mode=respect app-sl=0";
        CHECK(r.messages.back().find(expected) != std::string::npos);
    }
}

TEST_CASE("the environment makes a process stricter, never looser",
          "[host-sched][preload][enforce]") {
    FakeSa sa;
    Scratch audit(enforcement("audit"));
    Run r = runDriver(audit, slZeroToFive, {{"IBQOS_SL_ENFORCEMENT", "enforce"}}, true, true,
                      sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=3 -> 0"}) != SIZE_MAX);
    Scratch enforce(enforcement("enforce"));
    r = runDriver(enforce, slZeroToFive, {{"IBQOS_SL_ENFORCEMENT", "respect"}}, true, true,
                  sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=3 -> 0"}) != SIZE_MAX);
    r = runDriver(enforce, slZeroToFive, {{"IBQOS_SL_ENFORCEMENT", "lax"}}, true, true,
                  sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=3 -> 0"}) != SIZE_MAX);
    CHECK(r.err.find("IBQOS_SL_ENFORCEMENT='lax'") != std::string::npos);
}

TEST_CASE("programs and except-programs choose the processes a block applies to",
          "[host-sched][preload][enforce]") {
    FakeSa sa;
    // The driver runs as preload-driver: the first block names another program.
    Scratch s(enforcement("audit", "  programs: ib_write_bw, mpirun\n") + enforcement("enforce"));
    Run r = runDriver(s, slZeroToFive, {}, true, true, sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=3 -> 0"}) != SIZE_MAX);
    Scratch except(enforcement("enforce", "  except-programs: preload-driver\n"));
    r = runDriver(except, slZeroToFive, {}, true, true, sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=0 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.back().find("mode=respect") != std::string::npos);
}

TEST_CASE("without an answer in time, or without a path, the application's SL is used",
          "[host-sched][preload][enforce]") {
    Scratch s(enforcement("enforce"));
    // An agent that never answers: one bounded wait per RTR, logged once.
    Run r =
        runDriver(s,
                  {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr-to", "0x100", "5", "0",
                   "qp", "mlx5_0", "0x101", "rc", "rtr-to", "0x101", "5", "2"},
                  {}, true, true, [](const AgentMessage&) { return std::vector<AgentMessage>{}; });
    CHECK(indexOf(r.out, {"qpn=256", "state=RTR sl=0 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"qpn=257", "state=RTR sl=2 -> 0"}) != SIZE_MAX);
    auto log = lines(r.err);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("did not answer within 200 ms") != std::string::npos);
    CHECK(r.messages.back().find("outcome=no-answer") != std::string::npos);
    // No agent at all.
    r = runDriver(s, slZeroToFive, {}, true, false);
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(indexOf(r.out, {"state=RTR sl=0 -> 0"}) != SIZE_MAX);
    // The SA has no path.
    FakeSa sa;
    r = runDriver(s, {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "rtr-to", "0x100", "9", "1"},
                  {}, true, true, sa.answerer());
    CHECK(indexOf(r.out, {"state=RTR sl=1 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.back().find("outcome=no-path") != std::string::npos);
}

TEST_CASE("while a thread waits for a stalled agent, other threads' calls on known paths go on",
          "[host-sched][preload][enforce]") {
    // The agent never answers; an RTR may wait 1000 ms for it (the most the policy language
    // allows). Thread A brings a QP to RTR on a path nobody knows; once the agent holds its
    // question, the main thread makes an address handle and brings another QP to RTR, both on
    // a path the agent's shared table holds.
    Scratch s(enforcement("enforce", "", 1000));
    std::string error;
    auto table = ibqos::host::PathTable::create(s.dir + "/path-table", 64, error);
    REQUIRE(table);
    const ibqos::host::TableAnswer slThree{true, 3};
    // The RTR's path carries the P_Key at the QP's index 0 (0xffff); an address handle's none.
    table->publish({"mlx5_0", 1, 1, 5, 0xffff}, slThree, std::chrono::minutes(5));
    table->publish({"mlx5_0", 1, 1, 5, std::nullopt}, slThree, std::chrono::minutes(5));
    std::vector<AgentMessage> questions;
    Run r = runDriver(
        s, {"open",   "mlx5_0", "qp",     "mlx5_0", "0x100", "rc", "qp",   "mlx5_0", "0x101",
            "rc",     "thread", "rtr-to", "0x100",  "9",     "0",  "done", "wait",   "ah",
            "mlx5_0", "5",      "0",      "rtr-to", "0x101", "5",  "0",    "join"},
        {}, true, true,
        [&](const AgentMessage& q) {
            questions.push_back(q);
            return std::vector<AgentMessage>{};
        },
        true);
    INFO(r.err);
    CHECK(WEXITSTATUS(r.status) == 0);
    REQUIRE(questions.size() == 1);  // the main thread's answers came from the table
    CHECK(questions[0].dlid == 9);
    const long long ah = callMicros(r.out, "ah 5"), rtr = callMicros(r.out, "rtr 257"),
                    waited = callMicros(r.out, "rtr 256");
    INFO("create_ah " << ah << " us, modify_qp " << rtr << " us, while A waited " << waited
                      << " us");
    CHECK(ah >= 0);
    CHECK(ah < 50000);
    CHECK(rtr >= 0);
    CHECK(rtr < 50000);
    CHECK(waited >= 990000);  // A waited its whole bound
    // Both calls were over while A still waited.
    const size_t aDone = indexOf(r.out, {"driver: rtr 256 rc=0"});
    CHECK(indexOf(r.out, {"driver: ah 5 rc=0"}) < aDone);
    CHECK(indexOf(r.out, {"driver: rtr 257 rc=0"}) < aDone);
    // The table's SL was enforced; A, with no answer, kept the application's SL.
    CHECK(indexOf(r.out, {"ibv_create_ah dlid=5 sl=3"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=257", "state=RTR sl=3 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=0 -> 0"}) != SIZE_MAX);
    CHECK(r.err.find("did not answer within 1000 ms") != std::string::npos);
}

TEST_CASE("threads asking the agent at once each get their own answer on the one connection",
          "[host-sched][preload][enforce]") {
    // The agent holds its first answer until the second question comes, then answers the
    // second first. The SA puts DLID 5 on SL 3 and DLID 6 on SL 4.
    Scratch s(enforcement("enforce", "", 1000));
    std::vector<AgentMessage> held;
    Run r = runDriver(s, {"open",   "mlx5_0", "qp",     "mlx5_0", "0x100", "rc",   "qp",  "mlx5_0",
                          "0x101",  "rc",     "thread", "rtr-to", "0x100", "5",    "0",   "done",
                          "thread", "rtr-to", "0x101",  "6",      "0",     "done", "join"},
                      {}, true, true, [&](const AgentMessage& q) {
                          AgentMessage a;
                          a.kind = MessageKind::Path;
                          a.id = q.id;
                          a.answer = PathAnswer::Found;
                          a.sl = q.dlid == 5 ? 3 : 4;
                          held.insert(held.begin(), a);
                          return held.size() < 2 ? std::vector<AgentMessage>{} : held;
                      });
    INFO(r.err);
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(held.size() == 2);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=3 -> 0"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=257", "state=RTR sl=4 -> 0"}) != SIZE_MAX);
    CHECK(r.err.empty());
}

TEST_CASE("librdmacm's QPs, RoCE ports, reply and multicast address handles keep their SL",
          "[host-sched][preload][enforce]") {
    Scratch s(enforcement("enforce"));
    FakeSa sa;
    Run r = runDriver(s, {"open", "mlx5_0", "cmqp", "mlx5_0", "0x100",  "rc", "cmrtr", "0x100",
                          "5",    "1",      "ahwc", "mlx5_0", "5",      "1",  "cmah",  "mlx5_0",
                          "5",    "1",      "ah",   "mlx5_0", "0xc001", "1"},
                      {}, true, true, sa.answerer());
    INFO(r.err);
    CHECK(sa.questions.empty());
    CHECK(indexOf(r.out, {"qpn=256", "state=RTR sl=1 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.back().find("outcome=cm-path") != std::string::npos);
    CHECK(indexOf(r.out, {"ibv_create_ah dlid=5 sl=1"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_create_ah dlid=49153 sl=1"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"ibv_create_ah", "sl=3"}) == SIZE_MAX);

    r = runDriver(s, slZeroToFive, {{"STANDIN_LINK_LAYER", "ethernet"}}, true, true, sa.answerer());
    CHECK(sa.questions.empty());
    CHECK(indexOf(r.out, {"state=RTR sl=0 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.back().find("outcome=ethernet") != std::string::npos);
}

TEST_CASE("enforce: a UD address handle gets the SA's SL; the caller's struct is untouched",
          "[host-sched][preload][enforce]") {
    Scratch s(enforcement("enforce"));
    FakeSa sa;
    Run r =
        runDriver(s, {"open", "mlx5_0", "ah", "mlx5_0", "5", "0"}, {}, true, true, sa.answerer());
    INFO(r.err);
    REQUIRE(sa.questions.size() == 1);
    CHECK_FALSE(sa.questions[0].pkey);  // an address handle serves every QP of its PD
    CHECK(indexOf(r.out, {"ibv_create_ah dlid=5 sl=3"}) != SIZE_MAX);
    CHECK(indexOf(r.out, {"the caller's attributes changed"}) == SIZE_MAX);
    REQUIRE(r.messages.size() == 2);
    CHECK(std::regex_match(r.messages[1],
                           std::regex("ibqos1 ah pid=[0-9]+ dev=mlx5_0 port=1 dlid=0x0005 sl=3 "
                                      "mode=enforce outcome=replaced app-sl=0 sa-sl=3")));
}

TEST_CASE("when the host's own plan enforces, a process cannot point itself elsewhere",
          "[host-sched][preload][enforce]") {
    // The host's plan lives at /run/ibqos/host-plan: the driver runs in a mount namespace of
    // its own with a tmpfs there (root and unshare(1) needed; skipped otherwise).
    if (geteuid() != 0 || std::system("unshare --mount true 2>/dev/null") != 0) {
        WARN("skipped: needs root and unshare(1) for a private /run");
        return;
    }
    Scratch host(enforcement("enforce"));
    Scratch lax(enforcement("respect"));
    std::string out = host.dir + "/out";
    std::string script =
        "mount -t tmpfs tmpfs /run && mkdir /run/ibqos && cp " + host.dir +
        "/host-plan /run/ibqos/host-plan && IBQOS_PLAN=" + lax.dir +
        "/host-plan IBQOS_AGENT_SOCKET=" + lax.dir + "/agent.sock LD_PRELOAD=\"" +
        std::string(std::getenv("IBQOS_SANITIZER_PRELOAD") ? std::getenv("IBQOS_SANITIZER_PRELOAD")
                                                           : "") +
        " " PRELOAD_LIB "\" " PRELOAD_DRIVER " open mlx5_0 qp mlx5_0 0x100 rc rtr-to 0x100 5 0 >" +
        out + " 2>&1";
    int rc = std::system(("unshare --mount --propagation private sh -c '" + script + "'").c_str());
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(text);
    CHECK(rc == 0);
    // The lax plan and its socket were ignored: the host's agent was asked (and is absent).
    CHECK(
        text.find("IBQOS_PLAN is ignored: this host's plan (/run/ibqos/host-plan) enforces SLs") !=
        std::string::npos);
    CHECK(text.find("IBQOS_AGENT_SOCKET is ignored") != std::string::npos);
    CHECK(text.find("no agent at /run/ibqos/agent.sock") != std::string::npos);
    CHECK(text.find("state=RTR sl=0 -> 0") != std::string::npos);  // no answer: its own SL
    unlink(out.c_str());
}

TEST_CASE("the SLID carries the vector's path bits; routed and multicast vectors are exempt",
          "[host-sched][preload][enforce]") {
    using namespace ibqos::host;
    using ibqos::SlMode;
    PortFacts port;
    port.lid = 0x40;
    port.lmc = 2;
    port.subnetPrefix = 0xfe80000000000000ull;
    CHECK(sourceLidOf(port, 0) == 0x40);
    CHECK(sourceLidOf(port, 3) == 0x43);
    CHECK(sourceLidOf(port, 7) == 0x43);  // bits beyond the LMC are not the port's
    ibv_ah_attr av{};
    av.dlid = 9;
    CHECK_FALSE(exemptionOf(port, av));
    av.is_global = 1;
    av.grh.dgid.raw[0] = 0xfe;
    av.grh.dgid.raw[1] = 0x80;
    CHECK_FALSE(exemptionOf(port, av));  // a GRH inside the subnet
    av.grh.dgid.raw[7] = 1;
    CHECK(exemptionOf(port, av) == SlOutcome::Router);
    av.is_global = 0;
    av.dlid = 0xc001;
    CHECK(exemptionOf(port, av) == SlOutcome::Multicast);
    port.ethernet = true;
    CHECK(exemptionOf(port, av) == SlOutcome::Ethernet);

    AgentMessage found;
    found.kind = MessageKind::Path;
    found.answer = PathAnswer::Found;
    found.sl = 4;
    CHECK(decideSl(SlMode::Enforce, 0, found).sl == 4);
    CHECK(decideSl(SlMode::Audit, 0, found).sl == 0);
    CHECK(decideSl(SlMode::Audit, 0, found).outcome == SlOutcome::Differs);
    CHECK(decideSl(SlMode::Enforce, 4, found).outcome == SlOutcome::Agrees);
    CHECK(decideSl(SlMode::Enforce, 1, std::nullopt).outcome == SlOutcome::NoAnswer);
    AgentMessage busy = found;
    busy.answer = PathAnswer::Busy;
    CHECK(decideSl(SlMode::Enforce, 1, busy).sl == 1);  // only a found SL replaces
}

// Stacks that reach verbs without the dynamic linker's help: NCCL (dlopen and dlvsym) and UCX
// on mlx5 (DEVX commands).

namespace {

// What the process told the agent, questions left out.
std::vector<std::string> reports(const Run& r) {
    std::vector<std::string> out;
    for (const std::string& m : r.messages)
        if (m.rfind("ibqos1 resolve ", 0) != 0) out.push_back(m);
    return out;
}

}  // namespace

TEST_CASE("NCCL's way of loading verbs gets the same decision in respect, audit and enforce",
          "[host-sched][preload][enforce][nccl]") {
    // NCCL_IB_SL=5 to DLID 5, where the SA answers SL 3 (the rpc leaf's).
    const std::vector<std::string> args{VERBS_STANDIN, "mlx5_0", "0x100", "5"};
    for (std::string mode : {"respect", "audit", "enforce"}) {
        Scratch s(enforcement(mode));
        FakeSa sa;
        Run r = runDriver(s, args, {{"NCCL_IB_SL", "5"}}, true, true, sa.answerer(), false,
                          NCCL_LOADER);
        INFO(mode << ": " << r.err);
        REQUIRE(WIFEXITED(r.status));
        CHECK(WEXITSTATUS(r.status) == 0);
        CHECK(indexOf(r.out, {"dlerror after success"}) == SIZE_MAX);
        CHECK(indexOf(r.out, {"the caller's attributes changed"}) == SIZE_MAX);
        CHECK(r.err.empty());
        const std::string wireSl = mode == "enforce" ? "3" : "5";
        CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=" + wireSl + " -> 0"}) !=
              SIZE_MAX);
        CHECK(indexOf(r.out, {"driver: rtr 256 rc=0 errno=0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"ibv_destroy_qp qpn=256 state=RTS -> 0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"ibv_close_device mlx5_0"}) != SIZE_MAX);
        REQUIRE(reports(r).size() == 2);
        if (mode == "respect") {
            CHECK(sa.questions.empty());
            CHECK(reports(r)[0].find("sl=5 leaf=- attached=0 mode=respect app-sl=5") !=
                  std::string::npos);
        } else {
            // The question is the one ibv_modify_qp's callers get: the port's LID, the DLID,
            // the P_Key at NCCL_IB_PKEY's index.
            REQUIRE(sa.questions.size() == 1);
            CHECK(sa.questions[0].slid == 1);
            CHECK(sa.questions[0].dlid == 5);
            CHECK(sa.questions[0].pkey == std::optional<uint16_t>(0xffff));
        }
        if (mode == "audit") {
            // Audit names the SL NCCL chose and the policy's.
            CHECK(reports(r)[0].find("sl=5 leaf=- attached=0 mode=audit outcome=differs "
                                     "app-sl=5 sa-sl=3") != std::string::npos);
        }
        if (mode == "enforce") {
            std::string rpc = idCreated(r.out, "leaf", "bw_share=30");
            CHECK(indexOf(r.out, {"qp_sched_elem qpn=256 state=INIT requestor=" + rpc +
                                  " responder=" + rpc + " -> 0"}) != SIZE_MAX);
            CHECK(reports(r)[0].find("sl=3 leaf=rpc attached=1 mode=enforce outcome=replaced "
                                     "app-sl=5 sa-sl=3") != std::string::npos);
        }
        CHECK(std::regex_match(reports(r)[1],
                               std::regex("ibqos1 destroy pid=[0-9]+ dev=mlx5_0 qpn=0x000100")));
    }
    // Without the library the same program reaches the device with its own SL, unseen.
    Scratch s(enforcement("enforce"));
    Run r = runDriver(s, args, {{"NCCL_IB_SL", "5"}}, false, true, {}, false, NCCL_LOADER);
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=5 -> 0"}) != SIZE_MAX);
    CHECK(r.messages.empty());
}

TEST_CASE("ibv_modify_qp found by dlsym or dlvsym on a handle, RTLD_NEXT or RTLD_DEFAULT is ours",
          "[host-sched][preload][enforce][nccl]") {
    Scratch s(enforcement("enforce"));
    for (std::string how : {"direct", "dlsym", "dlvsym", "next", "default"}) {
        FakeSa sa;
        std::vector<std::string> steps{"lookup", how};
        steps.insert(steps.end(), slZeroToFive.begin(), slZeroToFive.end());
        Run r = runDriver(s, steps, {}, true, true, sa.answerer());
        INFO(how << ": " << r.err);
        CHECK(WEXITSTATUS(r.status) == 0);
        CHECK(sa.questions.size() == 1);
        CHECK(indexOf(r.out, {"ibv_modify_qp qpn=256", "state=RTR sl=3 -> 0"}) != SIZE_MAX);
        REQUIRE(reports(r).size() == 1);
        CHECK(reports(r)[0].find("outcome=replaced app-sl=0 sa-sl=3") != std::string::npos);
    }
}

TEST_CASE("a DEVX RC QP's INIT2RTR_QP is read, reported and, in enforce, carries the SA's SL",
          "[host-sched][preload][enforce][devx]") {
    const std::vector<std::string> steps{"open",  "mlx5_0", "devxqp",      "mlx5_0",
                                         "0x300", "rc",     "devxrtr",     "0x300",
                                         "5",     "0",      "devxdestroy", "0x300"};
    for (std::string mode : {"respect", "audit", "enforce"}) {
        Scratch s(enforcement(mode));
        FakeSa sa;
        Run r = runDriver(s, steps, {{"STANDIN_LID", "7"}, {"STANDIN_PKEYS", "0x8001"}}, true, true,
                          sa.answerer());
        INFO(mode << ": " << r.err);
        CHECK(WEXITSTATUS(r.status) == 0);
        CHECK(r.err.empty());
        // The device numbered the QP 4096; the command reached it with the SL of the mode.
        const std::string wireSl = mode == "enforce" ? "3" : "0";
        CHECK(indexOf(r.out, {"mlx5dv_devx_obj_create CREATE_QP st=0 -> qpn=4096"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"mlx5dv_devx_obj_modify RST2INIT_QP qpn=4096 port=1 pkey_index=0 "
                              "-> 0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"mlx5dv_devx_obj_modify INIT2RTR_QP qpn=4096 rlid=5 sl=" + wireSl +
                              " port=1 -> 0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"driver: devxrtr 768 rc=0"}) != SIZE_MAX);
        CHECK(indexOf(r.out, {"the caller's command changed"}) == SIZE_MAX);
        REQUIRE(reports(r).size() == 2);
        CHECK(reports(r)[0].find("dev=mlx5_0 port=1 dlid=0x0005 qpn=0x001000 type=rc") !=
              std::string::npos);
        if (mode == "respect") {
            CHECK(sa.questions.empty());
            CHECK(reports(r)[0].find("sl=0 leaf=- attached=0 mode=respect app-sl=0") !=
                  std::string::npos);
        } else {
            REQUIRE(sa.questions.size() == 1);
            CHECK(sa.questions[0].slid == 7);
            CHECK(sa.questions[0].dlid == 5);
            CHECK(sa.questions[0].pkey == std::optional<uint16_t>(0x8001));
        }
        if (mode == "audit")
            CHECK(reports(r)[0].find("mode=audit outcome=differs app-sl=0 sa-sl=3") !=
                  std::string::npos);
        if (mode == "enforce")
            // A DEVX QP has no verbs QP to attach to a leaf; its SL is the policy's.
            CHECK(reports(r)[0].find("sl=3 leaf=rpc attached=0 mode=enforce outcome=replaced "
                                     "app-sl=0 sa-sl=3") != std::string::npos);
        CHECK(std::regex_match(reports(r)[1],
                               std::regex("ibqos1 destroy pid=[0-9]+ dev=mlx5_0 qpn=0x001000")));
    }
}

TEST_CASE("DEVX: a verbs QP moved by mlx5dv_devx_qp_modify joins its leaf; a DCI keeps its SL",
          "[host-sched][preload][enforce][devx]") {
    Scratch s(enforcement("enforce"));
    FakeSa sa;
    Run r = runDriver(s,
                      {"open", "mlx5_0", "qp", "mlx5_0", "0x100", "rc", "qpdevxrtr", "0x100", "5",
                       "0", "devxqp", "mlx5_0", "0x301", "dci", "devxrtr", "0x301", "0", "2"},
                      {}, true, true, sa.answerer());
    INFO(r.err);
    CHECK(WEXITSTATUS(r.status) == 0);
    CHECK(indexOf(r.out, {"mlx5dv_devx_qp_modify INIT2RTR_QP qpn=256 rlid=5 sl=3 port=1 -> 0"}) !=
          SIZE_MAX);
    std::string rpc = idCreated(r.out, "leaf", "bw_share=30");
    CHECK(indexOf(r.out, {"qp_sched_elem qpn=256 state=INIT requestor=" + rpc}) != SIZE_MAX);
    // A DC initiator names no destination in its context (each send carries an address
    // vector made with ibv_create_ah, decided there): its SL stays, nobody is asked for it.
    REQUIRE(sa.questions.size() == 1);
    CHECK(indexOf(r.out, {"mlx5dv_devx_obj_modify INIT2RTR_QP qpn=4096 rlid=0 sl=2 port=1 -> 0"}) !=
          SIZE_MAX);
    REQUIRE(reports(r).size() == 2);
    CHECK(reports(r)[0].find("qpn=0x000100 type=rc sl=3 leaf=rpc attached=1 mode=enforce "
                             "outcome=replaced") != std::string::npos);
    CHECK(reports(r)[1].find("qpn=0x001000 type=other sl=2 leaf=bulk attached=0 mode=enforce "
                             "app-sl=2") != std::string::npos);
}

TEST_CASE("the DEVX reader finds each field where mlx5_ifc.h puts it, and refuses short commands",
          "[host-sched][preload][devx]") {
    namespace dx = ibqos::test::devx;
    dx::ModifyQpIn in{};
    dx::set(in.data(), dx::Opcode, 16, dx::Init2RtrQp);
    dx::set(in.data(), dx::Qpn, 24, 0xabcdef);
    dx::set(in.data(), dx::path(dx::AdsPkeyIndex), 16, 3);
    dx::set(in.data(), dx::path(dx::AdsGrh), 1, 1);
    dx::set(in.data(), dx::path(dx::AdsMlid), 7, 5);
    dx::set(in.data(), dx::path(dx::AdsRlid), 16, 0x1234);
    dx::set(in.data(), dx::path(dx::AdsRgid), 8, 0xfe);
    dx::set(in.data(), dx::path(dx::AdsRgid) + 15 * 8, 8, 0x42);
    dx::set(in.data(), dx::path(dx::AdsSl), 4, 9);
    dx::set(in.data(), dx::path(dx::AdsPort), 8, 2);
    auto c = ibqos::host::devx::readQpCommand(in.data(), in.size());
    REQUIRE(c);
    CHECK(c->opcode == ibqos::host::devx::OpInit2RtrQp);
    CHECK(c->qpn == 0xabcdef);
    CHECK(c->path.pkeyIndex == 3);
    CHECK(c->path.grh);
    CHECK(c->path.srcPathBits == 5);
    CHECK(c->path.rlid == 0x1234);
    CHECK(c->path.rgid[0] == 0xfe);
    CHECK(c->path.rgid[15] == 0x42);
    CHECK(c->path.sl == 9);
    CHECK(c->path.port == 2);
    // Writing the SL changes those four bits and nothing else.
    dx::ModifyQpIn before = in;
    ibqos::host::devx::writeSl(in.data(), 4);
    CHECK(dx::get(in.data(), dx::path(dx::AdsSl), 4) == 4);
    dx::set(in.data(), dx::path(dx::AdsSl), 4, 9);
    CHECK(in == before);
    // Too short to hold the address path, or another command: not read.
    CHECK_FALSE(ibqos::host::devx::readQpCommand(in.data(), 60));
    dx::set(in.data(), dx::Opcode, 16, dx::Rtr2RtsQp);
    CHECK_FALSE(ibqos::host::devx::readQpCommand(in.data(), in.size()));
    CHECK_FALSE(ibqos::host::devx::readQpCommand(nullptr, 1000));
}

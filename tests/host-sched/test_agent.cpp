// SPDX-License-Identifier: MIT
// Unit tests of the agent: its messages, its state machine, and its socket server.
#include <catch2/catch.hpp>

#include <grp.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include "host-sched/agent/agent_server.hpp"
#include "host-sched/pcc/pcc_simulated.hpp"
#include "tests/doubles/fake_qp_owners.hpp"
#include "tests/host-sched/host_policies.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

const char* const hostSched = R"(
 sched-leaf
  name: bulk data
  sl: 2
  pcc-slot: 1
  pcc-algorithm: dcqcn
 end-sched-leaf
 sched-leaf
  name: rpc
  sl: 3
  pcc-slot: 2
  pcc-algorithm: swift
 end-sched-leaf
 sched-leaf
  name: plain
  sl: 4
 end-sched-leaf
)";

HostPlan agentPlan(std::string_view body = hostSched) { return test::planOf(body); }

AgentMessage rtr(uint32_t pid, uint32_t qpn, std::optional<uint8_t> sl,
                 std::string device = "mlx5_0") {
    AgentMessage m;
    m.kind = MessageKind::Rtr;
    m.pid = pid;
    m.device = std::move(device);
    m.port = 1;
    m.qpNum = qpn;
    m.type = QpType::Rc;
    m.sl = sl;
    m.leaf = sl == 2 ? "bulk data" : sl == 3 ? "rpc" : "";
    m.attached = true;
    return m;
}

AgentMessage destroy(uint32_t pid, uint32_t qpn) {
    AgentMessage m;
    m.kind = MessageKind::Destroy;
    m.pid = pid;
    m.device = "mlx5_0";
    m.qpNum = qpn;
    return m;
}

// An AgentState on simulated engines that remembers them and what it logged.
struct Agent {
    std::map<std::string, SimulatedPccEngine*> engines;
    std::vector<std::string> logs;
    std::set<std::string> broken;
    FakeQpOwners owners;
    AgentState state;

    explicit Agent(HostPlan plan = agentPlan())
        : state(
              std::move(plan),
              [this](const std::string& device, std::string& error) -> std::unique_ptr<PccEngine> {
                  if (broken.count(device)) {
                      error = "no such device";
                      return nullptr;
                  }
                  auto engine = std::make_unique<SimulatedPccEngine>();
                  engines[device] = engine.get();
                  return engine;
              },
              10, 1, [this](const std::string& line) { logs.push_back(line); }) {
        state.setQpOwners(&owners);
    }

    std::vector<std::string> send(uint64_t client, uint32_t pid, const AgentMessage& m,
                                  uint32_t uid = 1000) {
        return state.handle(client, {pid, uid}, encodeAgentMessage(m));
    }
    // A process that made the QP (the kernel says so) reports it.
    std::vector<std::string> report(uint64_t client, uint32_t pid, const AgentMessage& m,
                                    uint32_t uid = 1000) {
        owners.own(m.device, m.qpNum, pid);
        return send(client, pid, m, uid);
    }
    const TrackedQp* find(uint32_t qpn) {
        static std::vector<TrackedQp> all;
        all = state.qps();
        for (const TrackedQp& q : all) {
            if (q.qpNum == qpn) return &q;
        }
        return nullptr;
    }
};

}  // namespace

TEST_CASE("every message kind survives writing and reading", "[host-sched][agent][protocol]") {
    AgentMessage q = rtr(42, 0xabcdef, 2);
    q.kind = MessageKind::Qp;
    q.slot = 1;
    q.algorithm = "dcqcn";
    AgentMessage noSl = rtr(7, 1, std::nullopt);
    noSl.type = QpType::Ud;
    noSl.port = 0;
    AgentMessage dash = rtr(7, 2, 4);
    dash.leaf = "-";  // a leaf literally named "-" is not "no leaf"
    AgentMessage status;
    status.kind = MessageKind::Status;
    AgentMessage end;
    end.kind = MessageKind::End;
    end.count = 12;
    for (const AgentMessage& m : {rtr(1, 2, 3), q, noSl, dash, destroy(9, 0x10), status, end}) {
        std::string text = encodeAgentMessage(m);
        MessageError error;
        auto back = parseAgentMessage(text, error);
        INFO(text << " -> " << error.message);
        REQUIRE(back);
        CHECK(*back == m);
    }
    CHECK(
        encodeAgentMessage(rtr(1, 2, 2)) ==
        "ibqos1 rtr pid=1 dev=mlx5_0 port=1 qpn=0x000002 type=rc sl=2 leaf=bulk%20data attached=1");
}

TEST_CASE("malformed messages are refused at the byte where reading stopped",
          "[host-sched][agent][protocol]") {
    struct Case {
        std::string text;
        size_t offset;
        const char* says;
    };
    std::string good = "ibqos1 destroy pid=5 dev=mlx5_0 qpn=0x10";
    for (const Case& c : std::vector<Case>{
             {"", 0, "expected"},
             {"ibqos2 status", 0, "unknown protocol"},
             {"ibqos1 reboot", 7, "unknown message kind"},
             {"ibqos1 destroy pid=5 dev=mlx5_0", 31, "missing key 'qpn'"},
             {good + " qpn=0x11", 41, "given twice"},
             {good + " sl=3", 41, "unknown key"},
             {"ibqos1 destroy pid=0 dev=mlx5_0 qpn=1", 19, "pid"},
             {"ibqos1 destroy pid=5 dev=mlx5/0 qpn=1", 25, "device"},
             {"ibqos1 destroy pid=5 dev=mlx5_0 qpn=0x1000000", 36, "qpn"},
             {"ibqos1 destroy  pid=5", 15, "empty field"},
             {"ibqos1 destroy pid=5\tdev=x qpn=1", 20, "printable"},
             {"ibqos1 destroy pid=5 dev=%zz qpn=1", 25, "percent"},
             {"ibqos1 destroy pid=5 dev qpn=1", 21, "key=value"},
             {"ibqos1 rtr pid=5 dev=d qpn=1 type=xrc sl=1 leaf=- attached=1", 34, "type"},
             {"ibqos1 rtr pid=5 dev=d qpn=1 type=rc sl=16 leaf=- attached=1", 40, "sl"},
             {"ibqos1 rtr pid=5 dev=d qpn=1 type=rc sl=1 leaf=- attached=2", 58, "attached"},
             {std::string(2000, 'x'), 1024, "longer"},
         }) {
        MessageError error;
        INFO(c.text.substr(0, 80));
        CHECK_FALSE(parseAgentMessage(c.text, error));
        CHECK(error.offset == c.offset);
        CHECK(error.message.find(c.says) != std::string::npos);
    }
}

TEST_CASE("a reported QP gets the PCC slot of its SL's leaf on its own device",
          "[host-sched][agent]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    a.report(1, 100, rtr(100, 0x21, 3, "mlx5_1"));
    a.report(1, 100, rtr(100, 0x22, 4));  // a leaf without a slot
    a.report(1, 100, rtr(100, 0x23, 9));  // an SL on no leaf
    REQUIRE(a.state.qps().size() == 4);
    CHECK(a.find(0x20)->slot == 1u);
    CHECK(a.engines.at("mlx5_0")->slotOf(0x20) == 1u);
    CHECK(a.find(0x21)->slot == 2u);
    CHECK(a.engines.at("mlx5_1")->slotOf(0x21) == 2u);
    CHECK(a.find(0x22)->leaf == a.state.plan().find("plain"));
    CHECK_FALSE(a.find(0x22)->slot);
    CHECK_FALSE(a.find(0x23)->leaf);
    CHECK(a.engines.at("mlx5_0")->running());

    a.send(1, 100, destroy(100, 0x20));
    CHECK_FALSE(a.find(0x20));
    CHECK_FALSE(a.state.slotsOf("mlx5_0")->slotOfQp(0x20));
    CHECK(a.state.qps().size() == 3);
}

TEST_CASE("a QP is steered only for the process the kernel says owns it",
          "[host-sched][agent][owners]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    a.owners.own("mlx5_0", 0x21, 100);
    a.owners.kernel("mlx5_0", 0x1);
    a.send(2, 200, rtr(100, 0x21, 2));   // pid 100's QP, whatever the message says
    a.send(2, 200, rtr(200, 0x20, 3));   // a QP another live process holds
    a.send(2, 200, rtr(200, 0x1, 3));    // the kernel's own QP (IPoIB)
    a.send(2, 200, rtr(200, 0x99, 3));   // a QP number nobody holds yet
    a.send(2, 200, destroy(100, 0x20));  // and destroying one it did not report
    a.send(2, 200, destroy(200, 0x20));
    REQUIRE(a.state.qps().size() == 1);
    CHECK(a.find(0x20)->pid == 100);
    CHECK(a.find(0x20)->slot == 1u);
    CHECK(a.engines.at("mlx5_0")->slotOf(0x20) == 1u);
    CHECK_FALSE(a.engines.at("mlx5_0")->slotOf(0x21));
    CHECK_FALSE(a.engines.at("mlx5_0")->slotOf(0x1));
    CHECK(a.state.rejectedMessages() == 6);
    size_t refusals = 0;
    for (const std::string& l : a.logs) refusals += l.rfind("refused: pid 200 (uid 1000", 0) == 0;
    CHECK(refusals >= 1);  // the administrator sees who tried

    // When the kernel cannot be asked, nothing is steered.
    a.owners.breakDown("no rdma netlink");
    a.report(1, 100, rtr(100, 0x22, 2));
    CHECK_FALSE(a.find(0x22));
}

TEST_CASE("a process in its own PID namespace is known by the kernel's pid, not its message's",
          "[host-sched][agent][owners]") {
    Agent a;
    // Inside a container the process calls itself pid 7; the agent's namespace sees 4242, and
    // so do SO_PEERCRED and rdma netlink.
    a.owners.own("mlx5_0", 0x40, 4242);
    a.send(1, 4242, rtr(7, 0x40, 2));
    REQUIRE(a.find(0x40));
    CHECK(a.find(0x40)->pid == 4242);
    CHECK(a.find(0x40)->slot == 1u);
    // A peer the kernel cannot name (pid 0) steers nothing.
    a.owners.own("mlx5_0", 0x41, 0);
    a.send(2, 0, rtr(7, 0x41, 2));
    CHECK_FALSE(a.find(0x41));
}

TEST_CASE("the kernel's QP dump names the owning process, a thread's QP included",
          "[host-sched][agent][owners]") {
    // One RDMA_NLDEV_CMD_RES_QP_GET message as the kernel lays it out: RES_QP holding one
    // RES_QP_ENTRY per QP, made here by another thread of this process and by the kernel.
    auto attribute = [](uint16_t type, const std::vector<uint8_t>& payload) {
        std::vector<uint8_t> out(NLA_HDRLEN + NLA_ALIGN(payload.size()));
        nlattr header{static_cast<uint16_t>(NLA_HDRLEN + payload.size()), type};
        std::memcpy(out.data(), &header, sizeof header);
        std::copy(payload.begin(), payload.end(), out.begin() + NLA_HDRLEN);
        return out;
    };
    auto u32 = [&](uint16_t type, uint32_t v) {
        std::vector<uint8_t> bytes(sizeof v);
        std::memcpy(bytes.data(), &v, sizeof v);
        return attribute(type, bytes);
    };
    auto join = [](std::initializer_list<std::vector<uint8_t>> parts) {
        std::vector<uint8_t> out;
        for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
        return out;
    };
    // The kernel records the thread that made the QP; read while that thread lives.
    std::atomic<uint32_t> threadId{0};
    std::atomic<bool> release{false};
    std::thread worker([&] {
        threadId = static_cast<uint32_t>(gettid());
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (threadId == 0 || threadId == static_cast<uint32_t>(getpid()))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::string ipoib = "ib_ipoib";
    std::vector<uint8_t> message = attribute(
        RDMA_NLDEV_ATTR_RES_QP,
        join({attribute(RDMA_NLDEV_ATTR_RES_QP_ENTRY,
                        join({u32(RDMA_NLDEV_ATTR_RES_LQPN, 0x20),
                              u32(RDMA_NLDEV_ATTR_RES_PID, threadId)})),
              attribute(RDMA_NLDEV_ATTR_RES_QP_ENTRY,
                        join({u32(RDMA_NLDEV_ATTR_RES_LQPN, 0x1),
                              attribute(RDMA_NLDEV_ATTR_RES_KERN_NAME,
                                        std::vector<uint8_t>(ipoib.begin(), ipoib.end() + 1))}))}));
    auto mine = qpOwnerInAnswer(message, 0x20);
    release = true;
    worker.join();
    REQUIRE(mine);
    CHECK(mine->kind == QpOwner::Kind::Process);
    CHECK(mine->pid == static_cast<uint32_t>(getpid()));  // the process, not the thread
    auto kernel = qpOwnerInAnswer(message, 0x1);
    REQUIRE(kernel);
    CHECK(kernel->kind == QpOwner::Kind::Kernel);
    CHECK_FALSE(qpOwnerInAnswer(message, 0x21));
    // The answer for one QP: the entry's attributes at the top level, beside the device's.
    std::vector<uint8_t> single =
        join({u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1), u32(RDMA_NLDEV_ATTR_RES_LQPN, 0x30),
              u32(RDMA_NLDEV_ATTR_RES_PID, static_cast<uint32_t>(getpid()))});
    auto one = qpOwnerInAnswer(single, 0x30);
    REQUIRE(one);
    CHECK((one->kind == QpOwner::Kind::Process && one->pid == static_cast<uint32_t>(getpid())));
    // A message cut short is read up to the cut, never past it.
    message.resize(message.size() - 3);
    CHECK_NOTHROW(qpOwnerInAnswer(message, 0x1));

    // On this host: without rdma netlink the kernel cannot be asked, and nothing is steered.
    auto real = makeNetlinkQpOwners()->ownerOf("mlx5_0", 0x20);
    CHECK(real.kind != QpOwner::Kind::Process);
}

TEST_CASE("a forgotten QP goes back to the device's own congestion control",
          "[host-sched][agent][owners]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    REQUIRE(a.engines.at("mlx5_0")->slotOf(0x20) == 1u);
    a.state.clientGone(1);  // the process closed its connection and kept the QP
    CHECK_FALSE(a.engines.at("mlx5_0")->slotOf(0x20));

    // A number the kernel gave to another process after the first destroyed its QP unreported.
    a.report(2, 100, rtr(100, 0x30, 3));
    a.owners.destroy("mlx5_0", 0x30);
    a.report(3, 300, rtr(300, 0x30, 4));  // a leaf without a slot
    REQUIRE(a.find(0x30));
    CHECK(a.find(0x30)->pid == 300);
    CHECK_FALSE(a.engines.at("mlx5_0")->slotOf(0x30));
}

TEST_CASE("one user's QPs and resolves are bounded, each refusal counted and logged",
          "[host-sched][agent][limits]") {
    Agent a;
    ClientLimits limits;
    limits.qps = 3;
    limits.resolves = 2;
    a.state.setLimits(limits);
    for (uint32_t qpn = 1; qpn <= 5; ++qpn) a.report(1, 100, rtr(100, qpn, 2), 65534);
    CHECK(a.state.qpsOf(65534) == 3);
    a.report(2, 200, rtr(200, 9, 2), 1000);  // another user is not held back
    CHECK(a.find(9));
    CHECK(a.state.refusedByLimit() == 2);
    bool logged = false;
    for (const std::string& l : a.logs)
        logged |= l.find("uid 65534: QP report refused") != std::string::npos;
    CHECK(logged);
    a.state.clientGone(1);
    CHECK(a.state.qpsOf(65534) == 0);

    // Resolves waiting for the SA: two per user here; the third is answered busy at once.
    SlResolver resolver(
        [] {
            return [](const std::vector<PathKey>& keys) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return std::vector<PathReply>(keys.size(), PathReply{PathAnswer::Found, 1});
            };
        },
        {});
    a.state.setResolver(&resolver);
    AgentMessage q;
    q.kind = MessageKind::Resolve;
    q.device = "mlx5_0";
    q.port = 1;
    q.slid = 1;
    for (uint16_t dlid = 1; dlid <= 3; ++dlid) {
        q.id = dlid;
        q.dlid = dlid;
        auto replies = a.send(3, 300, q, 65534);
        if (dlid <= 2) {
            CHECK(replies.empty());
        } else {
            REQUIRE(replies.size() == 1);
            MessageError error;
            auto busy = parseAgentMessage(replies[0], error);
            REQUIRE(busy);
            CHECK(busy->answer == PathAnswer::Busy);
        }
    }
    q.id = 4;
    q.dlid = 4;
    CHECK(a.send(4, 400, q, 1000).empty());  // another user still asks
    size_t answered = 0;
    for (int i = 0; i < 200 && answered < 3; ++i) {
        answered += a.state.answers().size();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(answered == 3);
    q.id = 5;
    q.dlid = 5;
    CHECK(a.send(3, 300, q, 65534).empty());  // answered questions free the user's share
    a.state.setResolver(nullptr);
}

TEST_CASE("audit differences past the log's budget are summarized, and logged again later",
          "[host-sched][agent][log]") {
    std::vector<std::string> lines;
    auto now = LogLimiter::Clock::time_point{};
    LogLimiter log([&lines](const std::string& l) { lines.push_back(l); },
                   {10, std::chrono::seconds(60), 4096}, [&now] { return now; });
    for (int i = 0; i < 20000; ++i)
        log.line("audit differences", "audit: difference " + std::to_string(i),
                 "audit:" + std::to_string(i));
    log.line("audit differences", "audit: difference 0", "audit:0");  // a repeat: not news
    CHECK(lines.size() == 10);
    CHECK(log.suppressed() == 19991);
    // Another kind is not held back by the audit's many keys.
    log.line("QP claims refused", "refused: a claim", "claim:1");
    REQUIRE(lines.size() == 11);
    now += std::chrono::seconds(60);
    log.tick();
    REQUIRE(lines.size() == 12);
    CHECK(lines.back() ==
          "audit differences: 19991 more lines of this kind in the last 60 s were not written");
    // Never silenced for good: the next window logs differences again, old keys included.
    log.line("audit differences", "audit: difference 0", "audit:0");
    log.line("audit differences", "audit: difference 20001", "audit:20001");
    CHECK(lines.size() == 14);
    CHECK(lines.back() == "audit: difference 20001");
}

TEST_CASE("garbage changes nothing and a departed client's QPs are forgotten",
          "[host-sched][agent]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    a.report(2, 200, rtr(200, 0x30, 3));
    for (std::string junk : {std::string("\x00\x01\x02", 3), std::string("ibqos1 qp"),
                             std::string(5000, 'A'), std::string("ibqos1 end count=1")}) {
        CHECK(a.state.handle(2, {200, 0}, junk).empty());
    }
    CHECK(a.state.rejectedMessages() == 4);
    CHECK(a.state.qps().size() == 2);
    size_t logged = a.logs.size();
    for (int i = 0; i < 100; ++i) a.state.handle(2, {200, 0}, "nonsense");
    CHECK(a.logs.size() <= logged + 3);  // a chatty client cannot flood the log

    a.state.clientGone(2);
    REQUIRE(a.state.qps().size() == 1);
    CHECK(a.find(0x20));
    CHECK_FALSE(a.state.slotsOf("mlx5_0")->slotOfQp(0x30));
}

TEST_CASE("status lists every QP with its leaf and slot, then the count", "[host-sched][agent]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    a.report(1, 100, rtr(100, 0x21, 9));
    AgentMessage status;
    status.kind = MessageKind::Status;
    std::vector<std::string> replies = a.send(3, 300, status);
    REQUIRE(replies.size() == 3);
    MessageError error;
    auto first = parseAgentMessage(replies[0], error);
    REQUIRE(first);
    CHECK(first->kind == MessageKind::Qp);
    CHECK(first->leaf == "bulk data");
    CHECK(first->slot == 1u);
    CHECK(first->algorithm == "dcqcn");
    auto second = parseAgentMessage(replies[1], error);
    CHECK(second->leaf.empty());
    CHECK_FALSE(second->slot);
    auto end = parseAgentMessage(replies[2], error);
    CHECK(end->kind == MessageKind::End);
    CHECK(end->count == 2);
}

TEST_CASE("a device without a PCC engine is reported once and its QPs are still tracked",
          "[host-sched][agent]") {
    Agent a;
    a.broken.insert("hfi1_0");
    a.report(1, 100, rtr(100, 0x20, 2, "hfi1_0"));
    a.report(1, 100, rtr(100, 0x21, 2, "hfi1_0"));
    CHECK(a.state.qps().size() == 2);
    CHECK_FALSE(a.find(0x20)->slot);
    size_t mentions = 0;
    for (const std::string& l : a.logs)
        mentions += l.find("hfi1_0: no PCC engine") != std::string::npos;
    CHECK(mentions == 1);
}

TEST_CASE("a new plan moves the known QPs to their new slots", "[host-sched][agent]") {
    Agent a;
    a.report(1, 100, rtr(100, 0x20, 2));
    std::string swapped = hostSched;
    swapped.replace(swapped.find("sl: 2"), 5, "sl: 9");
    swapped.replace(swapped.find("sl: 3"), 5, "sl: 2");
    a.state.replacePlan(agentPlan(swapped));
    CHECK(a.find(0x20)->slot == 2u);
    CHECK(a.engines.at("mlx5_0")->slotOf(0x20) == 2u);
}

TEST_CASE("the server serves reports and status over its socket and survives bad clients",
          "[host-sched][agent][server]") {
    char dir[] = "/tmp/ibqos-agent-XXXXXX";
    REQUIRE(mkdtemp(dir));
    std::string path = std::string(dir) + "/run/agent.sock";
    Agent a;
    int stop[2];
    REQUIRE(pipe(stop) == 0);
    std::string error;
    {
        AgentServer server(a.state, path);
        REQUIRE(server.listen(error));
        struct stat st;
        REQUIRE(stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0666);
        AgentServer second(a.state, path);
        CHECK_FALSE(second.listen(error));
        CHECK(error.find("another agent") != std::string::npos);

        std::thread serving([&] { server.run({stop[0]}, [](int) { return false; }); });
        auto connectClient = [&] {
            int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
            sockaddr_un address{};
            address.sun_family = AF_UNIX;
            std::strcpy(address.sun_path, path.c_str());
            REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
            return fd;
        };
        auto waitFor = [&](size_t count) {
            std::vector<AgentMessage> qps;
            for (int i = 0; i < 500; ++i) {
                REQUIRE(requestAgentStatus(path, std::chrono::milliseconds(2000), qps, error));
                if (qps.size() == count) break;
                usleep(2000);
            }
            return qps;
        };
        int client = connectClient();
        a.owners.own("mlx5_0", 0x20, static_cast<uint32_t>(getpid()));
        std::string report = encodeAgentMessage(rtr(static_cast<uint32_t>(getpid()), 0x20, 3));
        REQUIRE(send(client, report.data(), report.size(), 0) > 0);
        std::string big(5000, 'x');
        send(client, big.data(), big.size(), 0);  // oversize garbage
        std::vector<AgentMessage> qps = waitFor(1);
        REQUIRE(qps.size() == 1);
        CHECK(qps[0].leaf == "rpc");
        CHECK(qps[0].slot == 2u);
        CHECK(a.state.rejectedMessages() == 1);
        close(client);  // the process is gone: so are its QPs
        CHECK(waitFor(0).empty());

        REQUIRE(write(stop[1], "x", 1) == 1);
        serving.join();
    }
    struct stat st;
    CHECK(stat(path.c_str(), &st) != 0);  // the socket is removed on the way out

    // A stale socket file (an agent that was killed) is replaced.
    {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, path.c_str());
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        close(fd);
        AgentServer server(a.state, path);
        CHECK(server.listen(error));
    }
    close(stop[0]);
    close(stop[1]);
    std::vector<AgentMessage> none;
    CHECK_FALSE(requestAgentStatus(path, std::chrono::milliseconds(100), none, error));
    CHECK(error.find("no agent answers") != std::string::npos);
    rmdir((std::string(dir) + "/run").c_str());
    rmdir(dir);
}

TEST_CASE("another user can neither take over a QP nor hold more than its share of connections",
          "[host-sched][agent][server][owners][limits]") {
    if (geteuid() != 0) {
        WARN("skipped: acting as another user needs root");
        return;
    }
    constexpr uid_t Nobody = 65534;
    constexpr int Attempts = 5;
    char dir[] = "/tmp/ibqos-agent-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(chmod(dir, 0755) == 0);  // every user reaches the socket, as under /run/ibqos
    std::string path = std::string(dir) + "/agent.sock";
    Agent a;
    ClientLimits limits;
    limits.connections = 3;
    a.state.setLimits(limits);
    int stop[2];
    REQUIRE(pipe(stop) == 0);
    std::string error;
    AgentServer server(a.state, path);
    REQUIRE(server.listen(error));
    std::thread serving([&] { server.run({stop[0]}, [](int) { return false; }); });
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, path.c_str());
    auto connectTo = [&address] {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            close(fd);
            return -1;
        }
        return fd;
    };

    // Root's process owns QP 0x20 and reports it.
    const auto self = static_cast<uint32_t>(getpid());
    a.owners.own("mlx5_0", 0x20, self);
    int mine = connectTo();
    REQUIRE(mine >= 0);
    std::string report = encodeAgentMessage(rtr(self, 0x20, 3));
    REQUIRE(send(mine, report.data(), report.size(), 0) > 0);
    std::vector<AgentMessage> qps;
    for (int i = 0; i < 500 && qps.size() != 1; ++i) {
        REQUIRE(requestAgentStatus(path, std::chrono::milliseconds(2000), qps, error));
        usleep(2000);
    }
    REQUIRE(qps.size() == 1);

    // uid 65534 claims it, under its own pid and under root's, then opens more connections
    // than its share. Everything it sends is made before fork (the child only makes calls).
    const std::string claims[] = {encodeAgentMessage(rtr(self, 0x20, 2)),
                                  encodeAgentMessage(rtr(0, 0x20, 4)),
                                  encodeAgentMessage(destroy(self, 0x20))};
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (setgroups(0, nullptr) != 0 || setresgid(Nobody, Nobody, Nobody) != 0 ||
            setresuid(Nobody, Nobody, Nobody) != 0)
            _exit(100);
        int fds[Attempts];
        for (int& fd : fds) fd = connectTo();
        if (fds[0] < 0) _exit(101);
        for (const std::string& m : claims) send(fds[0], m.data(), m.size(), 0);
        usleep(300000);  // the agent accepts or refuses each connection
        int open = 0;
        for (int fd : fds) {
            char byte;
            pollfd p{fd, POLLIN, 0};
            // A refused connection reads end-of-file; a served one has nothing to read.
            open += fd >= 0 && (poll(&p, 1, 0) == 0 || recv(fd, &byte, 1, MSG_DONTWAIT) != 0);
        }
        _exit(open);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == static_cast<int>(limits.connections));

    REQUIRE(requestAgentStatus(path, std::chrono::milliseconds(2000), qps, error));
    REQUIRE(qps.size() == 1);
    CHECK(qps[0].pid == self);
    CHECK(qps[0].leaf == "rpc");
    CHECK(qps[0].slot == 2u);
    CHECK(a.engines.at("mlx5_0")->slotOf(0x20) == 2u);

    REQUIRE(write(stop[1], "x", 1) == 1);
    serving.join();
    close(mine);
    CHECK(a.state.refusedByLimit() == Attempts - limits.connections);
    size_t claimsLogged = 0, refusalsLogged = 0;
    for (const std::string& l : a.logs) {
        claimsLogged += l.rfind("refused: pid ", 0) == 0 &&
                        l.find("uid 65534") != std::string::npos &&
                        l.find("pid " + std::to_string(self) + "'s") != std::string::npos;
        refusalsLogged += l.find("uid 65534: connection refused") != std::string::npos;
    }
    CHECK(claimsLogged >= 1);
    CHECK(refusalsLogged >= 1);
    close(stop[0]);
    close(stop[1]);
    rmdir(dir);
}

TEST_CASE("the enforcement messages survive writing and reading, and bad ones are refused",
          "[host-sched][agent][protocol][enforce]") {
    AgentMessage resolve;
    resolve.kind = MessageKind::Resolve;
    resolve.id = 77;
    resolve.device = "mlx5_1";
    resolve.port = 2;
    resolve.slid = 0x11;
    resolve.dlid = 0x2a;
    AgentMessage withPkey = resolve;
    withPkey.pkey = 0x8001;
    AgentMessage found;
    found.kind = MessageKind::Path;
    found.id = 77;
    found.answer = PathAnswer::Found;
    found.sl = 5;
    AgentMessage busy = found;
    busy.answer = PathAnswer::Busy;
    busy.sl.reset();
    AgentMessage ah;
    ah.kind = MessageKind::Ah;
    ah.pid = 9;
    ah.device = "mlx5_0";
    ah.port = 1;
    ah.dlid = 3;
    ah.sl = 5;
    ah.mode = SlMode::Enforce;
    ah.appSl = 0;
    ah.saSl = 5;
    ah.outcome = SlOutcome::Replaced;
    AgentMessage audited = rtr(4, 5, 0);
    audited.dlid = 6;
    audited.mode = SlMode::Audit;
    audited.appSl = 0;
    audited.saSl = 2;
    audited.outcome = SlOutcome::Differs;
    AgentMessage end;
    end.kind = MessageKind::End;
    end.counters = Counters{};
    (*end.counters)[static_cast<size_t>(Counter::Replaced)] = 1ull << 40;
    for (const AgentMessage& m : {resolve, withPkey, found, busy, ah, audited, end}) {
        std::string text = encodeAgentMessage(m);
        MessageError error;
        auto back = parseAgentMessage(text, error);
        INFO(text << " -> " << error.message);
        REQUIRE(back);
        CHECK(*back == m);
    }
    CHECK(encodeAgentMessage(withPkey) ==
          "ibqos1 resolve id=77 dev=mlx5_1 port=2 slid=0x0011 dlid=0x002a pkey=0x8001");
    for (std::string bad :
         {"ibqos1 path id=1 answer=found", "ibqos1 path id=1 answer=busy sl=2",
          "ibqos1 resolve id=1 dev=d port=1 slid=0 dlid=2",
          "ibqos1 rtr pid=5 dev=d qpn=1 type=rc sl=1 leaf=- attached=1 outcome=none",
          "ibqos1 rtr pid=5 dev=d qpn=1 type=rc sl=1 leaf=- attached=1 mode=Audit",
          "ibqos1 ah pid=5 dev=d port=1 dlid=2 sl=1 mode=audit"}) {
        MessageError error;
        INFO(bad);
        CHECK_FALSE(parseAgentMessage(bad, error));
    }
}

namespace {

// A source that answers SL = DLID % 16 (DLID 99: no path, DLID 98: no answer), records each
// batch and can be held so that questions pile up.
struct FakeSource {
    std::mutex mutex;
    std::condition_variable released;
    bool hold = false;
    std::vector<size_t> batches;
    std::atomic<int> flip{0};  // added to every SL: a "new policy"

    PathSource make() {
        return [this](const std::vector<PathKey>& keys) {
            std::unique_lock lock(mutex);
            released.wait(lock, [this] { return !hold; });
            batches.push_back(keys.size());
            std::vector<PathReply> out;
            for (const PathKey& k : keys) {
                if (k.dlid == 99)
                    out.push_back({PathAnswer::NoPath, std::nullopt});
                else if (k.dlid == 98)
                    out.push_back({});
                else
                    out.push_back({PathAnswer::Found, static_cast<uint8_t>((k.dlid + flip) % 16)});
            }
            return out;
        };
    }
    void setHold(bool on) {
        {
            std::lock_guard lock(mutex);
            hold = on;
        }
        released.notify_all();
    }
};

// Waits until the resolver has this many answers in all.
std::vector<std::pair<Waiter, PathReply>> collect(SlResolver& r, size_t count) {
    std::vector<std::pair<Waiter, PathReply>> all;
    for (int i = 0; i < 500 && all.size() < count; ++i) {
        pollfd p{r.eventFd(), POLLIN, 0};
        poll(&p, 1, 10);
        for (auto& a : r.takeAnswers()) all.push_back(a);
    }
    return all;
}

PathKey key(uint16_t dlid) { return PathKey{"mlx5_0", 1, 7, dlid, 0xffff}; }

}  // namespace

TEST_CASE("the resolver asks the SA once per path, in bounded batches, and caches answers",
          "[host-sched][agent][enforce]") {
    FakeSource sa;
    ResolverOptions options;
    options.inFlight = 4;
    options.maxPending = 20;
    SlResolver r([&sa] { return sa.make(); }, options);
    sa.setHold(true);
    // A job start: ten processes ask for the same path, and everyone for many others.
    for (uint32_t i = 0; i < 10; ++i) REQUIRE(r.ask(key(5), Waiter{i, i}));
    for (uint16_t d = 10; d < 29; ++d) REQUIRE(r.ask(key(d), Waiter{100, d}));
    CHECK_FALSE(r.ask(key(40), Waiter{100, 40}));  // 20 paths wait: busy
    CHECK(r.ask(key(5), Waiter{11, 11}));          // but a waiting path takes more waiters
    sa.setHold(false);
    auto answers = collect(r, 30);
    REQUIRE(answers.size() == 30);
    for (auto& [waiter, reply] : answers) {
        uint16_t dlid = waiter.client == 100 ? static_cast<uint16_t>(waiter.id) : 5;
        CHECK(reply.answer == PathAnswer::Found);
        CHECK(reply.sl == std::optional<uint8_t>(dlid % 16));
    }
    CHECK(r.saQueries() == 20);
    for (size_t b : sa.batches) CHECK(b <= 4);
    REQUIRE(r.cached(key(5)));
    CHECK(r.cached(key(5))->sl == std::optional<uint8_t>(5));
    CHECK(r.cacheEntries() == 20);

    // No path is kept; no answer is not.
    REQUIRE(r.ask(key(99), Waiter{1, 1}));
    REQUIRE(r.ask(key(98), Waiter{1, 2}));
    CHECK(collect(r, 2).size() == 2);
    CHECK(r.cached(key(99)));
    CHECK_FALSE(r.cached(key(98)));
    CHECK(r.saFailed() == 1);
    r.invalidate();
    CHECK_FALSE(r.cached(key(5)));
}

TEST_CASE("old answers expire, are asked again, and a changed one drops the whole cache",
          "[host-sched][agent][enforce]") {
    FakeSource sa;
    ResolverOptions options;
    options.cacheSize = 3;
    options.refresh = std::chrono::milliseconds(30);
    options.lifetime = std::chrono::milliseconds(100000);
    SlResolver r([&sa] { return sa.make(); }, options);
    for (uint16_t d = 1; d <= 4; ++d) REQUIRE(r.ask(key(d), Waiter{1, d}));
    REQUIRE(collect(r, 4).size() == 4);
    CHECK(r.cacheEntries() == 3);  // bounded: the oldest went
    CHECK_FALSE(r.cached(key(1)));
    REQUIRE(r.cached(key(4)));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    sa.flip = 1;                // the SM now answers every path differently
    REQUIRE(r.cached(key(4)));  // still given, and asked again
    for (int i = 0; i < 200 && r.changes() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(r.changes() == 1);
    CHECK_FALSE(r.cached(key(3)));  // dropped with the rest
    REQUIRE(r.cached(key(4)));
    CHECK(r.cached(key(4))->sl == std::optional<uint8_t>(5));

    ResolverOptions shortLived;
    shortLived.lifetime = std::chrono::milliseconds(20);
    SlResolver brief([&sa] { return sa.make(); }, shortLived);
    REQUIRE(brief.ask(key(2), Waiter{1, 1}));
    REQUIRE(collect(brief, 1).size() == 1);
    CHECK(brief.cached(key(2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(brief.cached(key(2)));
}

TEST_CASE("the agent answers resolve questions from its cache or later, and counts outcomes",
          "[host-sched][agent][enforce]") {
    Agent a;
    AgentMessage q;
    q.kind = MessageKind::Resolve;
    q.id = 1;
    q.device = "mlx5_0";
    q.port = 1;
    q.slid = 7;
    q.dlid = 3;
    // Without a resolver: failed at once.
    auto replies = a.send(1, 10, q);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0] == "ibqos1 path id=1 answer=failed");

    FakeSource sa;
    SlResolver r([&sa] { return sa.make(); }, ResolverOptions{});
    a.state.setResolver(&r);
    CHECK(a.state.answersFd() == r.eventFd());
    CHECK(a.send(1, 10, q).empty());  // asked; answered when the SA is
    std::vector<std::pair<uint64_t, std::string>> later;
    for (int i = 0; i < 200 && later.empty(); ++i) {
        pollfd p{r.eventFd(), POLLIN, 0};
        poll(&p, 1, 10);
        later = a.state.answers();
    }
    REQUIRE(later.size() == 1);
    CHECK(later[0] ==
          std::make_pair(uint64_t{1}, std::string("ibqos1 path id=1 answer=found sl=3")));
    q.id = 2;
    CHECK(a.send(2, 11, q) == std::vector<std::string>{"ibqos1 path id=2 answer=found sl=3"});

    AgentMessage audited = rtr(10, 5, 0);
    audited.dlid = 3;
    audited.mode = SlMode::Audit;
    audited.appSl = 0;
    audited.saSl = 3;
    audited.outcome = SlOutcome::Differs;
    a.report(1, 10, audited);
    AgentMessage late = rtr(10, 6, 0);
    late.mode = SlMode::Enforce;
    late.appSl = 0;
    late.outcome = SlOutcome::NoAnswer;
    a.report(1, 10, late);
    a.report(1, 10, late);
    Counters c = a.state.counters();
    auto count = [&c](Counter k) { return c[static_cast<size_t>(k)]; };
    CHECK(count(Counter::Resolves) == 3);
    CHECK(count(Counter::CacheHits) == 1);
    CHECK(count(Counter::SaQueries) == 1);
    CHECK(count(Counter::Differs) == 1);
    CHECK(count(Counter::NoAnswer) == 2);
    const TrackedQp* qp = a.find(5);
    REQUIRE(qp);
    CHECK(qp->outcome == SlOutcome::Differs);
    CHECK(qp->saSl == std::optional<uint8_t>(3));
    size_t audits = 0, fallbacks = 0;
    for (const std::string& line : a.logs) {
        audits += line.find("audit: pid 10 (") == 0 &&
                  line.find("QP 5 on mlx5_0 to DLID 3 uses SL 0; the SA answers SL 3") !=
                      std::string::npos;
        fallbacks += line.find("no SA answer in time") != std::string::npos;
    }
    CHECK(audits == 1);
    CHECK(fallbacks == 1);  // once per process
    a.state.invalidatePaths();
    CHECK(a.state.counters()[static_cast<size_t>(Counter::Invalidations)] == 1);
    q.id = 3;
    CHECK(a.send(2, 11, q).empty());  // asked afresh
    a.state.setResolver(nullptr);
}

TEST_CASE("the path table gives processes exactly the answers published, until they stop counting",
          "[host-sched][agent][enforce]") {
    char dir[] = "/tmp/ibqos-table-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string path = std::string(dir) + "/path-table";
    std::string error;
    auto writer = PathTable::create(path, 100, error);
    REQUIRE(writer);
    auto reader = PathTable::open(path);
    REQUIRE(reader);
    PathKey a{"mlx5_0", 1, 7, 42, 0xffff};
    PathKey noPkey{"mlx5_0", 1, 7, 42, std::nullopt};
    PathKey otherPort{"mlx5_0", 2, 7, 42, 0xffff};
    CHECK_FALSE(reader->find(a));
    writer->publish(a, TableAnswer{true, 5}, std::chrono::seconds(10));
    writer->publish(noPkey, TableAnswer{false, 0}, std::chrono::seconds(10));
    REQUIRE(reader->find(a));
    CHECK(reader->find(a)->sl == 5);
    REQUIRE(reader->find(noPkey));
    CHECK_FALSE(reader->find(noPkey)->found);
    CHECK_FALSE(reader->find(otherPort));
    // Many paths: each finds its own answer or none, never another path's.
    for (uint16_t d = 1; d < 2000; ++d)
        writer->publish(PathKey{"mlx5_0", 1, 7, d, 0xffff}, TableAnswer{true, uint8_t(d % 16)},
                        std::chrono::seconds(10));
    size_t found = 0;
    for (uint16_t d = 1; d < 2000; ++d) {
        auto answer = reader->find(PathKey{"mlx5_0", 1, 7, d, 0xffff});
        if (!answer) continue;
        ++found;
        CHECK(answer->sl == d % 16);
    }
    CHECK(found >= 64);  // 128 slots: the newest answers stay
    writer->invalidate();
    CHECK_FALSE(reader->find(PathKey{"mlx5_0", 1, 7, 1999, 0xffff}));
    writer->publish(a, TableAnswer{true, 5}, std::chrono::milliseconds(20));
    CHECK(reader->find(a));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(reader->find(a));  // expired
    // Anything but a table is not mapped.
    for (std::string junk : {std::string("IBQOSPT1"), std::string(4096, 'x'), std::string()}) {
        std::ofstream(path, std::ios::trunc) << junk;
        CHECK_FALSE(PathTable::open(path));
    }
    CHECK_FALSE(PathTable::open(std::string(dir) + "/absent"));
    unlink(path.c_str());
    rmdir(dir);
}

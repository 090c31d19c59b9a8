// SPDX-License-Identifier: MIT
// Benchmark: what SL enforcement costs. An agent (AgentState, SlResolver, AgentServer) runs in
// this process on a modelled SA: each batch of PathRecord queries takes one round trip plus the
// SA's service time per query (--sa-rtt-us, --sa-rate). Three measurements:
//   rtr:       a child process under libibqos_preload.so (recording stand-in below) brings QPs
//              to RTR in enforce mode to paths the agent has not seen (cold); a second child to
//              the same paths (warm: the answers the agent published in its shared table); a
//              third without the table (each RTR one round trip to the agent and its cache).
//              Figures per RTR, those named "added" minus the same child in respect mode.
//   resolves:  clients on their own connections ask for cached paths as fast as the agent
//              answers: resolves per second.
//   table_find: the lookup a warm RTR makes in the agent's shared table.
//   job_start: a job start on one host: --ranks processes each connect to --peers others, one
//              RTR after another with the policy's default 5 ms bound, the cache cold. How the
//              agent merges and batches the SA queries, and how many QPs keep their own SL.
//   job_start_threads: a job start inside one process under the library: --threads threads
//              each bring --thread-peers QPs to RTR on paths nobody asked for yet, all at once,
//              while one more thread brings a QP to RTR every millisecond on a path the agent's
//              table holds. How long the burst takes to drain, each cold RTR's latency, and the
//              warm thread's: one thread's wait for the agent must not hold up another's call.
//   ibqos-bench-enforce [--qps N] [--sa-rtt-us U] [--sa-rate Q] [--ranks R] [--peers P]
//                       [--threads T] [--thread-peers P] [--preload LIB] [--json]
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.hpp"
#include "host-sched/agent/agent_server.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/pcc/pcc_simulated.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "tests/host-sched/verbs_standin.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// An RC QP of the stand-in's device, in INIT on port 1.
ibv_qp* qpInInit(ibv_context* context, uint32_t qpn) {
    ibv_qp* qp = standin_create_qp(context, qpn, IBV_QPT_RC);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX);
    return qp;
}

// INIT -> RTR to a DLID on SL 0.
int rtr(ibv_qp* qp, unsigned dlid) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.ah_attr.dlid = static_cast<uint16_t>(dlid);
    attr.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV);
}

// The measuring child: `qps` RC QPs to DLIDs first+0.. (cold), then as many to the same DLIDs
// (warm), each RTR timed, all on SL 0.
int measure(unsigned qps, unsigned first) {
    ibv_context* context = standin_open_device("mlx5_0", StandinFullCaps);
    std::vector<ibv_qp*> list;
    for (unsigned i = 0; i < 2 * qps + 1; ++i) list.push_back(qpInInit(context, 0x100 + i));
    rtr(list[0], first + 2 * qps + 1);  // loads the plan, connects to the agent: not counted
    auto start = Clock::now();
    for (unsigned i = 0; i < qps; ++i) rtr(list[1 + i], first + i);
    double cold = secondsSince(start) / qps;
    start = Clock::now();
    for (unsigned i = 0; i < qps; ++i) rtr(list[1 + qps + i], first + i);
    double warm = secondsSince(start) / qps;
    std::fprintf(stderr, "cold=%.9f warm=%.9f\n", cold, warm);
    std::fflush(stderr);
    _exit(0);  // the library keeps its agent connection to the end
}

// The quantile q of a set of times (sorted here).
double quantile(std::vector<double>& times, double q) {
    if (times.empty()) return 0;
    std::sort(times.begin(), times.end());
    return times[std::min(times.size() - 1,
                          static_cast<size_t>(q * static_cast<double>(times.size())))];
}

// The threaded job start's child: `threads` threads each bring `peers` RC QPs to RTR at once,
// one after another, to DLIDs first + t * peers + i (cold); meanwhile one more thread brings a
// QP to RTR every millisecond on one of WarmPaths paths asked for before the clock started
// (warm: in the agent's table). Every RTR timed.
int burst(unsigned threads, unsigned peers, unsigned first) {
    constexpr unsigned WarmPaths = 16;
    ibv_context* context = standin_open_device("mlx5_0", StandinFullCaps);
    uint32_t nextQpn = 0x100;
    auto makeQp = [&] { return qpInInit(context, nextQpn++); };
    // Not counted: the plan loaded, the agent connected, the warm paths answered and published.
    const unsigned warmFirst = first + threads * peers;
    std::vector<ibv_qp*> warmQps;
    for (unsigned k = 0; k < WarmPaths; ++k) {
        warmQps.push_back(makeQp());
        rtr(warmQps.back(), warmFirst + k);
    }
    std::vector<std::vector<ibv_qp*>> cold(threads);
    for (auto& list : cold) {
        for (unsigned i = 0; i < peers; ++i) list.push_back(makeQp());
    }
    std::vector<double> coldTimes(threads * peers), warmTimes;
    std::atomic<bool> over{false};
    auto start = Clock::now();
    std::thread warm([&] {
        for (unsigned k = 0; !over; ++k) {
            auto t0 = Clock::now();
            rtr(warmQps[k % WarmPaths], warmFirst + k % WarmPaths);
            warmTimes.push_back(secondsSince(t0));
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (unsigned i = 0; i < peers; ++i) {
                auto t0 = Clock::now();
                rtr(cold[t][i], first + t * peers + i);
                coldTimes[t * peers + i] = secondsSince(t0);
            }
        });
    }
    for (auto& w : workers) w.join();
    double drain = secondsSince(start);
    over = true;
    warm.join();
    std::fprintf(stderr,
                 "drain=%.9f cold_p50=%.9f cold_p99=%.9f cold_max=%.9f warm_p50=%.9f "
                 "warm_p99=%.9f warm_max=%.9f warm_rtrs=%zu\n",
                 drain, quantile(coldTimes, 0.5), quantile(coldTimes, 0.99),
                 quantile(coldTimes, 1.0), quantile(warmTimes, 0.5), quantile(warmTimes, 0.99),
                 quantile(warmTimes, 1.0), warmTimes.size());
    std::fflush(stderr);
    _exit(0);  // the library keeps its agent connection to the end
}

// The modelled SA: a batch takes one round trip plus the service time of each query; SL =
// DLID % 16. Counts batches and the largest.
struct ModelSa {
    std::chrono::microseconds rtt{200};
    double rate = 20000;  // queries per second
    std::atomic<uint64_t> batches{0}, largest{0};

    PathSource source() {
        return [this](const std::vector<PathKey>& keys) {
            ++batches;
            largest = std::max<uint64_t>(largest, keys.size());
            std::this_thread::sleep_for(rtt + std::chrono::microseconds(static_cast<int64_t>(
                                                  1e6 * static_cast<double>(keys.size()) / rate)));
            std::vector<PathReply> out;
            for (const PathKey& k : keys)
                out.push_back({PathAnswer::Found, static_cast<uint8_t>(k.dlid % 16)});
            return out;
        };
    }
};

// The agent of the benchmark: its state, resolver and server on a thread of their own.
class Agent {
  public:
    Agent(HostPlan plan, ModelSa& sa, std::string socketPath, const std::string& tablePath)
        : state_(
              std::move(plan),
              [](const std::string&, std::string&) {
                  return std::make_unique<SimulatedPccEngine>();
              },
              10, 1, [](const std::string&) {}),
          resolver_([&sa] { return sa.source(); }, ResolverOptions{}),
          server_(state_, socketPath),
          stop_(eventfd(0, EFD_CLOEXEC)) {
        state_.setResolver(&resolver_);
        std::string error;
        table_ = PathTable::create(tablePath, ResolverOptions{}.cacheSize, error);
        if (!table_ || !server_.listen(error)) throw std::runtime_error(error);
        resolver_.setTable(&*table_);
        thread_ = std::thread([this] { server_.run({stop_}, [](int) { return false; }); });
    }
    ~Agent() {
        uint64_t one = 1;
        (void)!write(stop_, &one, sizeof one);
        thread_.join();
        close(stop_);
        state_.setResolver(nullptr);
        resolver_.setTable(nullptr);
    }
    // Read only after the server stopped, or for figures that may be a moment late.
    const SlResolver& resolver() const { return resolver_; }

  private:
    AgentState state_;
    std::optional<PathTable> table_;
    SlResolver resolver_;
    AgentServer server_;
    int stop_;
    std::thread thread_;
};

int connectTo(const std::string& path) {
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

// One resolve exchange as the library does it; false when no answer came within the bound.
bool ask(int fd, uint32_t id, uint16_t dlid, std::chrono::microseconds bound) {
    AgentMessage q;
    q.kind = MessageKind::Resolve;
    q.id = id;
    q.device = "mlx5_0";
    q.port = 1;
    q.slid = 1;
    q.dlid = dlid;
    q.pkey = 0xffff;
    std::string text = encodeAgentMessage(q);
    if (send(fd, text.data(), text.size(), MSG_NOSIGNAL) < 0) return false;
    auto deadline = Clock::now() + bound;
    char buffer[MaxAgentMessage + 1];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()) + 1)) <= 0)
            return false;
        ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) return false;
        MessageError error;
        auto m = parseAgentMessage(std::string_view(buffer, static_cast<size_t>(n)), error);
        if (m && m->kind == MessageKind::Path && m->id == id) return Clock::now() <= deadline;
    }
}

}  // namespace

int main(int argc, char** argv) {
    unsigned qps = 2000, first = 1, threadPeers = 64;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--first")
            first = static_cast<unsigned>(std::atoi(argv[i + 1]));
        if (std::string(argv[i]) == "--thread-peers")
            threadPeers = static_cast<unsigned>(std::atoi(argv[i + 1]));
    }
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--measure")
            return measure(static_cast<unsigned>(std::atoi(argv[i + 1])), first);
        if (std::string(argv[i]) == "--burst")
            return burst(static_cast<unsigned>(std::atoi(argv[i + 1])), threadPeers, first);
    }
    unsigned rttUs = 200, rate = 20000, ranks = 8, peers = 512, clients = 4, threads = 32;
    std::string preload = PRELOAD_LIB;
    bench::Program program("ibqos-bench-enforce",
                           "SL enforcement: the RTR's added latency (cold and warm cache), the "
                           "agent's resolves per second, a job start's burst.");
    program.options()
        .add_option("--qps", qps, "QPs per RTR run (default 2000)")
        ->check(CLI::Range(1u, 15000u));
    program.options().add_option("--sa-rtt-us", rttUs,
                                 "the modelled SA's round trip (default 200)");
    program.options()
        .add_option("--sa-rate", rate, "the modelled SA's queries per second (default 20000)")
        ->check(CLI::PositiveNumber);
    program.options()
        .add_option("--ranks", ranks, "processes of the job on the host (default 8)")
        ->check(CLI::Range(1u, 256u));
    program.options()
        .add_option("--peers", peers, "peers each process connects to (default 512)")
        ->check(CLI::Range(1u, 15000u));
    program.options()
        .add_option("--clients", clients, "resolve clients (default 4)")
        ->check(CLI::Range(1u, 64u));
    program.options()
        .add_option("--threads", threads,
                    "threads of the process of job_start_threads (default 32)")
        ->check(CLI::Range(1u, 256u));
    program.options()
        .add_option("--thread-peers", threadPeers,
                    "peers each of those threads connects to (default 64)")
        ->check(CLI::Range(1u, 1000u));
    program.options().add_option("--preload", preload,
                                 "the preload library measured (default: the one built with this "
                                 "program)");
    program.options().add_option("--measure", qps, "(internal) the measuring child")->group("");
    program.options().add_option("--burst", threads, "(internal) the burst child")->group("");
    program.options().add_option("--first", first, "(internal) the child's first DLID")->group("");
    if (auto status = program.parse(argc, argv)) return *status;

    std::string dir = "/tmp/ibqos-bench-enforce-" + std::to_string(getpid());
    mkdir(dir.c_str(), 0700);
    std::string socketPath = dir + "/agent.sock";
    std::string error;
    auto plan = loadHostPlan(SAMPLE_POLICY, error);
    if (!plan) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    std::string respectPlan = dir + "/respect-plan", enforcePlan = dir + "/enforce-plan";
    std::ofstream(respectPlan) << planFileText(*plan, SAMPLE_POLICY);
    SlEnforcement enforce;
    enforce.mode = SlMode::Enforce;
    enforce.resolveTimeoutMs = 1000;  // the cold figure is the whole wait, never a fallback
    std::ofstream(enforcePlan) << planFileText(HostPlan::fromElements(plan->elements(), {enforce}),
                                               SAMPLE_POLICY);

    ModelSa sa;
    sa.rtt = std::chrono::microseconds(rttUs);
    sa.rate = rate;
    const std::string tablePath = dir + "/path-table";
    Agent agent(*plan, sa, socketPath, tablePath);
    setenv("STANDIN_QUIET", "1", 1);
    for (const char* name : {"rtr_respect", "rtr_added_warm", "rtr_added_agent_round_trip"})
        bench::counterUnit(name, "us", 1e6);
    bench::counterUnit("rtr_enforce_cold", "us", 1e6);
    bench::counterUnit("resolves_per_s", "1/s");
    bench::counterUnit("burst_drain", "ms", 1e3);
    for (const char* name : {"threads_drain", "cold_rtr_p50", "cold_rtr_p99", "cold_rtr_max",
                             "warm_rtr_p50", "warm_rtr_p99", "warm_rtr_max"})
        bench::counterUnit(name, "ms", 1e3);
    const char* self = argv[0];
    auto runChild = [&](unsigned from, const std::map<std::string, std::string>& env) {
        return bench::runMeasuringChild(
            self, {"--measure", std::to_string(qps), "--first", std::to_string(from)}, env);
    };
    unsigned nextDlid = 1;  // every run asks for paths the agent has not seen

    benchmark::RegisterBenchmark(
        "rtr",
        [&](benchmark::State& state) {
            std::map<std::string, double> base, enforced, again, asking;
            for (auto _ : state) {
                std::map<std::string, std::string> env{{"LD_PRELOAD", preload},
                                                       {"IBQOS_AGENT_SOCKET", socketPath},
                                                       {"IBQOS_PATH_TABLE", tablePath},
                                                       {"IBQOS_SCHED_BACKEND", "simulated"}};
                env["IBQOS_PLAN"] = respectPlan;
                base = runChild(nextDlid, env);
                env["IBQOS_PLAN"] = enforcePlan;
                enforced = runChild(nextDlid, env);
                again = runChild(nextDlid, env);
                env["IBQOS_PATH_TABLE"] = dir + "/no-table";
                asking = runChild(nextDlid, env);
                nextDlid += 2 * qps + 2;
                if (base.size() != 2 || enforced.size() != 2 || again.size() != 2 ||
                    asking.size() != 2) {
                    state.SkipWithError("a measuring child failed");
                    return;
                }
            }
            state.counters["no_time"] = 1;
            state.counters["rtr_respect"] = base["warm"];
            state.counters["rtr_added_warm"] = again["cold"] - base["cold"];
            state.counters["rtr_added_agent_round_trip"] = asking["cold"] - base["cold"];
            state.counters["rtr_enforce_cold"] = enforced["cold"];
            bench::setParams(state, {{"qps", qps}, {"sa_rtt_us", rttUs}, {"sa_rate", rate}});
        })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);

    benchmark::RegisterBenchmark("resolves",
                                 [&](benchmark::State& state) {
                                     // The cache holds these paths first.
                                     std::vector<uint16_t> paths;
                                     for (unsigned i = 0; i < 64; ++i)
                                         paths.push_back(static_cast<uint16_t>(nextDlid + i));
                                     nextDlid += 64;
                                     int warmup = connectTo(socketPath);
                                     for (uint16_t d : paths)
                                         ask(warmup, d, d, std::chrono::seconds(5));
                                     close(warmup);
                                     uint64_t total = 0;
                                     double seconds = 0;
                                     for (auto _ : state) {
                                         std::atomic<uint64_t> answered{0};
                                         std::atomic<bool> stop{false};
                                         std::vector<std::thread> threads;
                                         auto start = Clock::now();
                                         for (unsigned c = 0; c < clients; ++c) {
                                             threads.emplace_back([&, c] {
                                                 int fd = connectTo(socketPath);
                                                 for (uint32_t id = 1; fd >= 0 && !stop; ++id) {
                                                     if (ask(fd, id, paths[(id + c) % paths.size()],
                                                             std::chrono::seconds(5)))
                                                         ++answered;
                                                 }
                                                 if (fd >= 0) close(fd);
                                             });
                                         }
                                         std::this_thread::sleep_for(std::chrono::seconds(2));
                                         stop = true;
                                         for (auto& t : threads) t.join();
                                         seconds += secondsSince(start);
                                         total += answered;
                                     }
                                     state.counters["no_time"] = 1;
                                     state.counters["resolves_per_s"] =
                                         static_cast<double>(total) / seconds;
                                     bench::setParams(state, {{"clients", clients}});
                                 })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);

    benchmark::RegisterBenchmark(
        "job_start",
        [&](benchmark::State& state) {
            uint64_t batchesBefore = sa.batches, queriesBefore = agent.resolver().saQueries();
            std::atomic<uint64_t> fellBack{0};
            double drain = 0;
            for (auto _ : state) {
                const unsigned base = nextDlid;
                nextDlid += peers;
                sa.largest = 0;
                std::vector<std::thread> threads;
                auto start = Clock::now();
                for (unsigned r = 0; r < ranks; ++r) {
                    threads.emplace_back([&, r] {
                        int fd = connectTo(socketPath);
                        std::vector<unsigned> order(peers);
                        for (unsigned i = 0; i < peers; ++i) order[i] = i;
                        std::shuffle(order.begin(), order.end(), std::mt19937(r));
                        uint32_t id = 0;
                        for (unsigned peer : order) {
                            if (!ask(fd, ++id, static_cast<uint16_t>(base + peer),
                                     std::chrono::milliseconds(5)))
                                ++fellBack;
                        }
                        close(fd);
                    });
                }
                for (auto& t : threads) t.join();
                drain = secondsSince(start);
            }
            state.counters["no_time"] = 1;
            state.counters["rtrs"] = ranks * peers;
            state.counters["fell_back"] = static_cast<double>(fellBack);
            state.counters["sa_queries"] =
                static_cast<double>(agent.resolver().saQueries() - queriesBefore);
            state.counters["sa_batches"] = static_cast<double>(sa.batches - batchesBefore);
            state.counters["largest_batch"] = static_cast<double>(sa.largest);
            state.counters["burst_drain"] = drain;
            bench::setParams(state, {{"ranks", ranks},
                                     {"peers", peers},
                                     {"sa_rtt_us", rttUs},
                                     {"sa_rate", rate},
                                     {"bound_ms", 5}});
        })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);

    benchmark::RegisterBenchmark(
        "job_start_threads",
        [&](benchmark::State& state) {
            std::map<std::string, double> f;
            for (auto _ : state) {
                f = bench::runMeasuringChild(
                    self,
                    {"--burst", std::to_string(threads), "--thread-peers",
                     std::to_string(threadPeers), "--first", std::to_string(nextDlid)},
                    {{"LD_PRELOAD", preload},
                     {"IBQOS_AGENT_SOCKET", socketPath},
                     {"IBQOS_PATH_TABLE", tablePath},
                     {"IBQOS_SCHED_BACKEND", "simulated"},
                     {"IBQOS_PLAN", enforcePlan}});
                nextDlid += threads * threadPeers + 16;
                if (!f.count("drain")) {
                    state.SkipWithError("the burst child failed");
                    return;
                }
            }
            state.counters["no_time"] = 1;
            state.counters["rtrs"] = threads * threadPeers;
            state.counters["threads_drain"] = f["drain"];
            state.counters["cold_rtr_p50"] = f["cold_p50"];
            state.counters["cold_rtr_p99"] = f["cold_p99"];
            state.counters["cold_rtr_max"] = f["cold_max"];
            state.counters["warm_rtr_p50"] = f["warm_p50"];
            state.counters["warm_rtr_p99"] = f["warm_p99"];
            state.counters["warm_rtr_max"] = f["warm_max"];
            state.counters["warm_rtrs"] = f["warm_rtrs"];
            bench::setParams(state, {{"threads", threads},
                                     {"thread_peers", threadPeers},
                                     {"sa_rtt_us", rttUs},
                                     {"sa_rate", rate},
                                     {"bound_ms", enforce.resolveTimeoutMs}});
        })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);

    benchmark::RegisterBenchmark("table_find", [&](benchmark::State& state) {
        // What a warm RTR adds in the library: one lookup in the agent's published table.
        auto table = PathTable::open(tablePath);
        if (!table) {
            state.SkipWithError("no table");
            return;
        }
        PathKey key{"mlx5_0", 1, 1, static_cast<uint16_t>(nextDlid - 1), 0xffff};
        uint64_t found = 0;
        for (auto _ : state) {
            auto answer = table->find(key);
            found += answer.has_value();
            benchmark::DoNotOptimize(answer);
        }
        if (static_cast<benchmark::IterationCount>(found) != state.iterations())
            state.SkipWithError("the path is not in the table");
    })->Unit(benchmark::kNanosecond);

    int status = program.run();
    for (const std::string& f : {respectPlan, enforcePlan, tablePath}) unlink(f.c_str());
    unlink(socketPath.c_str());
    rmdir(dir.c_str());
    return status;
}

// SPDX-License-Identifier: MIT
// Benchmark: what libibqos_preload.so adds to each QP's RTR transition (and destroy), measured
// over the recording stand-in, with an agent listening. The program runs itself three times:
// without the library, with it and the simulated backend, with it and the mlx5 backend on the
// emulated device. A second benchmark gives the added cost per RTR by the way the application
// reaches the device, at N and 10N QPs: ibv_modify_qp linked directly, ibv_modify_qp found with
// dlvsym on a dlopen handle (NCCL's way), and DEVX INIT2RTR_QP commands through
// mlx5dv_devx_obj_modify (UCX on mlx5).
//   ibqos-bench-preload [--qps N] [--json] [--benchmark_... flags]
#include <dlfcn.h>
#include <infiniband/mlx5dv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "tests/doubles/devx_commands.hpp"
#include "tests/host-sched/verbs_standin.hpp"

using namespace ibqos;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An agent that reads every report, as the real one would, on $IBQOS_AGENT_SOCKET: the
// listening socket (-1 without one, -2 on failure) and the thread reading.
int listenAsAgent(std::thread& agent) {
    const char* path = std::getenv("IBQOS_AGENT_SOCKET");
    if (!path) return -1;
    int listener = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path, sizeof address.sun_path - 1);
    unlink(path);
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listener, 4) != 0) {
        std::perror("agent socket");
        return -2;
    }
    agent = std::thread([listener] {
        int c = accept(listener, nullptr, nullptr);
        char buffer[2048];
        while (c >= 0 && recv(c, buffer, sizeof buffer, 0) > 0) {
        }
        if (c >= 0) close(c);
    });
    return listener;
}

// The measuring child of the second benchmark: N QPs reach RTR the way `path` names (direct,
// dlvsym, devx), after one that is not timed; prints "rtr=SECONDS" per RTR.
int measurePath(unsigned qps, const std::string& path) {
    namespace dx = ibqos::test::devx;
    std::thread agent;
    if (listenAsAgent(agent) == -2) return 2;
    ibv_context* context = standin_open_device("mlx5_0", StandinFullCaps);
    using ModifyQpFn = int (*)(ibv_qp*, ibv_qp_attr*, int);
    ModifyQpFn modifyQp = &ibv_modify_qp;
    if (path == "dlvsym") {
        void* handle = dlopen("libverbs-standin.so", RTLD_NOW);
        void* p = handle ? dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1") : nullptr;
        if (!p) return 2;
        modifyQp = reinterpret_cast<ModifyQpFn>(p);
    }
    std::vector<ibv_qp*> verbsQps;
    std::vector<std::pair<mlx5dv_devx_obj*, uint32_t>> devxQps;
    std::array<uint8_t, dx::CreateQpOutBits / 8> out{};
    for (unsigned i = 0; i < qps + 1; ++i) {
        if (path == "devx") {
            std::array<uint8_t, dx::CreateQpInBits / 8> in{};
            dx::set(in.data(), dx::Opcode, 16, dx::CreateQp);
            mlx5dv_devx_obj* obj =
                mlx5dv_devx_obj_create(context, in.data(), in.size(), out.data(), out.size());
            if (!obj) return 2;
            const uint32_t qpn = dx::get(out.data(), dx::Qpn, 24);
            dx::ModifyQpIn init{};
            dx::set(init.data(), dx::Opcode, 16, dx::Rst2InitQp);
            dx::set(init.data(), dx::Qpn, 24, qpn);
            dx::set(init.data(), dx::path(dx::AdsPort), 8, 1);
            mlx5dv_devx_obj_modify(obj, init.data(), init.size(), out.data(), out.size());
            devxQps.emplace_back(obj, qpn);
        } else {
            ibv_qp* qp = standin_create_qp(context, 0x100 + i, IBV_QPT_RC);
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_INIT;
            attr.port_num = 1;
            modifyQp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT);
            verbsQps.push_back(qp);
        }
    }
    // The first RTR of a process reads the plan and builds the tree: left out (the first
    // benchmark measures it).
    auto rtr = [&](unsigned i) {
        const auto sl = static_cast<uint8_t>(i % 4);
        const auto dlid = static_cast<uint16_t>(2 + i % 64);
        if (path == "devx") {
            dx::ModifyQpIn in{};
            dx::set(in.data(), dx::Opcode, 16, dx::Init2RtrQp);
            dx::set(in.data(), dx::Qpn, 24, devxQps[i].second);
            dx::set(in.data(), dx::path(dx::AdsRlid), 16, dlid);
            dx::set(in.data(), dx::path(dx::AdsSl), 4, sl);
            dx::set(in.data(), dx::path(dx::AdsPort), 8, 1);
            mlx5dv_devx_obj_modify(devxQps[i].first, in.data(), in.size(), out.data(), out.size());
        } else {
            ibv_qp_attr attr{};
            attr.qp_state = IBV_QPS_RTR;
            attr.ah_attr.dlid = dlid;
            attr.ah_attr.sl = sl;
            attr.ah_attr.port_num = 1;
            modifyQp(verbsQps[i], &attr, IBV_QP_STATE | IBV_QP_AV);
        }
    };
    rtr(0);
    auto start = std::chrono::steady_clock::now();
    for (unsigned i = 1; i <= qps; ++i) rtr(i);
    std::fprintf(stderr, "rtr=%.9f\n", secondsSince(start) / qps);
    _exit(0);  // the library keeps its agent connection; nothing to tear down
}

// The measuring child: N QPs through INIT, then RTR (timed), then destroy (timed). The policy
// is samples/policies/host-sched.conf: SLs 0-3 are on leaves, three of them under a node.
int measure(unsigned qps) {
    // An agent that reads every report, as the real one would.
    std::thread agent;
    int listener = listenAsAgent(agent);
    if (listener == -2) return 2;
    ibv_context* context = standin_open_device("mlx5_0", StandinFullCaps);
    std::vector<ibv_qp*> list;
    for (unsigned i = 0; i < qps + 1; ++i) {
        ibv_qp* qp = standin_create_qp(context, 0x100 + i, IBV_QPT_RC);
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        ibv_modify_qp(qp, &attr, IBV_QP_STATE);
        list.push_back(qp);
    }
    auto rtr = [](ibv_qp* qp, uint8_t sl) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_RTR;
        attr.ah_attr.sl = sl;
        attr.ah_attr.port_num = 1;
        return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV);
    };
    // The first RTR of a process loads the policy and builds the tree: measured apart.
    auto start = std::chrono::steady_clock::now();
    rtr(list[0], 3);
    double first = secondsSince(start);
    start = std::chrono::steady_clock::now();
    for (unsigned i = 1; i <= qps; ++i) rtr(list[i], static_cast<uint8_t>(i % 4));
    double each = secondsSince(start) / qps;
    start = std::chrono::steady_clock::now();
    for (unsigned i = 1; i <= qps; ++i) ibv_destroy_qp(list[i]);
    double destroy = secondsSince(start) / qps;
    ibv_destroy_qp(list[0]);
    std::fprintf(stderr, "first=%.9f rtr=%.9f destroy=%.9f\n", first, each, destroy);
    if (listener >= 0) {
        shutdown(listener, SHUT_RDWR);
        close(listener);
        _exit(0);  // the agent thread blocks on a connection the library keeps open
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--measure")
            return measure(static_cast<unsigned>(std::atoi(argv[i + 1])));
        if (std::string(argv[i]) == "--measure-path" && i + 2 < argc)
            return measurePath(static_cast<unsigned>(std::atoi(argv[i + 1])), argv[i + 2]);
    }
    unsigned qps = 20000;
    bench::Program program("ibqos-bench-preload",
                           "libibqos_preload.so: added cost per call (recording stand-in below, "
                           "agent listening).");
    program.options()
        .add_option("--qps", qps, "QPs per run (default 20000)")
        ->check(CLI::PositiveNumber);
    program.options().add_option("--measure", qps, "(internal) the measuring child")->group("");
    if (auto status = program.parse(argc, argv)) return *status;

    std::string dir = "/tmp/ibqos-bench-preload-" + std::to_string(getpid());
    mkdir(dir.c_str(), 0700);
    std::string socketPath = dir + "/agent.sock";
    std::string planPath = dir + "/host-plan";
    std::string error;
    auto plan = host::loadHostPlan(SAMPLE_POLICY, error);
    if (!plan) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    std::ofstream(planPath) << host::planFileText(*plan, SAMPLE_POLICY);
    // The output goes to stderr of the child (stdout carries the stand-in's record).
    setenv("STANDIN_QUIET", "1", 1);
    for (const char* name : {"rtr_without_preload", "rtr_added_simulated_backend",
                             "rtr_added_mlx5_backend", "destroy_added_mlx5_backend"})
        bench::counterUnit(name, "ns", 1e9);
    bench::counterUnit("first_rtr_mlx5_backend", "us", 1e6);
    for (const char* name : {"rtr_added_direct", "rtr_added_dlvsym", "rtr_added_devx"})
        bench::counterUnit(name, "ns", 1e9);

    // Each run is three processes: without the library, with it and the simulated backend, with
    // it and the mlx5 backend; the figures are their differences per call.
    const char* self = argv[0];
    auto runChild = [&](const std::map<std::string, std::string>& env) {
        return bench::runMeasuringChild(self, {"--measure", std::to_string(qps)}, env);
    };
    benchmark::RegisterBenchmark(
        "preload",
        [&](benchmark::State& state) {
            std::map<std::string, double> base, simulated, mlx5;
            for (auto _ : state) {
                base = runChild({{"LD_PRELOAD", ""}});
                std::map<std::string, std::string> preload{{"LD_PRELOAD", PRELOAD_LIB},
                                                           {"IBQOS_PLAN", planPath},
                                                           {"IBQOS_AGENT_SOCKET", socketPath}};
                preload["IBQOS_SCHED_BACKEND"] = "simulated";
                simulated = runChild(preload);
                preload["IBQOS_SCHED_BACKEND"] = "mlx5";
                mlx5 = runChild(preload);
                if (base.size() != 3 || simulated.size() != 3 || mlx5.size() != 3) {
                    state.SkipWithError("a measuring child failed");
                    return;
                }
            }
            state.counters["no_time"] = 1;  // the processes' own time says nothing
            state.counters["rtr_without_preload"] = base["rtr"];
            state.counters["rtr_added_simulated_backend"] = simulated["rtr"] - base["rtr"];
            state.counters["rtr_added_mlx5_backend"] = mlx5["rtr"] - base["rtr"];
            state.counters["destroy_added_mlx5_backend"] = mlx5["destroy"] - base["destroy"];
            state.counters["first_rtr_mlx5_backend"] = mlx5["first"];
            bench::setParams(state, {{"qps", qps}});
        })
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);
    // The added cost per RTR by path, at N and 10N QPs (agent listening, mlx5 backend, respect:
    // the policy enforces no SL, so no question is asked).
    for (unsigned count : {qps, 10 * qps}) {
        benchmark::RegisterBenchmark(
            ("preload_paths/qps:" + std::to_string(count)).c_str(),
            [&, count](benchmark::State& state) {
                std::map<std::string, double> added;
                for (auto _ : state) {
                    for (const char* path : {"direct", "dlvsym", "devx"}) {
                        auto run = [&](const std::map<std::string, std::string>& env) {
                            return bench::runMeasuringChild(
                                self, {"--measure-path", std::to_string(count), path}, env);
                        };
                        std::map<std::string, double> base = run({{"LD_PRELOAD", ""}});
                        std::map<std::string, double> with =
                            run({{"LD_PRELOAD", PRELOAD_LIB},
                                 {"IBQOS_PLAN", planPath},
                                 {"IBQOS_AGENT_SOCKET", socketPath},
                                 {"IBQOS_SCHED_BACKEND", "mlx5"}});
                        if (!base.count("rtr") || !with.count("rtr")) {
                            state.SkipWithError("a measuring child failed");
                            return;
                        }
                        added[path] = with["rtr"] - base["rtr"];
                    }
                }
                state.counters["no_time"] = 1;
                state.counters["rtr_added_direct"] = added["direct"];
                state.counters["rtr_added_dlvsym"] = added["dlvsym"];
                state.counters["rtr_added_devx"] = added["devx"];
                bench::setParams(state, {{"qps", count}});
            })
            ->Iterations(1)
            ->UseRealTime()
            ->Unit(benchmark::kSecond);
    }
    int status = program.run();
    unlink(socketPath.c_str());
    unlink(planPath.c_str());
    rmdir(dir.c_str());
    return status;
}

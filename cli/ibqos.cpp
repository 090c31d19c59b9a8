// SPDX-License-Identifier: MIT
// ibqos: offline validation, compilation and "which SL, and why" queries for OpenSM QoS policies.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "cli/commands.hpp"
#include "common/heap.hpp"

namespace {

#ifdef IBQOS_HAVE_MONITOR
// `ibqos monitor` is the program ibqos-monitor, run in this process's place with the same
// arguments (systemd's notifications come from the same PID): beside this program in a build
// tree, else where it is installed.
int runMonitor(char** argv) {
    std::string program = IBQOS_MONITOR_PROGRAM;
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (!error && access((self.parent_path() / "ibqos-monitor").c_str(), X_OK) == 0)
        program = self.parent_path() / "ibqos-monitor";
    execv(program.c_str(), argv);
    std::fprintf(stderr, "ibqos monitor: cannot run %s: %s\n", program.c_str(),
                 std::strerror(errno));
    return ibqos::cli::ExitUsage;
}
#endif

}  // namespace

int main(int argc, char** argv) {
    using namespace ibqos::cli;
#ifdef IBQOS_HAVE_MONITOR
    if (argc > 1 && std::string_view(argv[1]) == "monitor") return runMonitor(argv);
#endif
    ibqos::heapInHugePages();
    Program program("ibqos", ibqosDescription, ibqosFooter);
    addCheck(program);
    addCompile(program);
#ifdef IBQOS_HAVE_VERIFY
    addVerify(program);
#endif
    addQuery(program);
    addDiff(program);
#ifdef IBQOS_HAVE_MONITOR
    // Its line in this help; the command itself never runs here (above).
    program.command("monitor", monitorSummary, "", [argv] { return runMonitor(argv); });
#endif
    return program.main(argc, argv);
}

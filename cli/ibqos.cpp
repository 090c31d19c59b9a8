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
// tree, else at IBQOS_MONITOR_PROGRAM from this program's directory (the installed layout,
// wherever the tree was unpacked or moved).
int runMonitor(char** argv) {
    namespace fs = std::filesystem;
    std::error_code error;
    fs::path here = fs::read_symlink("/proc/self/exe", error).parent_path();
    if (error) here = IBQOS_BINDIR;
    fs::path program = here / "ibqos-monitor";
    if (access(program.c_str(), X_OK) != 0)
        program = (here / IBQOS_MONITOR_PROGRAM).lexically_normal();
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
    addStatus(program);
#ifdef IBQOS_HAVE_VERIFY
    addApply(program);
#endif
#ifdef IBQOS_HAVE_MONITOR
    // Its line in this help; the command itself never runs here (above).
    program.command("monitor", monitorSummary, "", [argv] { return runMonitor(argv); });
#endif
    return program.main(argc, argv);
}

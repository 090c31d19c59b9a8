// SPDX-License-Identifier: MIT
// ibqos: offline validation, compilation and "which SL, and why" queries for OpenSM QoS policies.
#include "cli/commands.hpp"
#include "common/heap.hpp"

int main(int argc, char** argv) {
    using namespace ibqos::cli;
    ibqos::heapInHugePages();
    Program program("ibqos",
                    "InfiniBand QoS policies, checked and compiled before they reach "
                    "the fabric.",
                    "Run 'ibqos COMMAND --help' for the options of a command; 'man ibqos' for "
                    "the whole story. A POLICY or FILE of '-' is standard input.\nExit status: 0 "
                    "success, 1 the input has errors, 2 usage or I/O error.");
    addCheck(program);
    addCompile(program);
#ifdef IBQOS_HAVE_VERIFY
    addVerify(program);
#endif
    addQuery(program);
    addDiff(program);
#ifdef IBQOS_HAVE_MONITOR
    addMonitor(program);
#endif
    return program.main(argc, argv);
}

// SPDX-License-Identifier: MIT
// ibqos-monitor: `ibqos monitor`, a program of its own that ibqos runs in its place (same
// process, same arguments), so that only the monitor loads libmicrohttpd and libsystemd.
#include "cli/commands.hpp"
#include "common/heap.hpp"

int main(int argc, char** argv) {
    using namespace ibqos::cli;
    ibqos::heapInHugePages();
    Program program("ibqos", ibqosDescription, ibqosFooter);
    addMonitor(program);
    return program.main(argc, argv);
}

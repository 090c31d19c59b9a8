// SPDX-License-Identifier: MIT
// ibqos-agent: a host's side of the QoS policy: paths from the SA, the scheduling tree, PCC slots.
#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"

int main(int argc, char** argv) {
    using namespace ibqos::cli;
    Program program("ibqos-agent",
                    "The host side of an ibqos QoS policy: which SL, transmit-scheduling leaf and\n"
                    "congestion-control slot a connection gets, and the daemon that applies the\n"
                    "slots to every QP of the host.",
                    "Run 'ibqos-agent COMMAND --help' for the options of a command; 'man "
                    "ibqos-agent' for the whole story. A POLICY of '-' is standard input (not "
                    "for run).\nExit status: 0 success, 1 the input has errors (or no path), 2 "
                    "usage or I/O error.");
    addResolve(program);
    addPlan(program);
    addSimulate(program);
    addRun(program);
    addStatus(program);
    addEnv(program);
    return program.main(argc, argv);
}

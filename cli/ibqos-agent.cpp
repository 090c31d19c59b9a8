// SPDX-License-Identifier: MIT
// ibqos-agent: a host's side of the QoS policy: paths from the SA, the scheduling tree, PCC slots.
#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"

namespace {

const char* const mainHelp = R"(Usage: ibqos-agent COMMAND [ARGS...]

The host side of an ibqos QoS policy: which SL, transmit-scheduling leaf and congestion-control
slot a connection gets, and the daemon that applies the slots to every QP of the host.

Commands:
  resolve   ask the Subnet Administrator for a path and show its SL, leaf and PCC slot
  plan      show the scheduling tree and PCC slots a policy gives every host
  simulate  compute each leaf's long-run rate on a link of a given speed
  run       the daemon: apply PCC slots to the QPs libibqos_preload.so reports
  status    show the QPs a running daemon knows, with their leaves and slots
  help      show this help

Run 'ibqos-agent COMMAND --help' for the options of a command; 'man ibqos-agent' for the
whole story. Exit status: 0 success, 1 the input has errors (or no path), 2 usage or I/O error.
)";

}  // namespace

int main(int argc, char** argv) {
    using namespace ibqos::cli;
    return dispatch("ibqos-agent", mainHelp,
                    {{"resolve", runResolve},
                     {"plan", runPlan},
                     {"simulate", runSimulate},
                     {"run", runDaemon},
                     {"status", runStatus}},
                    argc, argv);
}

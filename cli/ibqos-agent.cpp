// SPDX-License-Identifier: MIT
// ibqos-agent: a host's side of the QoS policy: paths from the SA, the scheduling tree, PCC slots.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ibqos-agent-commands.hpp"
#include "options.hpp"

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
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::cerr << mainHelp;
        return ExitUsage;
    }
    std::string command = args.front();
    args.erase(args.begin());
    try {
        if (command == "help" || command == "--help" || command == "-h") {
            std::cout << mainHelp;
            return ExitOk;
        }
        if (command == "--version") {
            std::cout << "ibqos-agent " IBQOS_VERSION "\n";
            return ExitOk;
        }
        if (command == "resolve") return runResolve(args);
        if (command == "plan") return runPlan(args);
        if (command == "simulate") return runSimulate(args);
        if (command == "run") return runDaemon(args);
        if (command == "status") return runStatus(args);
        throw UsageError{"unknown command '" + command + "'"};
    } catch (const UsageError& e) {
        bool known = command == "resolve" || command == "plan" || command == "simulate" ||
                     command == "run" || command == "status";
        std::cerr << "ibqos-agent " << command << ": " << e.message << "\n"
                  << "Try 'ibqos-agent " << (known ? command + " " : "") << "--help'.\n";
        return ExitUsage;
    } catch (const IoError& e) {
        std::cerr << "ibqos-agent " << command << ": " << e.message << "\n";
        return ExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "ibqos-agent " << command << ": internal error: " << e.what() << "\n";
        return ExitUsage;
    }
}

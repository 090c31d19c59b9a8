// SPDX-License-Identifier: MIT
// ibqos: offline validation, compilation and "which SL, and why" queries for OpenSM QoS policies.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"

namespace {

const char* const mainHelp = R"(Usage: ibqos COMMAND [ARGS...]

InfiniBand QoS policies, checked and compiled before they reach the fabric.

Commands:
  check     report every problem in a policy file (and, with a topology, in its tables)
  compile   the tables every port of a fabric receives, VL shares, or a plain OpenSM setup
  verify    compare every port's tables on the live fabric with what the policy compiles to
  query     which QoS level, SL and PKey the SA answers for a path, and why
  help      show this help

Run 'ibqos COMMAND --help' for the options of a command; 'man ibqos' for the whole story.
Exit status: 0 success, 1 the input has errors, 2 usage or I/O error.
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
            std::cout << "ibqos " IBQOS_VERSION "\n";
            return ExitOk;
        }
        if (command == "check") return runCheck(args);
        if (command == "compile") return runCompile(args);
#ifdef IBQOS_HAVE_VERIFY
        if (command == "verify") return runVerify(args);
#endif
        if (command == "query") return runQuery(args);
        throw UsageError{"unknown command '" + command + "'"};
    } catch (const UsageError& e) {
        std::cerr << "ibqos " << command << ": " << e.message << "\n"
                  << "Try 'ibqos " << (command.empty() || command[0] == '-' ? "" : command + " ")
                  << "--help'.\n";
        return ExitUsage;
    } catch (const IoError& e) {
        std::cerr << "ibqos " << command << ": " << e.message << "\n";
        return ExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "ibqos " << command << ": internal error: " << e.what() << "\n";
        return ExitUsage;
    }
}

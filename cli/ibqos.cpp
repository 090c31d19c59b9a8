// SPDX-License-Identifier: MIT
// ibqos: offline validation, compilation and "which SL, and why" queries for OpenSM QoS policies.
#include "cli/commands.hpp"

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
    return dispatch("ibqos", mainHelp,
                    {{"check", runCheck},
                     {"compile", runCompile},
#ifdef IBQOS_HAVE_VERIFY
                     {"verify", runVerify},
#endif
                     {"query", runQuery}},
                    argc, argv);
}

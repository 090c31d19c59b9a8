// SPDX-License-Identifier: MIT
// Failure injection points of the plugin: code only in the test build of the module (built
// with IBQOS_FAILPOINTS, never installed); in the product each point is nothing at all.
#pragma once

#ifdef IBQOS_FAILPOINTS

#include <string_view>

namespace ibqos::osm {

// Throws std::runtime_error when the test asked this point to fail (tests/e2e/failpoints.cpp);
// a point given a subject fails only for a subject holding the text the test wrote, if any.
void failpoint(const char* name, std::string_view subject = {});

}  // namespace ibqos::osm

#define IBQOS_FAILPOINT(name) ::ibqos::osm::failpoint(name)
#define IBQOS_FAILPOINT_FOR(name, subject) ::ibqos::osm::failpoint(name, subject)

#else

#define IBQOS_FAILPOINT(name) ((void)0)
#define IBQOS_FAILPOINT_FOR(name, subject) ((void)0)

#endif

// SPDX-License-Identifier: MIT
// Failure injection points of the plugin: code only in the test build of the module (built
// with IBQOS_FAILPOINTS, never installed); in the product each point is nothing at all.
#pragma once

#ifdef IBQOS_FAILPOINTS

namespace ibqos::osm {

// Throws std::runtime_error when the test asked this point to fail (tests/e2e/failpoints.cpp).
void failpoint(const char* name);

}  // namespace ibqos::osm

#define IBQOS_FAILPOINT(name) ::ibqos::osm::failpoint(name)

#else

#define IBQOS_FAILPOINT(name) ((void)0)

#endif

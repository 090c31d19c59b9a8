// SPDX-License-Identifier: MIT
// The Catch2 main, built once and linked into every unit-test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

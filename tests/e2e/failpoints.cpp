// SPDX-License-Identifier: MIT
// The failure injection points of the plugin's test module (never in the product): a point
// fails while the file $IBQOS_FAILPOINT_DIR/NAME exists, so a test chooses the sweep it fails.
#include "osm-plugin/failpoint.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ibqos::osm {

void failpoint(const char* name) {
    const char* dir = std::getenv("IBQOS_FAILPOINT_DIR");
    if (!dir || !*dir) return;
    struct stat st {};
    if (stat((std::string(dir) + "/" + name).c_str(), &st) == 0)
        throw std::runtime_error(std::string("failure injected at failpoint ") + name);
}

}  // namespace ibqos::osm

// SPDX-License-Identifier: MIT
// The failure injection points of the plugin's test module (never in the product): a point
// fails while the file $IBQOS_FAILPOINT_DIR/NAME exists, so a test chooses the sweep it fails; a
// point with a subject (the policy text) fails only when the subject holds the file's text (an
// empty file: always).
#include "osm-plugin/failpoint.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ibqos::osm {

void failpoint(const char* name, std::string_view subject) {
    const char* dir = std::getenv("IBQOS_FAILPOINT_DIR");
    if (!dir || !*dir) return;
    const std::string path = std::string(dir) + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string marker = text.str();
    while (!marker.empty() && (marker.back() == '\n' || marker.back() == ' ')) marker.pop_back();
    if (!marker.empty() && subject.find(marker) == std::string_view::npos) return;
    throw std::runtime_error(std::string("failure injected at failpoint ") + name);
}

}  // namespace ibqos::osm

// SPDX-License-Identifier: MIT
// Runs a fuzz target's entry point once on every file named on the command line (folders are
// walked), so that the seed corpora and every input that once crashed a target are replayed by
// the ordinary test run, under the sanitizers of the build. A crash or abort fails the test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", file.c_str());
        return false;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    size_t inputs = 0;
    bool ok = true;
    for (int i = 1; i < argc; ++i) {
        std::filesystem::path path(argv[i]);
        if (std::filesystem::is_directory(path)) {
            for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
                if (!entry.is_regular_file()) continue;
                ok = replay(entry.path()) && ok;
                ++inputs;
            }
        } else if (std::filesystem::exists(path)) {
            ok = replay(path) && ok;
            ++inputs;
        }
    }
    std::printf("%zu inputs replayed\n", inputs);
    return ok && inputs > 0 ? 0 : 1;
}

// SPDX-License-Identifier: MIT
// What every benchmark shares: timing, peak memory, and the two output forms (a table for
// people, one JSON object per line with --json).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace ibqos::bench {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Peak resident memory of this process so far, in bytes (VmHWM).
inline uint64_t peakRss() {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
        if (key == "VmHWM:") {
            uint64_t kb = 0;
            status >> kb;
            return kb * 1024;
        }
        std::getline(status, key);
    }
    return 0;
}

// Resets the peak so that a later peakRss() measures only what follows (Linux clear_refs).
inline void resetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// The p-quantile (0..1) of a set of samples.
inline double percentile(std::vector<double> samples, double p) {
    if (samples.empty()) return 0;
    std::sort(samples.begin(), samples.end());
    size_t at = static_cast<size_t>(p * static_cast<double>(samples.size()));
    return samples[std::min(samples.size() - 1, at)];
}

// The value after option argv[i] (i moves past it); a missing value ends the program (2).
inline const char* optionValue(int argc, char** argv, int& i) {
    if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
    }
    return argv[++i];
}

// One measured figure with the parameters that produced it.
struct Result {
    std::string name;
    double value;
    std::string unit;
    std::vector<std::pair<std::string, std::string>> params;
};

class Report {
  public:
    explicit Report(bool json) : json_(json) {}
    void add(Result r) {
        if (json_) {
            std::cout << "{\"name\": \"" << r.name << "\", \"value\": " << r.value
                      << ", \"unit\": \"" << r.unit << "\"";
            for (auto& [k, v] : r.params) std::cout << ", \"" << k << "\": " << v;
            std::cout << "}\n" << std::flush;
        } else {
            std::string params;
            for (auto& [k, v] : r.params) params += (params.empty() ? "" : ", ") + k + "=" + v;
            char line[512];
            std::snprintf(line, sizeof line, "%-34s %14.3f %-8s %s\n", r.name.c_str(), r.value,
                          r.unit.c_str(), params.c_str());
            std::cout << line << std::flush;
        }
    }
    void header(const std::string& title) {
        if (json_) return;
        std::cout << title << "\n";
        char line[256];
        std::snprintf(line, sizeof line, "%-34s %14s %-8s %s\n", "measure", "value", "unit",
                      "parameters");
        std::cout << line << std::string(80, '-') << "\n";
    }

  private:
    bool json_;
};

}  // namespace ibqos::bench

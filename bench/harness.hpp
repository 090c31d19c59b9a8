// SPDX-License-Identifier: MIT
// What every benchmark program shares. Google Benchmark runs, repeats and times the
// measurements (its --benchmark_* flags work: --benchmark_repetitions=N adds mean, median,
// stddev and cv figures); CLI11 reads the program's own options. Without --json the library's
// table is printed; with --json one JSON object per figure and line: "name", "value", "unit" and
// the parameters (a benchmark's arguments, and the JSON object of its label).
//
// Figures: a benchmark's time per iteration is named after it, in its time unit; each of its
// counters is a figure of its own, in the unit given to counterUnit() (value x scale).
#pragma once

#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json.hpp"

namespace ibqos::bench {

// How a counter is reported: its value times scale, in unit. A counter left out is reported
// as it is, without a unit.
void counterUnit(const std::string& counter, const std::string& unit, double scale = 1);

// Parameters a benchmark's figures carry besides its arguments.
void setParams(benchmark::State& state, const Json& params);

// A size's time against the previous size's, for a series of sizes measured in order: the
// counter `counter` (seconds / the previous size's seconds) and the parameter
// "growth_from_rules", when there is a previous size; then this size becomes the previous one.
void setGrowth(benchmark::State& state, Json& params, const std::string& counter,
               std::pair<unsigned, double>& previous, unsigned rules, double seconds);

// Runs this program again as a measuring child (args after argv[0], env added to its
// environment) and reads the "name=value" words it writes on standard error. Words that are
// not name=value are ignored; the child's standard output is left alone.
std::map<std::string, double> runMeasuringChild(const char* self,
                                                const std::vector<std::string>& args,
                                                const std::map<std::string, std::string>& env);

// The middle value of a non-empty list (the upper of the two middle ones).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A command run once, as /usr/bin/time -v reports it (wait4's rusage): CPU and wall seconds,
// peak resident memory, exit status.
struct CommandRun {
    double cpu = 0, wall = 0, peakBytes = 0;
    int status = -1;
};

// What a measuring child does: runs exe with args (standard output and error to /dev/null) and
// writes its figures on standard error. A child of its own: Linux counts the spawning process's
// peak resident size into the spawned one's (the address space it leaves at exec), and a
// benchmark grows to hundreds of megabytes. Returns 0.
int measureCommand(const char* exe, char** args);

// A command run `runs` times, each from a fresh measuring child (this program, self, run with
// "--measure-cli" and args, calls measureCommand): the median CPU and wall time (one run of a
// one-shot command moves by half on this host), the largest peak, the first failing status.
CommandRun runCommand(const char* self, const std::vector<std::string>& args, unsigned runs);

class Program {
  public:
    Program(const std::string& name, const std::string& description);
    CLI::App& options() { return app_; }
    // Takes Google Benchmark's flags, then the program's options. Returns an exit status when
    // the program should stop now (--help, a usage error).
    std::optional<int> parse(int argc, char** argv);
    bool json() const { return json_; }
    // Runs every registered benchmark and prints the figures. Returns the exit status.
    int run();

  private:
    CLI::App app_;
    bool json_ = false;
    int cpu_ = -1;  // --cpu: the one CPU this process and its children run on (-1: any)
};

// Peak resident memory of this process so far, in bytes (VmHWM), and a reset of that peak so
// that a later reading measures only what follows (Linux clear_refs).
uint64_t peakRss();
void resetPeakRss();

}  // namespace ibqos::bench

// SPDX-License-Identifier: MIT
// The benchmark programs' harness: Google Benchmark's runs, CLI11's options, and the JSON-lines
// reporter over the library's results.
#include "bench/harness.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string_view>
#include <utility>

extern char** environ;

namespace ibqos::bench {

namespace {

std::map<std::string, std::pair<std::string, double>>& units() {
    static std::map<std::string, std::pair<std::string, double>> u;
    return u;
}

std::string timeUnit(benchmark::TimeUnit unit) {
    switch (unit) {
        case benchmark::kNanosecond:
            return "ns";
        case benchmark::kMicrosecond:
            return "us";
        case benchmark::kMillisecond:
            return "ms";
        case benchmark::kSecond:
            return "s";
    }
    return "ns";
}

// "rules:1000/ports:50667" -> {"rules": 1000, "ports": 50667}
Json argsJson(const std::string& args) {
    Json out = Json::object();
    size_t p = 0;
    while (p < args.size()) {
        size_t slash = args.find('/', p);
        std::string part =
            args.substr(p, slash == std::string::npos ? std::string::npos : slash - p);
        size_t colon = part.find(':');
        if (colon != std::string::npos) {
            std::string value = part.substr(colon + 1);
            char* end = nullptr;
            long long n = std::strtoll(value.c_str(), &end, 10);
            out[part.substr(0, colon)] = end && *end == 0 ? Json(n) : Json(value);
        }
        p = slash == std::string::npos ? args.size() : slash + 1;
    }
    return out;
}

// One JSON object per figure and line; `cpu` (>= 0) goes on every line.
class JsonLinesReporter : public benchmark::BenchmarkReporter {
  public:
    explicit JsonLinesReporter(int cpu) : cpu_(cpu) {}

    bool ReportContext(const Context&) override { return true; }

    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            if (run.error_occurred) {
                std::cerr << run.benchmark_name() << ": " << run.error_message << "\n";
                continue;
            }
            Json params = argsJson(run.run_name.args);
            if (cpu_ >= 0) params["cpu"] = cpu_;
            if (!run.report_label.empty() && run.report_label[0] == '{') {
                Json label = Json::parse(run.report_label, nullptr, false);
                if (label.is_object()) params.update(label);
            }
            const std::string suffix = run.aggregate_name.empty() ? "" : "_" + run.aggregate_name;
            // A cv aggregate is a ratio, whatever the figure's unit.
            const bool ratio = run.aggregate_unit == benchmark::StatisticUnit::kPercentage;
            if (!run.counters.count("no_time")) {
                emit(run.run_name.function_name + suffix,
                     ratio ? run.real_accumulated_time : run.GetAdjustedRealTime(),
                     ratio ? "ratio" : timeUnit(run.time_unit), params);
            }
            for (const auto& [name, counter] : run.counters) {
                if (name == "no_time") continue;
                auto it = units().find(name);
                double scale = it == units().end() || ratio ? 1 : it->second.second;
                std::string unit = ratio ? "ratio" : it == units().end() ? "" : it->second.first;
                emit(name + suffix, counter.value * scale, unit, params);
            }
        }
    }

  private:
    int cpu_;

    static void emit(const std::string& name, double value, const std::string& unit,
                     const Json& params) {
        Json line = {{"name", name}, {"value", value}, {"unit", unit}};
        for (const auto& [key, v] : params.items()) line[key] = v;
        std::cout << dumpJson(line) << "\n" << std::flush;
    }
};

}  // namespace

void counterUnit(const std::string& counter, const std::string& unit, double scale) {
    units()[counter] = {unit, scale};
}

void setParams(benchmark::State& state, const Json& params) { state.SetLabel(dumpJson(params)); }

void setGrowth(benchmark::State& state, Json& params, const std::string& counter,
               std::pair<unsigned, double>& previous, unsigned rules, double seconds) {
    if (previous.first != 0) {
        state.counters[counter] = seconds / previous.second;
        params["growth_from_rules"] = previous.first;
    }
    previous = {rules, seconds};
}

Program::Program(const std::string& name, const std::string& description)
    : app_(description, name) {
    app_.add_flag("--json", json_, "print one JSON object per figure and line");
    app_.add_option("--cpu", cpu_,
                    "run on this CPU only, measuring processes included (the CPUs of a virtual "
                    "machine can differ in speed; default: any)")
        ->check(CLI::Range(0, CPU_SETSIZE - 1));
    app_.footer(
        "Google Benchmark's options (--benchmark_filter, --benchmark_repetitions, "
        "--benchmark_min_time, ...) are taken first; Google Benchmark's documentation lists "
        "them.");
}

std::optional<int> Program::parse(int argc, char** argv) {
    // --help is the program's own (Google Benchmark would print only its flags and stop).
    const bool help = std::any_of(argv + 1, argv + argc, [](const char* a) {
        return std::string_view(a) == "--help" || std::string_view(a) == "-h";
    });
    if (!help) benchmark::Initialize(&argc, argv);
    try {
        app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app_.exit(e);
    }
    if (cpu_ >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu_, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            std::fprintf(stderr, "%s: --cpu %d: this machine does not let it run there\n",
                         app_.get_name().c_str(), cpu_);
            return 2;
        }
    }
    return std::nullopt;
}

int Program::run() {
    if (json_) {
        JsonLinesReporter reporter(cpu_);
        benchmark::RunSpecifiedBenchmarks(&reporter);
    } else {
        benchmark::RunSpecifiedBenchmarks();
    }
    benchmark::Shutdown();
    return 0;
}

uint64_t peakRss() {
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

void resetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::map<std::string, double> runMeasuringChild(const char* self,
                                                const std::vector<std::string>& args,
                                                const std::map<std::string, std::string>& env) {
    int pipeFd[2];
    if (pipe(pipeFd) != 0) return {};
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipeFd[1], 2);
        close(pipeFd[0]);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> argv{const_cast<char*>(self)};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(self, argv.data());
        _exit(127);
    }
    close(pipeFd[1]);
    std::string text;
    char buffer[512];
    for (ssize_t n; (n = read(pipeFd[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<size_t>(n));
    close(pipeFd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    std::map<std::string, double> values;
    std::istringstream in(text);
    for (std::string word; in >> word;) {
        size_t eq = word.find('=');
        if (eq != std::string::npos) values[word.substr(0, eq)] = std::atof(word.c_str() + eq + 1);
    }
    if (values.empty()) std::fprintf(stderr, "a measuring child failed:\n%s", text.c_str());
    return values;
}

int measureCommand(const char* exe, char** args) {
    std::vector<char*> argv{const_cast<char*>(exe)};
    for (; *args; ++args) argv.push_back(*args);
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    CommandRun out;
    timespec start{}, end{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = 0;
    if (posix_spawn(&pid, exe, &actions, nullptr, argv.data(), environ) == 0) {
        int status = 0;
        rusage usage{};
        wait4(pid, &status, 0, &usage);
        clock_gettime(CLOCK_MONOTONIC, &end);
        out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        out.cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
        out.wall = static_cast<double>(end.tv_sec - start.tv_sec) +
                   static_cast<double>(end.tv_nsec - start.tv_nsec) * 1e-9;
        out.peakBytes = static_cast<double>(usage.ru_maxrss) * 1024;
    }
    posix_spawn_file_actions_destroy(&actions);
    std::fprintf(stderr, "cpu=%.9f wall=%.9f peak_bytes=%.0f status=%d\n", out.cpu, out.wall,
                 out.peakBytes, out.status);
    return 0;
}

CommandRun runCommand(const char* self, const std::vector<std::string>& args, unsigned runs) {
    std::vector<std::string> measure{"--measure-cli"};
    measure.insert(measure.end(), args.begin(), args.end());
    std::vector<double> cpu, wall;
    CommandRun out;
    for (unsigned i = 0; i < runs; ++i) {
        std::map<std::string, double> figures = runMeasuringChild(self, measure, {});
        cpu.push_back(figures["cpu"]);
        wall.push_back(figures["wall"]);
        out.peakBytes = std::max(out.peakBytes, figures["peak_bytes"]);
        const int status = figures.count("status") ? static_cast<int>(figures["status"]) : -1;
        if (i == 0 || status != 0) out.status = status;
    }
    if (cpu.empty()) return out;
    out.cpu = median(std::move(cpu));
    out.wall = median(std::move(wall));
    return out;
}

}  // namespace ibqos::bench

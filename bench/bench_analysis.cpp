// SPDX-License-Identifier: MIT
// Benchmark: the policy-space analyses on the policy families of tests/policy_families.hpp, each
// with and without qos-ulps, at several sizes: `ibqos check` as it runs by default (parse, every
// pass, the dead-rule analysis within its default budget), the same with the budget unlimited
// (every rule decided), and `ibqos diff` of a pair (one level's SL changed) without a topology
// and with the 50,667-endpoint fat tree of bench/synthetic.hpp. Each figure is measured in a
// fresh process: CPU time, the median of at least three runs and a second, and the median of
// that over three such processes (--processes); then small fresh processes run the ibqos
// command itself as often (the median) and give its peak memory (the maximum resident set size that
// `/usr/bin/time -v` shows, from wait4) and CPU time. A size's time is also given against the
// previous size's (time(10N) / time(N)), the previous size measured again in turn with it.
//   ibqos-bench-analysis [--what check,decided,diff,diff-topology] [--sizes 10,100,1000,10000]
//                        [--diff-most N] [--family F] [--processes N] [--write DIR] [--json]
//                        [--benchmark_...]
//   ibqos-bench-analysis --generate --write DIR [--sizes ...] [--family F]   (the policies only:
//                        FAMILY[-ulps]-RULES.conf, as `check` measures them; bench/opensm_parse.py)
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/harness.hpp"
#include "bench/policy_load.hpp"
#include "bench/synthetic.hpp"
#include "common/heap.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/tables.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/policy_diff.hpp"
#include "tests/policy_families.hpp"

using namespace ibqos;

namespace {

// Runs a measurement again and again, for at least three runs and a second of CPU time; the
// median CPU seconds of a run (and in *best, the fastest run's).
template <typename Run>
double repeat(Run&& run, double* best = nullptr) {
    std::vector<double> times;
    double total = 0;
    while (times.size() < 3 || total < 1.0) {
        const double start = bench::cpuSeconds();
        run();
        times.push_back(bench::cpuSeconds() - start);
        total += times.back();
    }
    if (best) *best = *std::min_element(times.begin(), times.end());
    return bench::median(std::move(times));
}

std::unique_ptr<SourceFile> load(const std::string& path) {
    std::string error;
    auto source = SourceFile::load(path, error);
    if (!source) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
        std::exit(1);
    }
    return std::make_unique<SourceFile>(std::move(*source));
}

// The measuring children: each writes its figures on standard error as name=value words.

// budget: "default", "unlimited" or a number of steps.
int measureCheck(const std::string& path, const std::string& budgetWord) {
    // The same file loaded without the analysis, for the analysis's share.
    size_t bytes = 0;
    const double loadSeconds = repeat([&] {
        Diagnostics diagnostics;
        bench::loadWithoutDeadRules(path, diagnostics, bytes);
    });
    const auto source = load(path);
    std::optional<uint64_t> budget;
    if (budgetWord == "unlimited")
        budget = 0;
    else if (budgetWord != "default")
        budget = std::stoull(budgetWord);
    size_t undecided = 0, dead = 0, covers = 0, rules = 0, errors = 0;
    double best = 0;
    const double seconds = repeat(
        [&] {
            Diagnostics diagnostics;
            Policy policy = loadPolicy(*source, diagnostics, budget);
            undecided = dead = covers = 0;
            for (const Diagnostic& d : diagnostics.all()) {
                undecided += d.code == "reachability-undecided";
                if (d.code != "shadowed-rule") continue;
                ++dead;
                // The earlier rules the warning names as matching every request of the dead one.
                for (size_t at = d.message.find(" at line "); at != std::string::npos;
                     at = d.message.find(" at line ", at + 1))
                    ++covers;
            }
            rules = policy.rules.size();
            errors = diagnostics.errorCount();
        },
        &best);
    std::fprintf(stderr,
                 "seconds=%.9f best_seconds=%.9f load_seconds=%.9f bytes=%zu rules=%zu "
                 "undecided=%zu dead=%zu covers=%zu errors=%zu\n",
                 seconds, best, loadSeconds, source->text().size(), rules, undecided, dead, covers,
                 errors);
    return 0;
}

int measureDiff(const std::string& before, const std::string& after, const std::string& topology) {
    const auto a = load(before), b = load(after);
    std::unique_ptr<SourceFile> net = topology.empty() ? nullptr : load(topology);
    size_t regions = 0, errors = 0;
    double diffSeconds = 0;
    const double seconds = repeat([&] {
        Diagnostics diagnostics;
        Policy x = loadPolicy(*a, diagnostics);
        Policy y = loadPolicy(*b, diagnostics);
        std::optional<PolicyDiff> d;
        double start = 0;
        if (net) {
            Fabric fabric = readTopology(*net, diagnostics);
            readPartitions(nullptr, fabric, diagnostics);
            negotiateOperVls(fabric, OpenSmConf{}.maxOpVls);
            auto cx = FabricCompilation::compile(x, fabric, OpenSmConf{}, diagnostics,
                                                 CompileStage::Tables);
            auto cy = FabricCompilation::compile(y, fabric, OpenSmConf{}, diagnostics,
                                                 CompileStage::Tables);
            start = bench::cpuSeconds();
            d = diffPolicies(cx->bound(), cy->bound());
            regions =
                d ? d->regions.size() + changedTables(fabric, cx->tables(), cy->tables()).size()
                  : 0;
        } else {
            start = bench::cpuSeconds();
            d = diffPolicies(x, y);
            regions = d ? d->regions.size() + d->scopes.size() : 0;
        }
        diffSeconds = bench::cpuSeconds() - start;
        errors = diagnostics.errorCount() + !d;
    });
    std::fprintf(stderr, "seconds=%.9f diff_seconds=%.9f bytes=%zu regions=%zu errors=%zu\n",
                 seconds, diffSeconds, a->text().size() + b->text().size(), regions, errors);
    return 0;
}

// Each measuring child (its arguments) run `runs` times, in turn with the others, each figure
// the median of its runs: the same measurement in two fresh processes can differ by half on a
// shared machine (where the heap lands, whether it gets huge pages), and a size's growth is a
// ratio of two times, taken in the same minutes so that this host's drift from one hour to the
// next (a quarter) stays out of it. An empty argument list is not run (its figures: none).
std::vector<std::map<std::string, double>> mediansInTurn(
    const char* self, const std::vector<std::vector<std::string>>& children, unsigned runs) {
    std::vector<std::map<std::string, std::vector<double>>> all(children.size());
    for (unsigned i = 0; i < runs; ++i) {
        for (size_t c = 0; c < children.size(); ++c) {
            if (children[c].empty()) continue;
            for (const auto& [name, value] : bench::runMeasuringChild(self, children[c], {}))
                all[c][name].push_back(value);
        }
    }
    std::vector<std::map<std::string, double>> out(children.size());
    for (size_t c = 0; c < children.size(); ++c) {
        for (auto& [name, values] : all[c]) {
            if (values.size() != runs) continue;
            // A best_ figure is the fastest of all; the others are medians.
            out[c][name] = std::string_view(name).starts_with("best_")
                               ? *std::min_element(values.begin(), values.end())
                               : bench::median(std::move(values));
        }
    }
    return out;
}

enum class What { Check, Decided, Diff, DiffTopology };
const char* whatName(What w) {
    switch (w) {
        case What::Check:
            return "check";
        case What::Decided:
            return "decided";
        case What::Diff:
            return "diff";
        case What::DiffTopology:
            return "diff-topology";
    }
    return "";
}

struct Setup {
    const char* self;
    std::string dir;  // where the files go
    std::string topology;
    unsigned processes = 3;  // measuring children per figure
};

test::FamilyPolicy familyOptions(test::Family family, bool ulps, unsigned rules, bool topology,
                                 test::Change change = test::Change::None) {
    test::FamilyPolicy o;
    o.family = family;
    o.rules = rules;
    o.ulps = ulps;
    o.seed = 1;
    o.change = change;
    o.changeSeed = 7;
    if (topology) {
        // The groups spread over the fat tree's hosts.
        const bench::FatTree tree;
        const unsigned groups = family == test::Family::PairRules ? 8 : std::max(8u, rules / 4);
        const uint64_t span = 4 * groups + 0xfa0;
        o.guidBase = tree.hostPortGuid(0);
        o.guidStride = static_cast<unsigned>(std::max<uint64_t>(1, 2 * tree.hosts / span));
    }
    return o;
}

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    if (!(std::ofstream(path, std::ios::binary) << text)) {
        std::fprintf(stderr, "ibqos-bench-analysis: cannot write %s\n", path.c_str());
        std::exit(2);
    }
    return path;
}

// A family policy's file name without its ".conf": FAMILY[-ulps]-RULES.
std::string policyStem(test::Family family, bool ulps, unsigned rules) {
    return std::string(test::familyName(family)) + (ulps ? "-ulps-" : "-") + std::to_string(rules);
}

void registerSeries(const Setup& setup, What what, test::Family family, bool ulps,
                    const std::vector<unsigned>& sizes) {
    bench::counterUnit("time", "s");
    bench::counterUnit("diff_time", "s");
    bench::counterUnit("throughput", "MB/s");
    bench::counterUnit("throughput_best", "MB/s");
    bench::counterUnit("load_throughput", "MB/s");
    bench::counterUnit("cli_throughput", "MB/s");
    bench::counterUnit("cli_cpu", "s");
    bench::counterUnit("cli_peak_rss", "MB", 1e-6);
    bench::counterUnit("undecided", "rules");
    bench::counterUnit("dead", "rules");
    bench::counterUnit("covers", "rules");
    bench::counterUnit("growth", "x");
    bench::counterUnit("output_growth", "x");
    // The previous size and its measuring child's arguments, measured again with this size's.
    auto previous = std::make_shared<std::pair<unsigned, std::vector<std::string>>>();
    auto previousOutput = std::make_shared<std::pair<unsigned, double>>(0, 0.0);
    for (unsigned rules : sizes) {
        const std::string name = std::string(whatName(what)) + "/" + test::familyName(family) +
                                 (ulps ? "+ulps" : "") + "/rules:" + std::to_string(rules);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
            std::map<std::string, double> figures, before;
            std::vector<std::string> measure;
            bench::CommandRun cli;
            const bool topology = what == What::DiffTopology;
            const std::string stem =
                policyStem(family, ulps, rules) + (topology ? "-fat-tree" : "");
            for (auto _ : state) {
                const std::string policy =
                    write(setup.dir, stem + ".conf",
                          test::familyPolicy(familyOptions(family, ulps, rules, topology)));
                if (what == What::Check || what == What::Decided) {
                    const bool unlimited = what == What::Decided;
                    measure = {"--measure-check", policy, "--budget",
                               unlimited ? "unlimited" : "default"};
                    std::vector<std::string> args{"check", policy};
                    if (unlimited) args.insert(args.end(), {"--analysis-budget", "unlimited"});
                    cli = bench::runCommand(setup.self, args, setup.processes);
                } else {
                    const std::string after =
                        write(setup.dir, stem + "-level-sl.conf",
                              test::familyPolicy(familyOptions(family, ulps, rules, topology,
                                                               test::Change::LevelSl)));
                    measure = {"--measure-diff", policy, after};
                    std::vector<std::string> args{"diff", policy, after};
                    if (topology) {
                        measure.push_back(setup.topology);
                        args.insert(args.end(), {"--topology", setup.topology});
                    }
                    cli = bench::runCommand(setup.self, args, setup.processes);
                }
                auto medians =
                    mediansInTurn(setup.self, {previous->second, measure}, setup.processes);
                before = std::move(medians[0]);
                figures = std::move(medians[1]);
            }
            if (!figures.count("seconds") || figures["errors"] != 0) {
                state.SkipWithError("the measuring child failed, or the policy has errors");
                return;
            }
            const double seconds = figures["seconds"];
            const double mb = figures["bytes"] / 1e6;
            state.counters["no_time"] = 1;
            state.counters["time"] = seconds;
            state.counters["throughput"] = mb / seconds;
            state.counters["cli_cpu"] = cli.cpu;
            // The command as a user runs it (process start, output and a cold heap included).
            if (what == What::Check || what == What::Decided)
                state.counters["cli_throughput"] = mb / cli.cpu;
            state.counters["cli_peak_rss"] = cli.peakBytes;
            Json params = {{"what", whatName(what)}, {"family", test::familyName(family)},
                           {"ulps", ulps},           {"rules", rules},
                           {"file_mb", mb},          {"cli_exit", cli.status}};
            if (what == What::Check || what == What::Decided) {
                state.counters["undecided"] = figures["undecided"];
                // The rules found dead, and the earlier rules their warnings name: what the
                // analysis must produce, which grows faster than the rules on some families.
                state.counters["dead"] = figures["dead"];
                state.counters["covers"] = figures["covers"];
                state.counters["load_throughput"] = mb / figures["load_seconds"];
                // The fastest run of every measuring process: this host's other guests only
                // ever slow a run down, and its speed moves from hour to hour.
                state.counters["throughput_best"] = mb / figures["best_seconds"];
            } else {
                state.counters["diff_time"] = figures["diff_seconds"];
                params["changes"] = figures["regions"];
            }
            // What any analysis must at least read and print: the rules (of both policies for
            // a diff), and the rules the warnings name or the diff's regions. Its growth is
            // the least time growth at a constant cost per item.
            const double output = what == What::Check || what == What::Decided
                                      ? figures["rules"] + figures["covers"]
                                      : 2.0 * rules + figures["regions"];
            if (before.count("seconds")) {
                state.counters["growth"] = seconds / before["seconds"];
                params["growth_from_rules"] = previous->first;
            }
            *previous = {rules, measure};
            bench::setGrowth(state, params, "output_growth", *previousOutput, rules, output);
            bench::setParams(state, params);
        })->Iterations(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string_view(argv[1]) == "--measure-cli")
        return bench::measureCommand(IBQOS_CLI, argv + 2);
    // The measuring children run as the ibqos command does.
    if (argc > 1 && std::string_view(argv[1]).starts_with("--measure-")) heapInHugePages();
    std::string measureCheckPath, budget, writeDir;
    std::vector<std::string> measureDiffArgs;
    std::vector<std::string> whats{"check", "decided", "diff", "diff-topology"};
    std::vector<unsigned> sizes{10, 100, 1000, 10000};
    std::string familyName = "all";
    unsigned diffMost = 1000, processes = 3;
    bool generate = false;
    bench::Program program(
        "ibqos-bench-analysis",
        "the policy-space analyses on the policy families (one core, CPU time): ibqos check by "
        "default and with an unlimited analysis budget, ibqos diff without a topology and with a "
        "50,667-endpoint fat tree; with the ibqos command's own peak memory and CPU time.");
    CLI::App& o = program.options();
    o.add_option("--what", whats, "check, decided, diff, diff-topology (default: all)")
        ->delimiter(',')
        ->check(CLI::IsMember({"check", "decided", "diff", "diff-topology"}));
    o.add_option("--sizes", sizes,
                 "rule counts (default 10,100,1000,10000; diff-topology: "
                 "those of 1000 and more)")
        ->delimiter(',');
    o.add_option("--diff-most", diffMost,
                 "diff without a topology: the largest size measured (default 1000; the random "
                 "family's 10,000-rule pair takes minutes and gigabytes)");
    o.add_option("--processes", processes,
                 "fresh measuring processes per figure, their median taken (default 3)")
        ->check(CLI::Range(1u, 99u));
    o.add_option("--family", familyName,
                 "shifted, nested, same-ranges, pair-rules, random or all (default)");
    o.add_option("--write", writeDir,
                 "keep the generated policies and the topology in this directory (default: a "
                 "temporary one, removed at the end)");
    o.add_flag("--generate", generate,
               "write the policies `check` measures (FAMILY[-ulps]-RULES.conf, each family and "
               "size, with and without qos-ulps) into the --write directory, and measure nothing");
    o.add_option("--measure-check", measureCheckPath, "(internal)")->group("");
    o.add_option("--budget", budget, "(internal)")->group("");
    o.add_option("--measure-diff", measureDiffArgs, "(internal)")->group("")->expected(2, 3);
    if (auto status = program.parse(argc, argv)) return *status;
    if (!measureCheckPath.empty()) return measureCheck(measureCheckPath, budget);
    if (!measureDiffArgs.empty())
        return measureDiff(measureDiffArgs[0], measureDiffArgs[1],
                           measureDiffArgs.size() > 2 ? measureDiffArgs[2] : "");

    std::vector<test::Family> families;
    for (test::Family f : test::Families) {
        if (familyName == "all" || familyName == test::familyName(f)) families.push_back(f);
    }
    if (families.empty()) {
        std::fprintf(stderr, "ibqos-bench-analysis: no family is named '%s'\n", familyName.c_str());
        return 2;
    }
    if (generate) {
        if (writeDir.empty()) {
            std::fprintf(stderr, "ibqos-bench-analysis: --generate needs --write DIR\n");
            return 2;
        }
        mkdir(writeDir.c_str(), 0755);
        for (test::Family f : families) {
            for (bool ulps : {false, true}) {
                for (unsigned rules : sizes) {
                    std::printf("%s\n",
                                write(writeDir, policyStem(f, ulps, rules) + ".conf",
                                      test::familyPolicy(familyOptions(f, ulps, rules, false)))
                                    .c_str());
                }
            }
        }
        return 0;
    }
    Setup setup{argv[0], writeDir, "", processes};
    const bool temporary = writeDir.empty();
    if (temporary) {
        char dir[] = "/tmp/ibqos-bench-analysis-XXXXXX";
        if (!mkdtemp(dir)) return 2;
        setup.dir = dir;
    } else {
        mkdir(setup.dir.c_str(), 0755);
    }
    if (std::find(whats.begin(), whats.end(), "diff-topology") != whats.end())
        setup.topology =
            write(setup.dir, "fat-tree.ibnetdiscover", writeTopology(bench::FatTree{}.fabric()));
    for (const std::string& w : whats) {
        const What what = w == "check"     ? What::Check
                          : w == "decided" ? What::Decided
                          : w == "diff"    ? What::Diff
                                           : What::DiffTopology;
        std::vector<unsigned> series = sizes;
        if (what == What::DiffTopology) std::erase_if(series, [](unsigned n) { return n < 1000; });
        if (what == What::Diff)
            std::erase_if(series, [diffMost](unsigned n) { return n > diffMost; });
        for (test::Family f : families) {
            for (bool ulps : {false, true}) registerSeries(setup, what, f, ulps, series);
        }
    }
    const int status = program.run();
    if (temporary) std::system(("rm -rf '" + setup.dir + "'").c_str());
    return status;
}

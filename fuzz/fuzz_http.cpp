// SPDX-License-Identifier: MIT
// libFuzzer target: the monitor's HTTP request path without the server library. An input
// describes a leaf fabric (every NodeDescription any bytes) and the counters its PMAs answer
// over two scrapes (any values, saturated ones included); what follows is a request line. The
// request is routed as the server routes it, and every page a scrape renders must stay well
// formed: valid UTF-8 throughout, each Prometheus sample line `name{label="value",...} number`
// with only the format's escapes inside a value, and the JSON report parseable.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "compiler/fabric_compilation.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics_server.hpp"
#include "policy-space/load_policy.hpp"
#include "tests/doubles/fake_fabric.hpp"

using namespace ibqos;
using namespace ibqos::monitor;

// A broken guarantee: the line that found it, then abort (what libFuzzer reports).
#define CHECK_OR_ABORT(condition)                                                               \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            std::fprintf(stderr, "fuzz_http.cpp:%d: %s does not hold\n", __LINE__, #condition); \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

namespace {

const char* const PolicyText =
    "port-groups\n  port-group\n    name: hosts\n    node-type: CA\n  end-port-group\n"
    "end-port-groups\n"
    "qos-setup\n  vlarb-tables\n    vlarb-scope\n      across: hosts\n"
    "      bandwidth: 1:50%, 2:30%, 3:20%\n"
    "    end-vlarb-scope\n  end-vlarb-tables\nend-qos-setup\n"
    "qos-levels\n  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n"
    "  qos-level\n    name: bulk\n    sl: 1\n  end-qos-level\nend-qos-levels\n";

// Reads the input front to back; past its end every read gives zeros.
struct Input {
    std::string_view rest;
    uint8_t byte() {
        if (rest.empty()) return 0;
        auto b = static_cast<uint8_t>(rest.front());
        rest.remove_prefix(1);
        return b;
    }
    std::string_view take(size_t n) {
        n = std::min(n, rest.size());
        std::string_view out = rest.substr(0, n);
        rest.remove_prefix(n);
        return out;
    }
};

// One exposition line: a comment, or `name[{labels}] value` with every label value closed and
// escaped as the text format allows (\\, \" and \n only).
bool wellFormedLine(std::string_view line) {
    if (line.empty() || line.front() == '#') return true;
    size_t i = 0;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_'))
        ++i;
    if (i == 0) return false;
    if (i < line.size() && line[i] == '{') {
        ++i;
        for (;;) {
            size_t name = i;
            while (i < line.size() && line[i] != '=') ++i;
            if (i == name || i + 1 >= line.size() || line[i + 1] != '"') return false;
            for (i += 2; i < line.size() && line[i] != '"'; ++i) {
                if (line[i] == '\\') {
                    if (++i >= line.size()) return false;
                    if (line[i] != '\\' && line[i] != '"' && line[i] != 'n') return false;
                }
            }
            if (i >= line.size()) return false;
            ++i;  // the closing quote
            if (i < line.size() && line[i] == ',') {
                ++i;
                continue;
            }
            if (i >= line.size() || line[i] != '}') return false;
            ++i;
            break;
        }
    }
    if (i >= line.size() || line[i] != ' ') return false;
    char* end = nullptr;
    const std::string value(line.substr(i + 1));
    std::strtod(value.c_str(), &end);
    return !value.empty() && *end == '\0';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Input in{std::string_view(reinterpret_cast<const char*>(data), size)};
    const unsigned hosts = 1 + in.byte() % 6;
    std::vector<std::string> names;
    for (unsigned h = 0; h < hosts; ++h) names.emplace_back(in.take(in.byte() % 80));
    FakeLeafFabric lab(names, std::string(in.take(in.byte() % 80)));

    static const SourceFile source("fuzz.conf", PolicyText);
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    auto compiled = FabricCompilation::compile(policy, lab.fabric, OpenSmConf{}, diagnostics);
    CHECK_OR_ABORT(!diagnostics.hasErrors());
    Monitor monitor(lab.pma, std::move(compiled), MonitorOptions{});

    // Two scrapes, counters set before each: (node, attribute, counter, 64-bit value) records.
    for (int scrape = 0; scrape < 2; ++scrape) {
        for (unsigned records = in.byte() % 24; records-- > 0;) {
            const unsigned node = in.byte() % (hosts + 1);
            const auto attribute = PortAttributes[in.byte() % PortAttributes.size()];
            const unsigned index = in.byte() % ib::perf::Lanes;
            uint64_t value = 0;
            for (int b = 0; b < 8; ++b) value = value << 8 | in.byte();
            const uint16_t lid =
                node == 0 ? FakeLeafFabric::SwitchLid : FakeLeafFabric::hostLid(node - 1);
            const uint8_t port = node == 0 ? static_cast<uint8_t>(1 + index % hosts) : 1;
            lab.pma.counter(lid, port, attribute, index) = value;
        }
        lab.pma.advance(std::chrono::seconds(1));
        monitor.scrape();
    }

    // The request line that remains: METHOD URL.
    const std::string_view request = in.rest;
    const size_t blank = request.find(' ');
    const std::string_view method = request.substr(0, blank);
    const std::string_view url = blank == std::string_view::npos ? "" : request.substr(blank + 1);
    std::map<std::string, int> pages;
    for (const auto& [path, type] : ServedPages) pages[path] = 0;
    const Route r = route(method, url, pages);
    CHECK_OR_ABORT(r.kind != Route::Kind::Page || pages.count(std::string(r.page)));
    CHECK_OR_ABORT((method != "GET" && method != "HEAD") ==
                   (r.kind == Route::Kind::MethodNotAllowed));

    const ScrapePages rendered = renderPages(monitor, true, true, true);
    for (const auto* page : {&rendered.metrics, &rendered.report, &rendered.svg})
        CHECK_OR_ABORT(*page && isUtf8(**page));
    std::string_view text = *rendered.metrics;
    while (!text.empty()) {
        const size_t newline = text.find('\n');
        CHECK_OR_ABORT(wellFormedLine(text.substr(0, newline)));
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    }
    CHECK_OR_ABORT(!Json::parse(*rendered.report, nullptr, false).is_discarded());
    return 0;
}

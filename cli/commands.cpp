// SPDX-License-Identifier: MIT
// What the ibqos subcommands share.
#include "commands.hpp"

#include <cstdio>
#include <iostream>

namespace ibqos::cli {

const SourceFile& Inputs::load(const std::string& path) {
    if (auto it = files_.find(path); it != files_.end()) return *it->second;
    std::string error;
    auto source = SourceFile::load(path, error);
    if (!source) throw IoError{error};
    auto [it, inserted] = files_.emplace(path, std::make_unique<SourceFile>(std::move(*source)));
    return *it->second;
}

const SourceFile* Inputs::find(const std::string& name) const {
    auto it = files_.find(name);
    return it == files_.end() ? nullptr : it->second.get();
}

std::vector<OptionSpec> fabricOptions() {
    return {{"topology", true}, {"partitions", true}, {"sm", true}, {"vls", true}};
}

const char* const fabricOptionsHelp = R"(  --topology FILE    the fabric: ibnetdiscover output (or an ibsim net file)
  --partitions FILE  OpenSM's partitions.conf (without it: the Default partition, all full)
  --sm PORT          the SM's port, for node-type SELF (GUID 0x..., LID, or Desc/P<n>)
  --vls N            data VLs assumed on every port (1, 2, 4, 8 or 15; default 8), as
                     ibnetdiscover files do not carry VL capabilities
)";

std::optional<Fabric> loadFabric(const Options& options, Inputs& inputs, Diagnostics& diagnostics) {
    auto topology = options.value("topology");
    if (!topology) {
        for (const char* name : {"partitions", "sm", "vls"}) {
            if (options.value(name)) throw UsageError{std::string("--") + name + " needs --topology"};
        }
        return std::nullopt;
    }
    uint8_t operVls = 4;
    if (auto vls = options.value("vls")) {
        uint64_t n = parseNumberOption("vls", *vls, 15);
        static constexpr uint8_t encoding[16] = {0, 1, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 5};
        if (encoding[n] == 0) throw UsageError{"--vls takes 1, 2, 4, 8 or 15"};
        operVls = encoding[n];
    }
    Fabric fabric = readTopology(inputs.load(*topology), diagnostics, operVls);
    if (auto sm = options.value("sm")) {
        std::string error;
        fabric.smPort = fabric.findEndpoint(*sm, error);
        if (fabric.smPort == NoPort) throw UsageError{"--sm: " + error};
    }
    auto partitions = options.value("partitions");
    readPartitions(partitions ? &inputs.load(*partitions) : nullptr, fabric, diagnostics);
    return fabric;
}

int emitDiagnostics(Diagnostics& diagnostics, const Inputs& inputs, bool json) {
    diagnostics.sort();
    if (json) {
        std::cout << renderJson(diagnostics.all());
    } else {
        std::string out;
        for (const Diagnostic& d : diagnostics.all()) out += renderText(d, inputs.find(d.file));
        size_t errors = diagnostics.errorCount(), warnings = diagnostics.warningCount();
        if (errors || warnings) {
            out += std::to_string(errors) + (errors == 1 ? " error" : " errors") + ", " +
                   std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings") + "\n";
        }
        std::cerr << out;
    }
    return diagnostics.hasErrors() ? ExitInputErrors : ExitOk;
}

}  // namespace ibqos::cli

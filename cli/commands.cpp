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

// SPDX-License-Identifier: MIT
// Options: a small, strict command-line parser.
#include "cli/options.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/text.hpp"

namespace ibqos::cli {

Options::Options(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs) {
    bool onlyPositionals = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (onlyPositionals || arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
            if (!onlyPositionals && arg.size() > 1 && arg[0] == '-' && arg != "-") {
                if (arg == "-h") {
                    values_["help"].push_back("");
                    continue;
                }
                if (arg == "-o") {
                    // The one short option: -o PATH, as compilers take it.
                    if (i + 1 >= args.size()) throw UsageError{"-o needs a value"};
                    values_["output"].push_back(args[++i]);
                    continue;
                }
                throw UsageError{"unknown option '" + arg + "'"};
            }
            positionals_.push_back(arg);
            continue;
        }
        if (arg == "--") {
            onlyPositionals = true;
            continue;
        }
        std::string name = arg.substr(2);
        std::optional<std::string> inlineValue;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inlineValue = name.substr(eq + 1);
            name.resize(eq);
        }
        const OptionSpec* spec = nullptr;
        for (const OptionSpec& s : specs) {
            if (s.name == name) spec = &s;
        }
        if (!spec && name == "help") {
            values_["help"].push_back("");
            continue;
        }
        if (!spec) throw UsageError{"unknown option '--" + name + "'"};
        if (values_.count(name) && !spec->repeatable)
            throw UsageError{"--" + name + " is given twice"};
        if (!spec->takesValue) {
            if (inlineValue) throw UsageError{"--" + name + " takes no value"};
            values_[name].push_back("");
            continue;
        }
        if (inlineValue) {
            values_[name].push_back(*inlineValue);
        } else if (i + 1 < args.size()) {
            values_[name].push_back(args[++i]);
        } else {
            throw UsageError{"--" + name + " needs a value"};
        }
    }
}

std::optional<std::string> Options::value(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> Options::values(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Options::required(const std::string& name) const {
    auto v = value(name);
    if (!v) throw UsageError{"--" + name + " is required"};
    return *v;
}

uint64_t parseNumberOption(const std::string& name, const std::string& text, uint64_t max) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) {
        throw UsageError{"--" + name + " takes a number, not '" + text + "'"};
    }
    std::optional<uint64_t> v = parseNumber(text);
    if (!v || *v > max) {
        throw UsageError{"--" + name + " takes a number from 0 to " + std::to_string(max) +
                         ", not '" + text + "'"};
    }
    return *v;
}

void readRequestFields(const Options& options, ib::QosFields& request) {
    if (auto v = options.value("service-id"))
        request.serviceId = parseNumberOption("service-id", *v, UINT64_MAX);
    if (auto v = options.value("qos-class"))
        request.qosClass = static_cast<uint16_t>(parseNumberOption("qos-class", *v, 4095));
    if (auto v = options.value("pkey"))
        request.pkey = static_cast<uint16_t>(parseNumberOption("pkey", *v, 0xffff));
    if (auto v = options.value("sl"))
        request.sl = static_cast<uint8_t>(parseNumberOption("sl", *v, 15));
}

}  // namespace ibqos::cli

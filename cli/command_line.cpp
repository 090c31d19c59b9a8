// SPDX-License-Identifier: MIT
// Program: CLI11 set up the way every ibqos command line works.
#include "cli/command_line.hpp"

#include <cctype>
#include <exception>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos::cli {

namespace {

// Help laid out the same in every command: options and commands in a column wide enough for
// "--opensm-conf FILE", their descriptions wrapped to 100 columns, each option shown with the
// name of its value and whether it is required.
class HelpFormatter : public CLI::Formatter {
  public:
    static constexpr size_t Column = 26, Width = 100;

    HelpFormatter() { column_width(Column); }

    std::string make_option_opts(const CLI::Option* option) const override {
        std::string out;
        if (option->get_type_size() != 0 && !option->get_type_name().empty())
            out += " " + option->get_type_name();
        if (option->get_required()) out += " (required)";
        return out;
    }
    std::string make_option_desc(const CLI::Option* option) const override {
        return wrap(option->get_description());
    }
    std::string make_subcommand(const CLI::App* command) const override {
        std::stringstream out;
        CLI::detail::format_help(out, command->get_display_name(true),
                                 wrap(command->get_description()), Column);
        return out.str();
    }

  private:
    // Words filled into lines of the description column, joined by newlines (CLI11 indents
    // the lines after the first).
    static std::string wrap(const std::string& text) {
        std::string out, line;
        std::istringstream words(text);
        for (std::string word; words >> word;) {
            if (!line.empty() && line.size() + 1 + word.size() > Width - Column) {
                out += line + "\n";
                line.clear();
            }
            line += (line.empty() ? "" : " ") + word;
        }
        return out + line;
    }
};

void setUp(CLI::App& app) {
    app.formatter(std::make_shared<HelpFormatter>());
    app.set_help_flag("-h,--help", "show this help");
    // An option given twice is an error, not a silent override.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
}

}  // namespace

Program::Program(const std::string& name, const std::string& description, const std::string& footer)
    : app_(description, name) {
    setUp(app_);
    app_.set_version_flag("-V,--version", name + " " IBQOS_VERSION, "show the version");
    app_.require_subcommand(1);
    app_.footer(footer);
}

CLI::App& Program::command(const std::string& name, const std::string& summary,
                           const std::string& footer, std::function<int()> run) {
    CLI::App& command = *app_.add_subcommand(name, summary);
    setUp(command);
    command.footer(footer);
    // Extras are collected and named here: CLI11's own message does not say which kind they are.
    command.allow_extras();
    command.callback([this, &command, run = std::move(run)] {
        const std::vector<std::string> extras = command.remaining();
        if (!extras.empty()) {
            const std::string& first = extras.front();
            if (first.size() > 1 && first[0] == '-')
                throw UsageError{"unknown option '" + first + "'"};
            throw UsageError{"unexpected argument '" + first + "'"};
        }
        result_ = run();
    });
    return command;
}

int Program::main(int argc, char** argv) {
    const std::string program = app_.get_name();
    if (argc < 2) {
        std::cerr << app_.help();
        return ExitUsage;
    }
    const std::string first = argv[1];
    if (first == "help") {
        std::cout << app_.help();
        return ExitOk;
    }
    bool known = false;
    for (const CLI::App* c : app_.get_subcommands([](CLI::App*) { return true; }))
        known = known || c->get_name() == first;
    const bool isOption = first.size() > 1 && first[0] == '-';
    std::string where = program + (known ? " " + first : "");
    auto usage = [&](const std::string& message) {
        std::cerr << where << ": " << message << "\nTry '" << where << " --help'.\n";
        return ExitUsage;
    };
    if (!known && !isOption) return usage("unknown command '" + first + "'");
    try {
        app_.parse(argc, argv);
        return result_;
    } catch (const CLI::CallForHelp&) {
        std::cout << app_.help();
        return ExitOk;
    } catch (const CLI::CallForVersion& e) {
        std::cout << e.what() << "\n";
        return ExitOk;
    } catch (const CLI::ParseError& e) {
        return usage(e.what());
    } catch (const UsageError& e) {
        return usage(e.message);
    } catch (const InputError& e) {
        std::cerr << where << ": " << e.message << "\n";
        return ExitInputErrors;
    } catch (const IoError& e) {
        std::cerr << where << ": " << e.message << "\n";
        return ExitUsage;
    } catch (const std::exception& e) {
        std::cerr << where << ": internal error: " << e.what() << "\n";
        return ExitUsage;
    }
}

CLI::Option* addValue(CLI::App& command, const std::string& name, Value& value,
                      const std::string& type, const std::string& help) {
    return command.add_option(name, value, help)->type_name(type);
}

void addPolicyArgument(CLI::App& command, std::string& policy) {
    command.add_option("POLICY", policy, "the policy file")->required()->type_name("");
}

void PolicyArgument::add(CLI::App& command, const std::string& help, bool required) {
    required_ = required;
    command.add_option("POLICY", positional, help)->type_name("");
    command.add_option("--policy", option, "the same as POLICY (the older form)")
        ->type_name("POLICY");
}

Value PolicyArgument::get() const {
    if (positional && option)
        throw UsageError{"the policy is given twice ('" + *positional + "' and --policy '" +
                         *option + "'): give POLICY once"};
    if (required_ && !positional && !option) throw UsageError{"give the POLICY file"};
    return positional ? positional : option;
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

uint64_t numberOption(const std::string& name, const Value& value, uint64_t fallback,
                      uint64_t max) {
    return value ? parseNumberOption(name, *value, max) : fallback;
}

void RequestFieldOptions::add(CLI::App& command, bool withSl) {
    addValue(command, "--service-id", serviceId, "N",
             "the request's ServiceID (0 to 2^64-1); without it the request has none");
    addValue(command, "--qos-class", qosClass, "N",
             "its QoS class (0 to " + std::to_string(ib::MaxQosClass) + "); without it none");
    addValue(command, "--pkey", pkey, "N",
             "its PKey (0 to 0xffff, membership bit included); without it none");
    if (withSl)
        addValue(command, "--sl", sl, "N",
                 "the SL it asks for (0 to " + std::to_string(ib::MaxSl) + ")");
}

void RequestFieldOptions::read(ib::QosFields& request) const {
    if (serviceId) request.serviceId = parseNumberOption("service-id", *serviceId, UINT64_MAX);
    if (qosClass)
        request.qosClass =
            static_cast<uint16_t>(parseNumberOption("qos-class", *qosClass, ib::MaxQosClass));
    if (pkey) request.pkey = static_cast<uint16_t>(parseNumberOption("pkey", *pkey, ib::MaxPkey));
    if (sl) request.sl = static_cast<uint8_t>(parseNumberOption("sl", *sl, ib::MaxSl));
}

void LocalPortOptions::add(CLI::App& command) {
    addValue(command, "--hca", hca, "NAME",
             "the local HCA the command's MADs go out of (default: the first)");
    addValue(command, "--port", port, "N", "its port (default: the first active)");
}

int LocalPortOptions::portNumber() const {
    // 255 is no port: InfiniBand numbers a node's ports from 1 to 254.
    return port ? static_cast<int>(parseNumberOption("port", *port, 254)) : 0;
}

}  // namespace ibqos::cli

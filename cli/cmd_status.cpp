// SPDX-License-Identifier: MIT
// ibqos status: which policy the OpenSM plugin has in force, and whether a file is that policy.
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/sm_status.hpp"
#include "common/json.hpp"
#include "common/source.hpp"

namespace ibqos::cli {

namespace {

const char* const statusFooter =
    R"(Reads the status file the ibqos OpenSM plugin writes (at load, at every version it puts in
force or refuses, at every heavy sweep and every few seconds between them) and says which policy
is in force: its file, its version (the hash OpenSM's log names in IBQOS-0010), since when,
OpenSM's pid, the heavy sweeps, the last version refused and why. A status not written for
longer than a few of the plugin's intervals, or whose OpenSM is no longer running, is stale.
With --policy FILE it also says whether FILE's text is the version in force (an edited file not
yet reloaded is not).

--json prints {"status", "policy", "version", "in_force", "since", "opensm_pid", "sweep",
"updated", "refused", "stale", "stale_reason"} and, with --policy, "file", "file_version" and
"file_in_force"; the status file's other members follow as it holds them.

Exit status: 0 a policy is in force, the status is fresh and (with --policy) FILE is that
policy; 1 otherwise; 2 no status file (or it cannot be read), or a usage error.)";

struct StatusOptions {
    Value status, policy;
    bool json = false;
};

// A member's text, or `fallback` when it is not a string.
std::string textOf(const Json& j, const char* key, const char* fallback = "?") {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string ageText(double seconds) {
    if (seconds < 0) seconds = 0;
    if (seconds < 120) return std::to_string(static_cast<long>(seconds)) + " s ago";
    if (seconds < 7200) return std::to_string(static_cast<long>(seconds / 60)) + " min ago";
    return std::to_string(static_cast<long>(seconds / 3600)) + " h ago";
}

int status(const StatusOptions& o) {
    const std::string path = o.status.value_or(defaultStatusPath());
    std::string error;
    std::optional<SmStatus> s = readSmStatus(path, error);
    if (!s)
        throw IoError{error + (o.status ? ""
                                        : " (is OpenSM running with the ibqos plugin? "
                                          "--status names another status file)")};
    const double now = unixTime();
    const std::string stale = staleReason(*s, now);
    std::optional<std::string> fileVersion;
    if (o.policy) {
        std::optional<std::string> text = SourceFile::readText(*o.policy, error);
        if (!text) throw IoError{error};
        fileVersion = policyVersion(*text);
    }
    const bool fileInForce = fileVersion && s->inForce && *fileVersion == *s->version;
    const bool ok = s->inForce && stale.empty() && (!o.policy || fileInForce);

    if (o.json) {
        Json out = {{"status", ok ? "ok" : "attention"}};
        for (const char* key : {"policy", "version", "in_force", "since", "opensm_pid", "sweep",
                                "updated", "refused"})
            out[key] = s->json.contains(key) ? s->json[key] : Json(nullptr);
        out["stale"] = !stale.empty();
        out["stale_reason"] = jsonName(stale);
        if (o.policy) {
            out["file"] = *o.policy;
            out["file_version"] = *fileVersion;
            out["file_in_force"] = fileInForce;
        }
        for (auto& [key, value] : s->json.items())
            if (!out.contains(key)) out[key] = value;
        std::cout << dumpJson(out) << "\n";
        return ok ? ExitOk : ExitInputErrors;
    }
    const Json& j = s->json;
    std::cout << "policy   " << s->policy << "\n";
    if (s->inForce) {
        std::cout << "in force version " << *s->version;
        if (j.contains("version_number") && j["version_number"].is_number())
            std::cout << " (number " << j["version_number"].get<unsigned>()
                      << " since OpenSM started)";
        std::cout << ", since " << textOf(j, "since") << "\n";
    } else {
        std::cout << "in force no policy yet (OpenSM answers as with no QoS policy)\n";
    }
    std::cout << "opensm   pid " << s->opensmPid << ", " << s->sweep
              << (s->sweep == 1 ? " heavy sweep" : " heavy sweeps");
    if (j.contains("sweep_time") && j["sweep_time"].is_string())
        std::cout << ", the last at " << j["sweep_time"].get<std::string>();
    std::cout << "\nupdated  " << textOf(j, "updated") << " (" << ageText(now - s->updated) << ")";
    std::cout << (stale.empty() ? "" : ": STALE, " + stale) << "\n";
    if (auto r = j.find("refused"); r != j.end() && r->is_object()) {
        std::cout << "refused  version " << textOf(*r, "version") << " at " << textOf(*r, "at")
                  << "\n";
        if (r->contains("diagnostics") && (*r)["diagnostics"].is_array())
            for (const Json& d : (*r)["diagnostics"])
                if (d.is_string()) std::cout << "         " << d.get<std::string>() << "\n";
    }
    if (o.policy) {
        std::cout << "file     " << *o.policy << " is version " << *fileVersion;
        if (fileInForce) {
            std::cout << ": in force\n";
        } else {
            std::cout << ": NOT in force ("
                      << (s->inForce ? "version " + *s->version + " is" : std::string("nothing is"))
                      << "; an edited file takes effect at OpenSM's next heavy sweep: "
                         "`ibqos apply` it, or send OpenSM SIGHUP)\n";
        }
    }
    return ok ? ExitOk : ExitInputErrors;
}

}  // namespace

void addStatus(Program& program) {
    auto o = std::make_shared<StatusOptions>();
    CLI::App& c = program.command("status",
                                  "which policy the OpenSM plugin has in force (and whether a "
                                  "file is that policy)",
                                  statusFooter, [o] { return status(*o); });
    addStatusOption(c, o->status);
    addValue(c, "--policy", o->policy, "FILE",
             "a policy file to compare with the version in force");
    c.add_flag("--json", o->json, "print the status as one JSON object (below)");
}

}  // namespace ibqos::cli

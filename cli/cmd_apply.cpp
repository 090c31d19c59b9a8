// SPDX-License-Identifier: MIT
// ibqos apply: a policy change on the SM's host that proves itself or changes nothing: check,
// diff, install, reload, wait, verify, and put the previous policy back when it fails.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/apply_sa_check.hpp"
#include "cli/commands.hpp"
#include "cli/live_fabric.hpp"
#include "cli/sm_status.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "host-sched/sa-client/sa_wire.hpp"
#include "host-sched/sa-client/umad_transport.hpp"
#include "policy-space/load_policy.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos::cli {

namespace {

const char* const applyFooter =
    R"(Puts a new policy in force on a running OpenSM with the ibqos plugin, from the SM's host, as
root, and proves it:
  1. checks NEW against the live fabric (as `ibqos check` does); errors: exit 1, nothing touched;
  2. prints what changes against the text in force, on that fabric (as `ibqos diff`);
     --dry-run stops here;
  3. installs NEW over the policy file the status names (a temporary file renamed over it,
     keeping its owner and mode; the text it replaces is kept as FILE.previous), sends OpenSM
     SIGHUP and waits until the plugin has NEW in force, or has refused it;
  4. verifies: every port's tables read back over SMPs (as `ibqos verify`), and PathRecords asked
     of the SA through the local port, from the regions the diff found and from outside them,
     against NEW's answers (as `ibqos query`);
  5. when NEW is refused or fails verification, puts the text that was in force back the same
     way, waits until it is in force again and verifies it.
A second apply while one runs is refused. On a terminal, progress is shown while it waits.

--json prints {"result": "applied"|"unchanged"|"dry-run"|"invalid"|"rolled-back"|
"rollback-failed", "old_version", "new_version", "diff" (as `ibqos diff --json`), "verify":
{"tables", "sa"}, "rollback", "seconds", "message"}.

Exit status: 0 applied and verified, or nothing to change; 1 NEW has errors, nothing changed;
2 usage or I/O error (no fresh status, no fabric, a file that cannot be written); 3 NEW was
refused or failed verification, and the previous policy is back in force and verified; 4 the
previous policy could not be confirmed back in force (the message says what is).)";

enum ApplyExit : int { ExitRolledBack = 3, ExitRollbackFailed = 4 };

struct ApplyOptions {
    std::string policy;
    Value status, timeout;
    LocalPortOptions local;
    bool dryRun = false;
    bool json = false;
};

// Writes text over path as a temporary file renamed over it, with the owner and mode of the file
// it replaces (or of `like`, for a file made new).
void installText(const std::string& path, const std::string& text, const std::string& like = "") {
    struct stat st {};
    const bool existed =
        ::stat(path.c_str(), &st) == 0 || (!like.empty() && ::stat(like.c_str(), &st) == 0);
    const std::string temporary = path + ".ibqos-apply." + std::to_string(getpid());
    auto fail = [&](const std::string& what) {
        const int error = errno;
        ::unlink(temporary.c_str());
        return IoError{"cannot install " + path + ": " + what + ": " + std::strerror(error)};
    };
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                    existed ? (st.st_mode & 07777) : 0644);
    if (fd < 0) throw fail("cannot create " + temporary);
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(fd);
            throw fail("cannot write " + temporary);
        }
        done += static_cast<size_t>(n);
    }
    if (existed) {
        // Another owner can only be given by root; a file already ours needs no chown.
        if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) &&
            ::fchown(fd, st.st_uid, st.st_gid) != 0) {
            ::close(fd);
            throw fail("cannot give it the owner of the file it replaces");
        }
        if (::fchmod(fd, st.st_mode & 07777) != 0) {
            ::close(fd);
            throw fail("cannot give it the mode of the file it replaces");
        }
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) throw fail("cannot write " + temporary);
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw fail("cannot rename over it");
}

// One apply at a time per status file: an flock held for the process's life.
class ApplyLock {
  public:
    explicit ApplyLock(const std::string& statusPath) : path_(statusPath + ".apply.lock") {
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw IoError{"cannot open the lock " + path_ + ": " + std::strerror(errno)};
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            char holder[32] = {};
            ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
            ::close(fd_);
            std::string who = n > 0 ? std::string(trim(std::string_view(holder, n))) : "?";
            throw IoError{"another ibqos apply is running (pid " + who + ", lock " + path_ +
                          "): wait for it to finish"};
        }
        std::string pid = std::to_string(getpid()) + "\n";
        if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
    }
    ~ApplyLock() {
        if (::ftruncate(fd_, 0) != 0) {
        }
        ::close(fd_);
    }
    ApplyLock(const ApplyLock&) = delete;
    ApplyLock& operator=(const ApplyLock&) = delete;

  private:
    std::string path_;
    int fd_ = -1;
};

class Apply {
  public:
    explicit Apply(const ApplyOptions& o) : o_(o) {}
    int run();

  private:
    // Progress and steps: on stdout in text mode, nothing with --json.
    void say(const std::string& line) {
        if (!o_.json) std::cout << line << "\n" << std::flush;
    }
    SmStatus readStatus() {
        std::string error;
        std::optional<SmStatus> s = readSmStatus(statusPath_, error);
        if (!s) throw IoError{error};
        return *s;
    }
    // Installs text, signals OpenSM and waits until the plugin has read it and finished the
    // sweep: the status then, or nullopt past the timeout.
    std::optional<SmStatus> installAndWait(const std::string& text, const std::string& version,
                                           const char* what);
    struct Verification {
        Json report;
        bool ok = false;
    };
    Verification verify(const Policy& policy, const char* what);
    int finish(const char* result, int code, const std::string& message);
    // The status of the policy in force (fresh, with one in force); sets where OpenSM and the
    // policy file are.
    SmStatus readInForce();
    // The copy of the text in force beside the status, checked against its version.
    std::string readTextInForce(const SmStatus& status);
    // The fabric as the plugin sees it, with the partitions and opensm.conf the status names.
    void discoverLiveFabric(const SmStatus& status);
    // The SA transport for verification, and the policy file's text kept beside it as .previous.
    void prepareInstall();
    // Why the plugin refused NEW, with its findings (also in the JSON's "refused").
    std::string refusal(const SmStatus& after, const std::string& newVersion);
    // NEW has errors: they are shown and nothing changes.
    int finishInvalid();
    // Puts the previous text back after `why`, and verifies it.
    int rollBack(const std::string& why, const std::string& oldText, const std::string& oldVersion,
                 const Policy& oldPolicy);

    const ApplyOptions& o_;
    std::string statusPath_;
    std::chrono::seconds timeout_{60};
    long pid_ = 0;
    std::string policyPath_;
    Inputs inputs_;
    Diagnostics diagnostics_;
    std::unique_ptr<probe::LiveFabric> live_;
    OpenSmConf conf_;
    std::vector<SaSample> samples_;
    std::unique_ptr<host::UmadTransport> transport_;
    std::string engineSl_;
    Json out_ = Json::object();
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::optional<SmStatus> Apply::installAndWait(const std::string& text, const std::string& version,
                                              const char* what) {
    const SmStatus before = readStatus();
    installText(policyPath_, text);
    if (::kill(static_cast<pid_t>(pid_), SIGHUP) != 0)
        throw IoError{"cannot signal OpenSM (pid " + std::to_string(pid_) +
                      "): " + std::strerror(errno)};
    say("installed " + std::string(what) + " " + version + " in " + policyPath_ + ", OpenSM (pid " +
        std::to_string(pid_) + ") signalled to reload it");
    const bool tty = !o_.json && ::isatty(STDERR_FILENO);
    const auto begin = std::chrono::steady_clock::now();
    const auto deadline = begin + timeout_;
    uint64_t signalledAt = before.sweepDone;
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
        std::string error;
        std::optional<SmStatus> s = readSmStatus(statusPath_, error);
        if (tty) {
            const double waited =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
            std::fprintf(stderr, "\rwaiting for OpenSM's heavy sweep: %.0f s of %lld s ", waited,
                         static_cast<long long>(timeout_.count()));
        }
        if (!s) continue;  // between two writes
        if (!staleReason(*s, unixTime()).empty() && s->opensmPid == pid_ &&
            ::kill(static_cast<pid_t>(pid_), 0) != 0 && errno == ESRCH)
            break;  // OpenSM is gone
        // A sweep that is done and read this text.
        if (s->sweepDone <= before.sweepDone || s->sweepDone != s->sweep) continue;
        if (s->fileSeen != version) {
            // That sweep began before the text was in place: one more.
            if (s->sweepDone > signalledAt) {
                signalledAt = s->sweepDone;
                ::kill(static_cast<pid_t>(pid_), SIGHUP);
            }
            continue;
        }
        const bool inForce = s->inForce && s->version == version;
        // The plugin judges a text once: refused before, it stays refused.
        const bool refused = s->refusedVersion == version;
        if (inForce || refused) {
            if (tty) std::fprintf(stderr, "\r%60s\r", "");
            return s;
        }
    }
    if (tty) std::fprintf(stderr, "\n");
    return std::nullopt;
}

Apply::Verification Apply::verify(const Policy& policy, const char* what) {
    Verification v;
    Diagnostics diagnostics;
    TableVerification tables = verifyLiveTables(policy, conf_, *live_, diagnostics);
    auto compiled = FabricCompilation::compile(policy, live_->fabric(), conf_, diagnostics,
                                               CompileStage::Tables);
    SaVerification sa =
        verifySa(*transport_, live_->fabric(), policy, compiled->bound(), samples_, engineSl_);
    v.ok = tables.differences == 0 && sa.mismatches == 0;
    v.report = {{"ok", v.ok}, {"tables", std::move(tables.report)}, {"sa", std::move(sa.report)}};
    say(std::string("verify ") + what + ":");
    if (!o_.json) std::cout << tables.text << sa.text;
    return v;
}

int Apply::finish(const char* result, int code, const std::string& message) {
    out_["result"] = result;
    out_["seconds"] = jsonNumber(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    out_["message"] = message;
    if (o_.json) {
        std::cout << dumpJson(out_) << "\n";
    } else {
        std::cout << message << "\n";
    }
    return code;
}

int Apply::run() {
    statusPath_ = o_.status.value_or(defaultStatusPath());
    if (o_.timeout)
        timeout_ = std::chrono::seconds(parseNumberOption("timeout", *o_.timeout, 86400));
    out_ = {{"result", nullptr}, {"old_version", nullptr}, {"new_version", nullptr},
            {"diff", nullptr},   {"verify", nullptr},      {"rollback", nullptr}};

    const SmStatus status = readInForce();
    const SourceFile& newSource = inputs_.load(o_.policy);
    const std::string newText(newSource.text());
    const std::string newVersion = policyVersion(newText);
    const std::string& oldVersion = *status.version;
    out_["old_version"] = oldVersion;
    out_["new_version"] = newVersion;
    const std::string oldText = readTextInForce(status);

    // 1. check NEW against the fabric as it is (discovered from here, as the plugin sees it).
    discoverLiveFabric(status);
    const Fabric& fabric = live_->fabric();
    Policy newPolicy = loadPolicy(newSource, diagnostics_);
    auto newCompiled = FabricCompilation::compile(newPolicy, fabric, conf_, diagnostics_,
                                                  CompileStage::Realizability);
    if (diagnostics_.hasErrors()) return finishInvalid();
    if (newVersion == oldVersion)
        return finish("unchanged", ExitOk, "version " + newVersion + " is already in force");

    // 2. what changes, against the text in force, on that fabric.
    Diagnostics ignored;
    Policy oldPolicy = loadPolicy(inputs_.load(status.textInForce), ignored);
    auto oldCompiled =
        FabricCompilation::compile(oldPolicy, fabric, conf_, ignored, CompileStage::Tables);
    std::ostringstream diffText;
    std::optional<DiffOutcome> diff = writeDiff(oldPolicy, newPolicy, oldCompiled.get(),
                                                newCompiled.get(), std::nullopt, o_.json, diffText);
    if (o_.json) {
        out_["diff"] = Json::parse(diffText.str(), nullptr, false);
    } else {
        std::cout << "version " << oldVersion << " (in force) -> " << newVersion << " ("
                  << o_.policy << "):\n"
                  << diffText.str() << "\n";
    }
    if (o_.dryRun)
        return finish("dry-run", ExitOk,
                      "dry run: nothing was installed (" + policyPath_ + " keeps its text)");

    // 3. install, reload, wait.
    ApplyLock lock(statusPath_);
    samples_ = saSamples(fabric, diff->diff);
    prepareInstall();

    std::optional<SmStatus> after = installAndWait(newText, newVersion, "NEW");
    std::string why;
    if (!after) {
        why = "version " + newVersion + " was not in force within " +
              std::to_string(timeout_.count()) + " s";
    } else if (!(after->inForce && after->version == newVersion)) {
        why = refusal(*after, newVersion);
    } else {
        // 4. verify.
        Verification v = verify(newPolicy, "NEW");
        out_["verify"] = v.report;
        if (v.ok) {
            return finish("applied", ExitOk,
                          "version " + newVersion +
                              " is in force and verified: every port's tables and the SA's "
                              "answers are NEW's" +
                              (engineSl_.empty() ? "" : " (the SLs the routing engine's)"));
        }
        why = "version " + newVersion + " failed verification";
    }

    // 5. the previous text back.
    return rollBack(why, oldText, oldVersion, oldPolicy);
}

void Apply::prepareInstall() {
    std::string error;
    transport_ = host::UmadTransport::open(o_.local.caName(), o_.local.portNumber(), error);
    if (!transport_) throw IoError{"cannot ask the SA: " + error};
    std::optional<std::string> fileText = SourceFile::readText(policyPath_, error);
    if (fileText) installText(policyPath_ + ".previous", *fileText, policyPath_);
}

std::string Apply::refusal(const SmStatus& after, const std::string& newVersion) {
    std::string why = "OpenSM's plugin refused version " + newVersion;
    Json refused = after.json.value("refused", Json(nullptr));
    if (refused.is_object() && refused.contains("diagnostics"))
        for (const Json& d : refused["diagnostics"])
            if (d.is_string()) why += "\n  " + d.get<std::string>();
    out_["refused"] = refused;
    return why;
}

SmStatus Apply::readInForce() {
    SmStatus status = readStatus();
    if (std::string stale = staleReason(status, unixTime()); !stale.empty())
        throw IoError{statusPath_ + " is stale: " + stale};
    if (!status.inForce)
        throw IoError{"the plugin has no policy in force yet (" + statusPath_ +
                      "): there is nothing to compare with or to go back to"};
    pid_ = status.opensmPid;
    engineSl_ = status.pathSlEngine;
    // A policy file that is a symbolic link is replaced where it points, and stays a link.
    policyPath_ = status.policy;
    if (char* real = ::realpath(status.policy.c_str(), nullptr)) {
        policyPath_ = real;
        std::free(real);
    }
    return status;
}

std::string Apply::readTextInForce(const SmStatus& status) {
    const std::string& oldVersion = *status.version;
    std::string error;
    std::optional<std::string> oldText = SourceFile::readText(status.textInForce, error);
    if (!oldText) throw IoError{"the text in force: " + error};
    if (policyVersion(*oldText) != oldVersion)
        throw IoError{status.textInForce + " is not the version in force (" + oldVersion +
                      "): the status and its copy disagree"};
    inputs_.add(status.textInForce, *oldText);
    return *oldText;
}

void Apply::discoverLiveFabric(const SmStatus& status) {
    Value partitions, conf;
    if (!status.partitions.empty() && ::access(status.partitions.c_str(), R_OK) == 0)
        partitions = status.partitions;
    if (!status.opensmConf.empty() && ::access(status.opensmConf.c_str(), R_OK) == 0)
        conf = status.opensmConf;
    live_ = discoverFabric(o_.local, std::nullopt, partitions, inputs_, diagnostics_);
    conf_ = loadOpenSmConf(conf, inputs_, diagnostics_);
}

int Apply::finishInvalid() {
    diagnostics_.sort();
    if (o_.json) {
        out_["diagnostics"] = diagnosticsJson(diagnostics_.all());
    } else {
        emitDiagnostics(diagnostics_, inputs_, false, Shown::ErrorsAndCounts);
    }
    return finish("invalid", ExitInputErrors,
                  o_.policy + " has errors: nothing was changed (`ibqos check " + o_.policy +
                      "` shows them all)");
}

int Apply::rollBack(const std::string& why, const std::string& oldText,
                    const std::string& oldVersion, const Policy& oldPolicy) {
    say(why);
    say("putting version " + oldVersion + " back");
    Json rollback = {{"reason", why}};
    std::optional<SmStatus> back;
    try {
        back = installAndWait(oldText, oldVersion, "the previous policy");
    } catch (const IoError& e) {
        // Whatever stopped the way back, the answer is the same: not confirmed (exit 4).
        rollback["error"] = e.message;
        say(e.message);
    }
    if (!back || !(back->inForce && back->version == oldVersion)) {
        std::string error;
        std::string now = "unknown";
        if (std::optional<SmStatus> s = readSmStatus(statusPath_, error))
            now = s->inForce ? "version " + *s->version : "no version";
        rollback["ok"] = false;
        out_["rollback"] = rollback;
        return finish("rollback-failed", ExitRollbackFailed,
                      why + "; the previous version " + oldVersion +
                          " could not be confirmed back in force: the plugin's status shows " +
                          now + " in force (" + policyPath_ + " holds version " + oldVersion +
                          "; `ibqos status` tells more)");
    }
    Verification v = verify(oldPolicy, "the previous policy");
    rollback["ok"] = v.ok;
    rollback["verify"] = v.report;
    out_["rollback"] = rollback;
    if (!v.ok) {
        return finish("rollback-failed", ExitRollbackFailed,
                      why + "; the previous version " + oldVersion +
                          " is in force again but failed verification (above)");
    }
    return finish("rolled-back", ExitRolledBack,
                  why + "; the previous version " + oldVersion + " is back in force and verified");
}

}  // namespace

void addApply(Program& program) {
    auto o = std::make_shared<ApplyOptions>();
    CLI::App& c = program.command(
        "apply",
        "put a policy in force on the running OpenSM, verify it, and go back when it fails",
        applyFooter, [o] { return Apply(*o).run(); });
    c.add_option("NEW", o->policy, "the policy to put in force ('-': standard input)")
        ->required()
        ->type_name("");
    addStatusOption(c, o->status);
    addValue(c, "--timeout", o->timeout, "SECONDS",
             "how long to wait for each reload to be in force (default 60)");
    c.add_flag("--dry-run", o->dryRun, "check and show the diff, change nothing");
    c.add_flag("--json", o->json, "print the result as one JSON object (below)");
    o->local.add(c);
}

}  // namespace ibqos::cli

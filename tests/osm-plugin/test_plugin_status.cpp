// SPDX-License-Identifier: MIT
// The plugin's status file between its writer (osm-plugin) and its readers (`ibqos status`,
// `ibqos apply`): what one writes the other reads, freshness, and whole-file writes.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/sm_status.hpp"
#include "osm-plugin/plugin_status.hpp"

using namespace ibqos;

namespace {

osm::PluginStatus inForce() {
    osm::PluginStatus s;
    s.policy = "/etc/opensm/ibqos-policy.conf";
    s.generated = "/var/cache/opensm/ibqos-policy.conf";
    s.opensmConf = "/etc/opensm/opensm.conf";
    s.partitions = "/etc/opensm/partitions.conf";
    s.opensmPid = 4242;
    s.intervalSeconds = 10;
    s.inForce = true;
    s.hash = 0x417aecd359179659;
    s.version = 3;
    s.since = 1795949257.5;
    s.seen = 0x851785070c519d83;
    s.sweep = 7;
    s.sweepDone = 6;
    s.refused = osm::PluginStatus::Refusal{
        0x851785070c519d83, 1795949300.25, {"p.conf:3:5: error: [syntax] expected a keyword"}};
    return s;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("What the plugin writes is what ibqos status and apply read", "[plugin-status][unit]") {
    const std::string path = "/var/cache/opensm/ibqos-status.json";
    std::string error;
    auto s = cli::parseSmStatus(path, osm::statusJson(inForce(), path, 1795949400.0), error);
    REQUIRE(s);
    CHECK(s->policy == "/etc/opensm/ibqos-policy.conf");
    CHECK(s->inForce);
    CHECK(s->version == "0x417aecd359179659");
    CHECK(s->fileSeen == "0x851785070c519d83");
    CHECK(s->opensmPid == 4242);
    CHECK(s->sweep == 7);
    CHECK(s->sweepDone == 6);
    CHECK(s->updated == Approx(1795949400.0));
    CHECK(s->interval == 10);
    CHECK(s->refusedVersion == "0x851785070c519d83");
    CHECK(s->refusedAt == Approx(1795949300.25));
    CHECK(s->textInForce == "/var/cache/opensm/ibqos-status.policy.conf");
    CHECK(s->opensmConf == "/etc/opensm/opensm.conf");
    CHECK(s->partitions == "/etc/opensm/partitions.conf");
    CHECK(s->json["since"] == "2026-11-29T10:47:37Z");
    CHECK(s->json["refused"]["diagnostics"][0] == "p.conf:3:5: error: [syntax] expected a keyword");
}

TEST_CASE("A status with no policy in force yet names no version", "[plugin-status][unit]") {
    osm::PluginStatus none = inForce();
    none.inForce = false;
    none.refused.reset();
    std::string error;
    auto s = cli::parseSmStatus("s.json", osm::statusJson(none, "s.json", 1795949400.0), error);
    REQUIRE(s);
    CHECK_FALSE(s->inForce);
    CHECK_FALSE(s->version);
    CHECK(s->json["since"].is_null());
    CHECK(s->json["text_in_force"].is_null());
    CHECK_FALSE(s->refusedVersion);
}

TEST_CASE("A file that is not the plugin's status is refused with a reason",
          "[plugin-status][unit]") {
    std::string error;
    CHECK_FALSE(cli::parseSmStatus("s.json", "{not json", error));
    CHECK(error.find("not a status file") != std::string::npos);
    CHECK_FALSE(cli::parseSmStatus("s.json", "[1, 2]", error));
    std::string wrong = osm::statusJson(inForce(), "s.json", 1.0);
    wrong.replace(wrong.find("\"in_force\":true"), 15, "\"in_force\":\"1\"");
    CHECK_FALSE(cli::parseSmStatus("s.json", wrong, error));
    CHECK(error.find("\"in_force\"") != std::string::npos);
}

TEST_CASE("A status is stale after three missed heartbeats, or once its OpenSM is gone",
          "[plugin-status][unit]") {
    osm::PluginStatus written = inForce();
    written.opensmPid = 0;  // no process to ask: the age alone decides
    std::string error;
    auto s = cli::parseSmStatus("s.json", osm::statusJson(written, "s.json", 1000.0), error);
    REQUIRE(s);
    CHECK(cli::staleReason(*s, 1000.0 + 20).empty());
    CHECK(cli::staleReason(*s, 1000.0 + 34).empty());
    CHECK(cli::staleReason(*s, 1000.0 + 36).find("not updated for 36 s") != std::string::npos);

    // A process that has exited and been reaped.
    pid_t child = fork();
    if (child == 0) _exit(0);
    REQUIRE(child > 0);
    REQUIRE(waitpid(child, nullptr, 0) == child);
    s->opensmPid = child;
    CHECK(cli::staleReason(*s, 1000.0).find("is not running") != std::string::npos);
    s->opensmPid = getpid();
    CHECK(cli::staleReason(*s, 1000.0).empty());
}

TEST_CASE("The publisher writes the status whole, the text in force beside it",
          "[plugin-status][unit]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ibqos-status-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "ibqos-status.json").string();
    std::vector<std::string> reports;
    {
        osm::StatusPublisher publisher(
            path, [&](const std::string& m, bool) { reports.push_back(m); }, nullptr);
        const std::string text = "qos-levels\nend-qos-levels\n";
        publisher.publish(inForce(), &text);
        CHECK(readFile((dir / "ibqos-status.policy.conf").string()) == text);
        std::string error;
        auto s = cli::parseSmStatus(path, readFile(path), error);
        REQUIRE(s);
        CHECK(s->version == "0x417aecd359179659");
        CHECK_FALSE(fs::exists(path + ".tmp"));
        CHECK(reports.empty());
    }
    // A status that cannot be written is reported once, however often it is tried.
    {
        const std::string blocked = (dir / "missing" / "ibqos-status.json").string();
        osm::StatusPublisher publisher(
            blocked,
            [&](const std::string& m, bool error) {
                if (error) reports.push_back(m);
            },
            nullptr);
        publisher.publish(inForce());
        publisher.publish(inForce());
        CHECK(reports.size() == 1);
        CHECK(reports.front().find("cannot write") != std::string::npos);
    }
    fs::remove_all(dir);
}

TEST_CASE("The copy of the text in force sits beside the status", "[plugin-status][unit]") {
    CHECK(osm::policyCopyPath("/var/cache/opensm/ibqos-status.json") ==
          "/var/cache/opensm/ibqos-status.policy.conf");
    CHECK(osm::policyCopyPath("/run/qos/state") == "/run/qos/state.policy.conf");
}

// SPDX-License-Identifier: MIT
// PathTable: the agent's fresh SA answers in a shared-memory file that preloaded processes map
// read-only, so that an RTR on a path the host already knows costs a lookup, not a round trip
// to the agent. One writer (the agent), any number of readers; each slot has a sequence count
// (odd while written), and a table-wide generation that the agent bumps to drop every answer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ibqos::host {

// Where the agent publishes the table unless --path-table (and IBQOS_PATH_TABLE) say otherwise.
inline constexpr const char* DefaultPathTable = "/run/ibqos/path-table";

// One path as a QP's RTR asks for it: the local port, the exact SLID (LID | path bits), the
// exact DLID and the QP's P_Key (none for an address handle).
struct PathKey {
    std::string device;
    uint8_t port = 0;
    uint16_t slid = 0;
    uint16_t dlid = 0;
    std::optional<uint16_t> pkey;
    auto operator<=>(const PathKey&) const = default;
};

struct TableAnswer {
    bool found = false;  // false: the SA has no such path
    uint8_t sl = 0;
};

class PathTable {
  public:
    // The agent's side: creates (or replaces) the file with room for `slots` answers (rounded
    // up to a power of two), readable by everyone. nullopt and error set on failure.
    static std::optional<PathTable> create(const std::string& path, size_t slots,
                                           std::string& error);
    // A process's side: maps an existing table read-only; nullopt when there is none or it is
    // not a table of this version.
    static std::optional<PathTable> open(const std::string& path);

    PathTable(PathTable&& other) noexcept;
    PathTable& operator=(PathTable&& other) noexcept;
    ~PathTable();

    // Writer: publishes an answer valid until `validFor` from now.
    void publish(const PathKey& path, const TableAnswer& answer,
                 std::chrono::milliseconds validFor);
    // Writer: every answer published so far stops counting.
    void invalidate();
    // Reader: the answer for exactly this path, if one is published, current and unexpired.
    std::optional<TableAnswer> find(const PathKey& path) const;

  private:
    struct Header;
    struct Slot;
    PathTable(void* base, size_t size, bool writable);
    Slot* slotAt(size_t index) const;

    void* base_ = nullptr;
    size_t size_ = 0;
    size_t slots_ = 0;
    bool writable_ = false;
};

}  // namespace ibqos::host

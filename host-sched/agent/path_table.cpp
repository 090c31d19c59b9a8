// SPDX-License-Identifier: MIT
// PathTable: a fixed file of slots, open addressing over a short probe, per-slot seqlocks.
#include "host-sched/agent/path_table.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "ib/qos.hpp"

namespace ibqos::host {

namespace {

constexpr char Magic[8] = {'I', 'B', 'Q', 'O', 'S', 'P', 'T', '1'};
constexpr size_t Probe = 8;  // slots tried after the home slot's
constexpr size_t MaxDevice = 24;

uint64_t nowNs() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);  // one clock for every process of the host
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t hashOf(const PathKey& p) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
        h ^= v;
        h *= 1099511628211ull;
    };
    for (char c : p.device) mix(static_cast<unsigned char>(c));
    mix(p.port);
    mix(p.slid);
    mix(p.dlid);
    mix(p.pkey ? 0x10000u | *p.pkey : 0);
    return h;
}

}  // namespace

struct PathTable::Header {
    char magic[8];
    uint32_t slotCount;
    uint32_t slotSize;
    std::atomic<uint64_t> generation;
};

// Every field but seq is written only between seq's odd and even values.
struct PathTable::Slot {
    std::atomic<uint32_t> seq;
    uint8_t used;
    uint8_t port;
    uint8_t found;
    uint8_t sl;
    uint16_t slid;
    uint16_t dlid;
    uint32_t pkey;  // 0x10000 | P_Key, or 0 for none
    uint64_t generation;
    uint64_t expiresNs;
    char device[MaxDevice];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free);

PathTable::PathTable(void* base, size_t size, bool writable)
    : base_(base), size_(size), writable_(writable) {
    slots_ = static_cast<Header*>(base_)->slotCount;
}

PathTable::PathTable(PathTable&& other) noexcept { *this = std::move(other); }

PathTable& PathTable::operator=(PathTable&& other) noexcept {
    if (this != &other) {
        if (base_) munmap(base_, size_);
        base_ = std::exchange(other.base_, nullptr);
        size_ = other.size_;
        slots_ = other.slots_;
        writable_ = other.writable_;
    }
    return *this;
}

PathTable::~PathTable() {
    if (base_) munmap(base_, size_);
}

PathTable::Slot* PathTable::slotAt(size_t index) const {
    auto* first = reinterpret_cast<Slot*>(static_cast<char*>(base_) + sizeof(Header));
    return first + (index & (slots_ - 1));
}

std::optional<PathTable> PathTable::create(const std::string& path, size_t slots,
                                           std::string& error) {
    size_t count = 16;
    while (count < slots && count < (size_t{1} << 24)) count <<= 1;
    const size_t size = sizeof(Header) + count * sizeof(Slot);
    // A fresh file renamed over the old one: processes that mapped the old one keep a valid
    // (and from now on stale, never updated) table until they map again.
    std::string fresh = path + ".new";
    int fd = ::open(fresh.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
        error = "cannot create " + fresh + ": " + std::strerror(errno);
        if (fd >= 0) close(fd);
        return std::nullopt;
    }
    fchmod(fd, 0644);
    void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        error = "cannot map " + fresh + ": " + std::strerror(errno);
        unlink(fresh.c_str());
        return std::nullopt;
    }
    auto* header = static_cast<Header*>(base);
    header->slotCount = static_cast<uint32_t>(count);
    header->slotSize = sizeof(Slot);
    header->generation.store(1);
    std::memcpy(header->magic, Magic, sizeof Magic);  // last: a reader checks it first
    if (rename(fresh.c_str(), path.c_str()) != 0) {
        error = "cannot rename " + fresh + " to " + path + ": " + std::strerror(errno);
        munmap(base, size);
        unlink(fresh.c_str());
        return std::nullopt;
    }
    return PathTable(base, size, true);
}

std::optional<PathTable> PathTable::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(Header)) {
        close(fd);
        return std::nullopt;
    }
    size_t size = static_cast<size_t>(st.st_size);
    void* base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return std::nullopt;
    const auto* header = static_cast<const Header*>(base);
    const uint32_t count = header->slotCount;
    // Anything that is not exactly what create() writes is no table.
    if (std::memcmp(header->magic, Magic, sizeof Magic) != 0 || header->slotSize != sizeof(Slot) ||
        count < 16 || (count & (count - 1)) != 0 || sizeof(Header) + count * sizeof(Slot) != size) {
        munmap(base, size);
        return std::nullopt;
    }
    return PathTable(base, size, false);
}

void PathTable::publish(const PathKey& path, const TableAnswer& answer,
                        std::chrono::milliseconds validFor) {
    if (!writable_ || path.device.size() >= MaxDevice) return;
    const uint64_t now = nowNs();
    const uint64_t generation = static_cast<Header*>(base_)->generation.load();
    const uint32_t pkey = path.pkey ? 0x10000u | *path.pkey : 0;
    const uint64_t home = hashOf(path);
    // The slot of this path, else a free or stale one, else the home slot's probe's first.
    Slot* target = nullptr;
    for (size_t i = 0; i <= Probe && !target; ++i) {
        Slot* s = slotAt(home + i);
        bool same = s->used && s->port == path.port && s->slid == path.slid &&
                    s->dlid == path.dlid && s->pkey == pkey &&
                    std::string_view(s->device) == path.device;
        bool stale = !s->used || s->generation != generation || s->expiresNs <= now;
        if (same || stale) target = s;
    }
    if (!target) target = slotAt(home);
    uint32_t seq = target->seq.load(std::memory_order_relaxed);
    target->seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    target->used = 1;
    target->port = path.port;
    target->found = answer.found;
    target->sl = answer.sl;
    target->slid = path.slid;
    target->dlid = path.dlid;
    target->pkey = pkey;
    target->generation = generation;
    target->expiresNs = now + static_cast<uint64_t>(validFor.count()) * 1000000u;
    std::memset(target->device, 0, MaxDevice);
    std::memcpy(target->device, path.device.data(), path.device.size());
    target->seq.store(seq + 2, std::memory_order_release);
}

void PathTable::invalidate() {
    if (writable_) static_cast<Header*>(base_)->generation.fetch_add(1);
}

std::optional<TableAnswer> PathTable::find(const PathKey& path) const {
    if (!base_ || path.device.size() >= MaxDevice) return std::nullopt;
    const uint64_t generation = static_cast<const Header*>(base_)->generation.load();
    const uint32_t pkey = path.pkey ? 0x10000u | *path.pkey : 0;
    const uint64_t home = hashOf(path);
    const uint64_t now = nowNs();
    for (size_t i = 0; i <= Probe; ++i) {
        Slot* s = slotAt(home + i);
        uint32_t before = s->seq.load(std::memory_order_acquire);
        if (before & 1) continue;  // being written: ask the agent instead
        Slot copy;
        copy.used = s->used;
        copy.port = s->port;
        copy.found = s->found;
        copy.sl = s->sl;
        copy.slid = s->slid;
        copy.dlid = s->dlid;
        copy.pkey = s->pkey;
        copy.generation = s->generation;
        copy.expiresNs = s->expiresNs;
        std::memcpy(copy.device, s->device, MaxDevice);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s->seq.load(std::memory_order_relaxed) != before) continue;
        copy.device[MaxDevice - 1] = 0;
        if (!copy.used || copy.port != path.port || copy.slid != path.slid ||
            copy.dlid != path.dlid || copy.pkey != pkey ||
            std::string_view(copy.device) != path.device)
            continue;
        if (copy.generation != generation || copy.expiresNs <= now || copy.sl > ib::MaxSl)
            return std::nullopt;
        return TableAnswer{copy.found != 0, copy.sl};
    }
    return std::nullopt;
}

}  // namespace ibqos::host

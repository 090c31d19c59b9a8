// SPDX-License-Identifier: MIT
// The next definition of a verbs or librdmacm call in the process: the real one below the
// library's own, or the one the library queries the device with.
#pragma once

#include <atomic>

#include "host-sched/preload/interposed.hpp"

namespace ibqos::host {

template <typename Fn>
Fn nextSymbol(const char* name, const char* version = "IBVERBS_1.1") {
    return reinterpret_cast<Fn>(findDefinition(name, version));
}

// nextSymbol, remembered once found (a library an application loads later may bring it).
template <typename Fn>
Fn cachedSymbol(std::atomic<void*>& slot, const char* name, const char* version = "IBVERBS_1.1") {
    void* p = slot.load(std::memory_order_acquire);
    if (!p) {
        p = findDefinition(name, version);
        if (p) slot.store(p, std::memory_order_release);
    }
    return reinterpret_cast<Fn>(p);
}

}  // namespace ibqos::host

// SPDX-License-Identifier: MIT
// Where the wrappers' definitions are, and which lookups get a wrapper.
//
// An application that links libibverbs calls our definitions because LD_PRELOAD puts them
// first; one that loads it itself (NCCL: dlopen("libibverbs.so") without RTLD_GLOBAL, then
// dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1")) searches only that library and would never
// see them. dlsym and dlvsym (lookup_entry.cpp) pass every lookup through substituteLookup:
// when what the application found is the very definition our wrapper forwards to, it gets the
// wrapper, so the same decision runs for its QPs. A definition that is not ours to forward to
// (another copy of the library) is returned as found. Such a library is not in the global
// scope, so RTLD_NEXT cannot find its other calls (ibv_query_port, ...): the libraries the
// application's lookups found are remembered and searched after RTLD_NEXT.
#include "host-sched/preload/interposed.hpp"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstring>

namespace ibqos::host {

namespace {

// What the process's own lookups showed us: libraries (by load address) and their handles.
struct KnownLibrary {
    std::atomic<void*> base{nullptr};
    std::atomic<void*> handle{nullptr};
};
std::array<KnownLibrary, 4> knownLibraries;

std::array<std::atomic<void*>, static_cast<size_t>(Interposed::Count)> realDefinitions{};

// The names the library interposes or may need from the libraries it learns.
bool verbsName(const char* name) {
    return std::strncmp(name, "ibv_", 4) == 0 || std::strncmp(name, "rdma_", 5) == 0 ||
           std::strncmp(name, "mlx5dv_", 7) == 0;
}

void learnLibraryOf(void* definition) {
    Dl_info info{};
    if (!dladdr(definition, &info) || !info.dli_fbase || !info.dli_fname) return;
    Dl_info own{};
    if (dladdr(reinterpret_cast<void*>(&learnLibraryOf), &own) && own.dli_fbase == info.dli_fbase)
        return;  // our own wrapper, found through a handle that searches us too
    for (KnownLibrary& known : knownLibraries) {
        if (known.base.load(std::memory_order_acquire) == info.dli_fbase) return;
    }
    // The library is loaded already: RTLD_NOLOAD only takes a handle on it.
    void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return;
    for (KnownLibrary& known : knownLibraries) {
        void* expected = nullptr;
        if (known.base.compare_exchange_strong(expected, info.dli_fbase)) {
            known.handle.store(handle, std::memory_order_release);
            return;
        }
        if (expected == info.dli_fbase) break;  // another thread learnt it meanwhile
    }
    dlclose(handle);
}

}  // namespace

void* findDefinition(const char* name, const char* version) {
    // RTLD_NEXT lookups pass through our dlvsym untouched (relative to this library); lookups in
    // the known libraries must not come back to substituteLookup.
    void* p = dlvsym(RTLD_NEXT, name, version);
    if (!p) p = dlsym(RTLD_NEXT, name);
    for (KnownLibrary& known : knownLibraries) {
        if (p) break;
        void* handle = known.handle.load(std::memory_order_acquire);
        if (!handle) continue;
        p = lookUpIn(handle, name, version);
    }
    return p;
}

void* realDefinition(Interposed which) {
    std::atomic<void*>& slot = realDefinitions[static_cast<size_t>(which)];
    void* p = slot.load(std::memory_order_acquire);
    if (p) return p;
    const InterposedSymbol& symbol = interposedSymbol(which);
    p = findDefinition(symbol.name, symbol.version);
    if (!p || p == symbol.wrapper) return nullptr;
    void* expected = nullptr;
    if (!slot.compare_exchange_strong(expected, p)) p = expected;
    return p;
}

void* substituteLookup(const char* name, const char* version, void* found) {
    if (!found || !name || !verbsName(name)) return found;
    learnLibraryOf(found);
    void* result = found;
    for (size_t i = 0; i < static_cast<size_t>(Interposed::Count); ++i) {
        const auto which = static_cast<Interposed>(i);
        const InterposedSymbol& symbol = interposedSymbol(which);
        if (std::strcmp(name, symbol.name) != 0) continue;
        // Another version of the call (IBVERBS_1.0's layout) is not what the wrapper forwards to.
        if (version && std::strcmp(version, symbol.version) != 0) break;
        if (found == symbol.wrapper) break;
        void* real = realDefinition(which);
        if (!real) {
            std::atomic<void*>& slot = realDefinitions[i];
            void* expected = nullptr;
            real = slot.compare_exchange_strong(expected, found) ? found : expected;
        }
        if (real == found) result = symbol.wrapper;
        break;
    }
    // The application's lookup succeeded: our own lookups leave no error for dlerror().
    (void)dlerror();
    return result;
}

}  // namespace ibqos::host

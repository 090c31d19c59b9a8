// SPDX-License-Identifier: MIT
// The calls libibqos_preload.so interposes, the definitions its wrappers forward to, and the
// lookups (dlsym, dlvsym) that hand an application the wrapper instead of the definition.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibqos::host {

// Every call the library defines in place of its library's (the table's order).
enum class Interposed : uint8_t {
    ModifyQp,
    DestroyQp,
    CloseDevice,
    CreateAh,
    CreateAhFromWc,
    CmCreateQp,
    CmCreateQpEx,
    CmInitQpAttr,
    CmGetEvent,
    DevxObjCreate,
    DevxObjModify,
    DevxObjDestroy,
    DevxQpModify,
    Count,
};

// One interposed call: its name, the version its library defines it with, our wrapper.
struct InterposedSymbol {
    const char* name;
    const char* version;
    void* wrapper;
};

// The table (entry_points.cpp, where the wrappers are).
const InterposedSymbol& interposedSymbol(Interposed which);

// The definition a wrapper forwards to: the next one after this library, else the one an
// application's own lookup found (a library it loaded with RTLD_LOCAL, as NCCL loads
// libibverbs); null when there is none yet.
void* realDefinition(Interposed which);

// The next definition of any verbs, librdmacm or mlx5dv call: after this library, else in the
// libraries the application's lookups showed us.
void* findDefinition(const char* name, const char* version);

// glibc's own lookup of `name` at `version` (else any version) in a library handle, never
// substituted (lookup_entry.cpp).
void* lookUpIn(void* handle, const char* name, const char* version);

// What a lookup of `name` (at `version`, or any when null) that found `found` returns to the
// application: our wrapper when `found` is the very definition the wrapper forwards to.
void* substituteLookup(const char* name, const char* version, void* found);

}  // namespace ibqos::host

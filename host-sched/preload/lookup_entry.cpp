// SPDX-License-Identifier: MIT
// libibqos_preload.so's dlsym and dlvsym: an application's lookup of an interposed verbs call
// in a library it loaded itself gets our wrapper (interposed.cpp says when).
//
// Why a lookup, and why this way. NCCL loads libibverbs with dlopen and takes every call with
// dlvsym(handle, name, "IBVERBS_1.1") (src/misc/ibvsymbols.cc); a lookup on a handle searches
// that library and its dependencies only, never LD_PRELOAD's definitions. Defining dlsym and
// dlvsym here is the one place every such lookup passes (patching code in libibverbs would be
// the other, and far more fragile). They are defined at both versions applications reference:
// GLIBC_2.34 (built against glibc 2.34 or later, where libdl moved into libc) and the first
// one (older builds, such as manylinux wheels of NCCL).
//
// RTLD_DEFAULT and RTLD_NEXT lookups are relative to the caller: glibc takes the caller from
// the return address. They are therefore not looked up here at all: a few instructions of
// assembly jump straight to glibc's own function, so the caller glibc sees is the
// application's, and the answer is exactly glibc's. (Those lookups need no substitution: our
// definitions come first in the global scope, and right after the program in RTLD_NEXT's
// order.) Lookups on a handle are not caller-relative (glibc uses the caller only for
// LD_AUDIT's symbind); they run through substituteLookup.
//
// glibc's dlsym and dlvsym are found without calling dlsym (which is ours): in the dynamic
// symbol table of the first object loaded after this library that defines both (libc.so.6, or
// libdl.so.2 before 2.34; the link map from _r_debug), by its GNU or SysV hash table, the
// default version preferred.
//
// Only x86-64 has the entry code; elsewhere the library defines no dlsym or dlvsym and
// applications that load verbs themselves are not reached (as before).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "host-sched/preload/interposed.hpp"

#if defined(__x86_64__)

extern "C" {

// glibc's dlsym and dlvsym (null until found); read by the entry code.
__attribute__((visibility("hidden"))) void* ibqos_real_dlsym = nullptr;
__attribute__((visibility("hidden"))) void* ibqos_real_dlvsym = nullptr;
__attribute__((visibility("hidden"))) void ibqos_find_real_dlfcn();
__attribute__((visibility("hidden"))) void* ibqos_dlsym_handle(void* handle, const char* name);
__attribute__((visibility("hidden"))) void* ibqos_dlvsym_handle(void* handle, const char* name,
                                                                const char* version);
}

#if defined(__CET__) && (__CET__ & 1)
#define IBQOS_ENDBR "endbr64\n"
#else
#define IBQOS_ENDBR ""
#endif

// dlsym and dlvsym: RTLD_DEFAULT (0) and RTLD_NEXT (-1) jump to glibc's (found first if need
// be, the arguments kept); any other handle goes to the C++ code below. The x86-64 ABI keeps
// the first three arguments in rdi, rsi, rdx.
// clang-format off
#define IBQOS_LOOKUP_ENTRY(entry, real, handled)    \
    ".globl " #entry "\n"                           \
    ".type " #entry ", @function\n"                 \
    #entry ":\n" IBQOS_ENDBR                        \
    "    testq %rdi, %rdi\n"                        \
    "    je 1f\n"                                   \
    "    cmpq $-1, %rdi\n"                          \
    "    je 1f\n"                                   \
    "    jmp " #handled "\n"                        \
    "1:  movq " #real "(%rip), %rax\n"              \
    "    testq %rax, %rax\n"                        \
    "    je 2f\n"                                   \
    "    jmp *%rax\n"                               \
    "2:  pushq %rdi\n"                              \
    "    pushq %rsi\n"                              \
    "    pushq %rdx\n"                              \
    "    call ibqos_find_real_dlfcn\n"              \
    "    popq %rdx\n"                               \
    "    popq %rsi\n"                               \
    "    popq %rdi\n"                               \
    "    movq " #real "(%rip), %rax\n"              \
    "    testq %rax, %rax\n"                        \
    "    je 3f\n"                                   \
    "    jmp *%rax\n"                               \
    "3:  xorl %eax, %eax\n"                         \
    "    ret\n"                                     \
    ".size " #entry ", .-" #entry "\n"

asm(".text\n"
    ".p2align 4\n"
    IBQOS_LOOKUP_ENTRY(ibqos_dlsym_entry, ibqos_real_dlsym, ibqos_dlsym_handle)
    ".p2align 4\n"
    IBQOS_LOOKUP_ENTRY(ibqos_dlvsym_entry, ibqos_real_dlvsym, ibqos_dlvsym_handle)
    // The same entries under the two versions applications reference.
    ".symver ibqos_dlsym_entry, dlsym@@GLIBC_2.34\n"
    ".set ibqos_dlsym_compat, ibqos_dlsym_entry\n"
    ".globl ibqos_dlsym_compat\n"
    ".symver ibqos_dlsym_compat, dlsym@GLIBC_2.2.5\n"
    ".symver ibqos_dlvsym_entry, dlvsym@@GLIBC_2.34\n"
    ".set ibqos_dlvsym_compat, ibqos_dlvsym_entry\n"
    ".globl ibqos_dlvsym_compat\n"
    ".symver ibqos_dlvsym_compat, dlvsym@GLIBC_2.2.5\n");
// clang-format on

namespace {

using DlsymFn = void* (*)(void*, const char*);
using DlvsymFn = void* (*)(void*, const char*, const char*);

using ElfAddr = ElfW(Addr);
using ElfDyn = ElfW(Dyn);
using ElfHalf = ElfW(Half);
using ElfSym = ElfW(Sym);
using ElfWord = ElfW(Word);

// The bit of a DT_VERSYM entry that marks a version other than the default (the GNU symbol
// versioning's VERSYM_HIDDEN, which <elf.h> does not name).
constexpr ElfHalf VersymHidden = 1u << 15;

// The code that finds glibc's functions may run before a sanitizer's runtime has set itself up
// (AddressSanitizer looks up its interceptors' targets with dlsym(RTLD_NEXT) before it maps its
// shadow memory): it is not instrumented and calls nothing a sanitizer intercepts.
#define IBQOS_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

// An object's dynamic symbol table, from its dynamic section.
struct DynamicSymbols {
    ElfAddr base = 0;
    const ElfSym* symbols = nullptr;
    const char* strings = nullptr;
    const ElfHalf* versions = nullptr;
    const uint32_t* gnuHash = nullptr;
    const ElfWord* sysvHash = nullptr;
};

// ld.so relocates the dynamic section's addresses on most targets; an offset is below the base.
IBQOS_UNINSTRUMENTED const void* addressOf(ElfAddr value, ElfAddr base) {
    return reinterpret_cast<const void*>(value < base ? value + base : value);
}

IBQOS_UNINSTRUMENTED DynamicSymbols dynamicSymbols(const link_map* map) {
    DynamicSymbols d;
    d.base = map->l_addr;
    for (const ElfDyn* dyn = map->l_ld; dyn && dyn->d_tag != DT_NULL; ++dyn) {
        const void* at = addressOf(dyn->d_un.d_ptr, d.base);
        switch (dyn->d_tag) {
            case DT_SYMTAB:
                d.symbols = static_cast<const ElfSym*>(at);
                break;
            case DT_STRTAB:
                d.strings = static_cast<const char*>(at);
                break;
            case DT_VERSYM:
                d.versions = static_cast<const ElfHalf*>(at);
                break;
            case DT_GNU_HASH:
                d.gnuHash = static_cast<const uint32_t*>(at);
                break;
            case DT_HASH:
                d.sysvHash = static_cast<const ElfWord*>(at);
                break;
            default:
                break;
        }
    }
    return d;
}

IBQOS_UNINSTRUMENTED bool sameName(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

// Symbol i when it is the defined function `name`: 2 at its default version, 1 at another, 0 not.
IBQOS_UNINSTRUMENTED int matchOf(const DynamicSymbols& d, uint32_t i, const char* name) {
    const ElfSym& s = d.symbols[i];
    if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || ELF64_ST_TYPE(s.st_info) != STT_FUNC ||
        !sameName(d.strings + s.st_name, name))
        return 0;
    return !d.versions || !(d.versions[i] & VersymHidden) ? 2 : 1;
}

// The defined function `name` in the table: its default version if it has one.
IBQOS_UNINSTRUMENTED void* definitionIn(const DynamicSymbols& d, const char* name) {
    if (!d.symbols || !d.strings) return nullptr;
    const ElfSym* found = nullptr;
    int best = 0;
    if (d.gnuHash) {
        const uint32_t buckets = d.gnuHash[0], firstSymbol = d.gnuHash[1],
                       bloomWords = d.gnuHash[2];
        if (buckets == 0) return nullptr;
        const auto* bucket = reinterpret_cast<const uint32_t*>(
            reinterpret_cast<const ElfAddr*>(d.gnuHash + 4) + bloomWords);
        const uint32_t* chain = bucket + buckets;
        uint32_t hash = 5381;
        for (const char* c = name; *c; ++c) hash = hash * 33 + static_cast<unsigned char>(*c);
        for (uint32_t i = bucket[hash % buckets]; i >= firstSymbol; ++i) {
            const uint32_t entry = chain[i - firstSymbol];
            if ((entry | 1) == (hash | 1)) {
                if (int m = matchOf(d, i, name); m > best) best = m, found = &d.symbols[i];
            }
            if (entry & 1) break;
        }
    } else if (d.sysvHash) {
        for (uint32_t i = 0; i < d.sysvHash[1]; ++i) {
            if (int m = matchOf(d, i, name); m > best) best = m, found = &d.symbols[i];
        }
    }
    return found ? reinterpret_cast<void*>(d.base + found->st_value) : nullptr;
}

// Finds both functions in the first object loaded after this library that has them (as
// RTLD_NEXT would), or in any other object; true when found.
IBQOS_UNINSTRUMENTED bool findRealDlfcn(bool afterThisLibraryOnly) {
    bool after = false;
    for (const link_map* map = _r_debug.r_map; map; map = map->l_next) {
        if (map->l_ld == _DYNAMIC) {  // this library's own (<link.h>; the linker defines it)
            after = true;
            continue;
        }
        if (afterThisLibraryOnly && !after) continue;
        const DynamicSymbols d = dynamicSymbols(map);
        void* dlsymAt = definitionIn(d, "dlsym");
        void* dlvsymAt = definitionIn(d, "dlvsym");
        if (dlsymAt && dlvsymAt) {
            __atomic_store_n(&ibqos_real_dlsym, dlsymAt, __ATOMIC_RELEASE);
            __atomic_store_n(&ibqos_real_dlvsym, dlvsymAt, __ATOMIC_RELEASE);
            return true;
        }
    }
    return false;
}

DlsymFn realDlsym() {
    if (!__atomic_load_n(&ibqos_real_dlsym, __ATOMIC_ACQUIRE)) ibqos_find_real_dlfcn();
    return reinterpret_cast<DlsymFn>(__atomic_load_n(&ibqos_real_dlsym, __ATOMIC_ACQUIRE));
}

DlvsymFn realDlvsym() {
    if (!__atomic_load_n(&ibqos_real_dlvsym, __ATOMIC_ACQUIRE)) ibqos_find_real_dlfcn();
    return reinterpret_cast<DlvsymFn>(__atomic_load_n(&ibqos_real_dlvsym, __ATOMIC_ACQUIRE));
}

}  // namespace

extern "C" {

IBQOS_UNINSTRUMENTED void ibqos_find_real_dlfcn() {
    if (!findRealDlfcn(true)) findRealDlfcn(false);
}

void* ibqos_dlsym_handle(void* handle, const char* name) {
    DlsymFn real = realDlsym();
    if (!real) return nullptr;
    return ibqos::host::substituteLookup(name, nullptr, real(handle, name));
}

void* ibqos_dlvsym_handle(void* handle, const char* name, const char* version) {
    DlvsymFn real = realDlvsym();
    if (!real) return nullptr;
    return ibqos::host::substituteLookup(name, version, real(handle, name, version));
}

}  // extern "C"

namespace ibqos::host {

void* lookUpIn(void* handle, const char* name, const char* version) {
    void* p = nullptr;
    if (DlvsymFn real = realDlvsym()) p = real(handle, name, version);
    if (!p) {
        if (DlsymFn real = realDlsym()) p = real(handle, name);
    }
    return p;
}

}  // namespace ibqos::host

#else  // no entry code: dlsym and dlvsym are glibc's

namespace ibqos::host {

void* lookUpIn(void* handle, const char* name, const char* version) {
    void* p = dlvsym(handle, name, version);
    return p ? p : dlsym(handle, name);
}

}  // namespace ibqos::host

#endif  // __x86_64__

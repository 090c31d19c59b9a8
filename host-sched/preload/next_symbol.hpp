// SPDX-License-Identifier: MIT
// The next definition of a verbs or librdmacm call in the process: the real one below the
// library's own, or the one the library queries the device with.
#pragma once

#include <dlfcn.h>

namespace ibqos::host {

template <typename Fn>
Fn nextSymbol(const char* name, const char* version = "IBVERBS_1.1") {
    void* p = dlvsym(RTLD_NEXT, name, version);
    if (!p) p = dlsym(RTLD_NEXT, name);
    return reinterpret_cast<Fn>(p);
}

}  // namespace ibqos::host

// SPDX-License-Identifier: MIT
#include "common/heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace ibqos {

void heapInHugePages() {
    // Measured on a 1.7 MB, 10,000-rule policy: `ibqos check` 7,700 page faults to 720 and
    // 0.17 s to 0.06 s, peak memory 30 MB to 33 MB.
    constexpr size_t Step = size_t{256} << 20;
    constexpr uintptr_t Huge = uintptr_t{2} << 20;
    mallopt(M_TOP_PAD, static_cast<int>(Step));
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(Step));
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(Step / 4));
    // A block larger than what is left makes the heap grow now, by the whole step, which is
    // then advised once.
    const auto from = (reinterpret_cast<uintptr_t>(sbrk(0)) + Huge - 1) & ~(Huge - 1);
    void* volatile grow = std::malloc(size_t{1} << 20);  // (volatile: not optimised away)
    const auto to = reinterpret_cast<uintptr_t>(sbrk(0)) & ~(Huge - 1);
    if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
    std::free(grow);
}

}  // namespace ibqos

// SPDX-License-Identifier: MIT
// The heap of a process of our own in 2 MB pages.
#pragma once

namespace ibqos {

// Reserves the heap in large steps and asks the kernel for transparent huge pages on them
// (madvise mode, Debian's default; nothing changes where the kernel offers none). Large
// policies touch tens of megabytes of heap, and a page fault per 4 KB page costs more than the
// parse itself. For the ibqos command and the benchmarks' measuring children only: never inside
// OpenSM, whose allocator settings are its own. Call first thing in main().
void heapInHugePages();

}  // namespace ibqos

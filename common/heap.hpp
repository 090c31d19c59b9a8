// SPDX-License-Identifier: MIT
// The heap of a process of our own: mimalloc where the build has it, in 2 MB pages.
#pragma once

namespace ibqos {

// Sets up the heap of the ibqos command and of the benchmarks' measuring children. A build with
// mimalloc links it in place of glibc's allocator (heap_dep): loading a policy allocates a node
// per field and value, and glibc's malloc spent a third of a 10,000-rule policy's load in its
// bins. Either allocator is asked for transparent huge pages (madvise mode, Debian's default;
// nothing changes where the kernel offers none): large policies touch tens of megabytes of heap,
// and a page fault per 4 KB page costs more than the parse itself. Never inside OpenSM, whose
// allocator is its own, nor in the preload library. Call first thing in main().
void heapInHugePages();

}  // namespace ibqos

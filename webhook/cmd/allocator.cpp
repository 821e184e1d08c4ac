#include "webhook/cmd/allocator.h"

#include <cstdlib>

#if defined(KUBEGAP_MIMALLOC)
#include <mimalloc.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kubegap {

namespace {
#if defined(KUBEGAP_MIMALLOC)
// mimalloc_serves_malloc: whether a block from calloc is in mimalloc's heap, i.e. its
// malloc is the one the process resolved (it must come before libc in the load order).
// The load order does not change while the process runs: asked once.
bool mimalloc_serves_malloc() {
  static const bool ours = [] {
    void* block = std::calloc(1, 64);  // calloc: the block is read as initialised
    const bool in_heap = mi_is_in_heap_region(block);
    std::free(block);
    return in_heap;
  }();
  return ours;
}
#endif
}  // namespace

std::string allocator_name() {
#if defined(KUBEGAP_MIMALLOC)
  if (mimalloc_serves_malloc()) {
    const int v = mi_version();  // e.g. 209 for 2.0.9
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
  }
  return "system malloc (mimalloc linked but not in charge)";
#else
  return "system malloc";
#endif
}

namespace {
// map_large_buffers: glibc's malloc maps every allocation of 1 MiB or more (a large body,
// its decode copy, the decoder's stack) on its own and returns it to the kernel when
// freed. glibc otherwise raises its threshold after the first such free, and later ones
// come from the heap of whichever worker thread asked: each thread's heap then keeps its
// own copy of a burst, and two of them took RSS 40 MiB past the memory budget
// (abuse_memory). Setting the threshold also stops glibc from moving it. (Under a
// sanitizer its own allocator is in charge and mallopt does nothing.)
void map_large_buffers() {
#if defined(__GLIBC__)
  constexpr int kMapFrom = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, kMapFrom);
#endif
}
}  // namespace

void tune_allocator_for_serving() {
#if defined(KUBEGAP_MIMALLOC)
  if (mimalloc_serves_malloc()) {
    // Pages freed go back to the kernel at once rather than after a delay: with the
    // default delay, three bursts of two 8 MiB bodies left 66.7 MiB resident once
    // answered (abuse_memory allows 16 MiB over the fresh server), and the peak with the
    // 192 MiB budget was 212 MiB instead of 160. At once, it peaked at 160 MiB and kept
    // 16 MiB, and the review rate did not move (docs/performance.md). The option is
    // decommit_delay in mimalloc 2.0's header; its environment variable
    // MIMALLOC_DECOMMIT_DELAY (or the older name, MIMALLOC_RESET_DELAY) still wins.
    if (std::getenv("MIMALLOC_DECOMMIT_DELAY") == nullptr && std::getenv("MIMALLOC_RESET_DELAY") == nullptr) {
      mi_option_set(mi_option_decommit_delay, 0);
    }
    return;
  }
#endif
  map_large_buffers();  // glibc's malloc is in charge
}

}  // namespace kubegap

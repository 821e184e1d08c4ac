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
bool mimalloc_serves_malloc() {
  void* block = std::calloc(1, 64);  // calloc: the block is read as initialised
  const bool ours = mi_is_in_heap_region(block);
  std::free(block);
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

void tune_allocator_for_serving() {
#if defined(KUBEGAP_MIMALLOC)
  // Pages freed are given back to the kernel at once rather than after a delay: with the
  // default delay, three bursts of two 8 MiB bodies left 66 MiB resident after they were
  // answered (glibc: 13 MiB), and the peak with the 192 MiB budget was 212 MiB instead of
  // 160. At once, both are glibc's, and the review rate is unchanged (docs/performance.md).
  // The option is named decommit_delay in mimalloc 2.0's header, reset_delay in its
  // environment (MIMALLOC_RESET_DELAY, or MIMALLOC_DECOMMIT_DELAY), which still wins.
  if (std::getenv("MIMALLOC_RESET_DELAY") == nullptr && std::getenv("MIMALLOC_DECOMMIT_DELAY") == nullptr) {
    mi_option_set(mi_option_decommit_delay, 0);
  }
#elif defined(__GLIBC__)
  // Every allocation of 1 MiB or more (a large body, its decode copy, the decoder's stack)
  // is mapped on its own and returned to the kernel when freed. glibc otherwise raises its
  // threshold after the first such free, and later ones come from the heap of whichever
  // worker thread asked: each thread's heap then keeps its own copy of a burst, and two of
  // them took RSS 40 MiB past the memory budget (abuse_memory). Setting the threshold also
  // stops glibc from moving it. (Under a sanitizer its own allocator is in charge and
  // mallopt does nothing.)
  constexpr int kMapFrom = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, kMapFrom);
#endif
}

}  // namespace kubegap

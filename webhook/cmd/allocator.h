#pragma once
// The process's allocator: which one serves malloc, and its settings for `serve`.

#include <string>

namespace kubegap {

// allocator_name: "mimalloc X.Y.Z" when mimalloc serves this process's malloc (the build
// links it: KUBEGAP_MIMALLOC), else "system malloc" (glibc's, or a sanitizer's). Asked
// of a pointer malloc returned, not of the build: a build that links mimalloc but loads
// behind libc would say so.
std::string allocator_name();

// tune_allocator_for_serving: memory freed after a burst of large bodies goes back to the
// kernel at once, so what the server holds follows what its requests keep (the memory
// budget, abuse_memory). Called once, before the server's threads start.
void tune_allocator_for_serving();

}  // namespace kubegap

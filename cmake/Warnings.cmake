# Target-scoped warnings and sanitizers (no global flags).
function(kubegap_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion)
  if(KUBEGAP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(KUBEGAP_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(KUBEGAP_TSAN)
    # -Wno-tsan: libstdc++'s shared_ptr and Asio's handler memory use atomic_thread_fence,
    # which TSan does not model; GCC warns on every use. A race it then misses is a gap
    # in the tool, not a pass to be ignored: the ASan run and the abuse tests remain.
    target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
    target_link_options(${target} PRIVATE -fsanitize=thread)
  endif()
  # The fuzz preset: every object carries libFuzzer's coverage instrumentation; only the
  # fuzzers themselves link libFuzzer (tests/fuzz/CMakeLists.txt adds -fsanitize=fuzzer).
  if(KUBEGAP_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
      -fno-omit-frame-pointer -fno-sanitize-recover=undefined
      -fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/tests/fuzz/ubsan-ignorelist.txt)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

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
  # The fuzz preset: every object carries libFuzzer's coverage instrumentation; only the
  # fuzzers themselves link libFuzzer (tests/fuzz/CMakeLists.txt adds -fsanitize=fuzzer).
  if(KUBEGAP_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined
      -fno-omit-frame-pointer -fno-sanitize-recover=undefined
      -fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/tests/fuzz/ubsan-ignorelist.txt)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

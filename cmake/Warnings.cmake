# Target-scoped warnings, sanitizers and hardening (no global flags).

# Hardening of what ships (issue 31): stack protector, stack clash and control-flow
# protection where the compiler has them, FORTIFY_SOURCE=2 (it needs optimisation, so not
# in Debug), full RELRO with immediate binding. Not in the sanitizer trees: ASan and TSan
# instrument the same calls, and those trees are for finding bugs, not for shipping.
# tests/hardening/check_binary.sh reads the release binary for each.
include(CheckCXXCompilerFlag)
set(KUBEGAP_HARDENING_FLAGS -fstack-protector-strong)
foreach(flag -fstack-clash-protection -fcf-protection)
  string(MAKE_C_IDENTIFIER "KUBEGAP_HAS${flag}" var)
  check_cxx_compiler_flag(${flag} ${var})
  if(${var})
    list(APPEND KUBEGAP_HARDENING_FLAGS ${flag})
  endif()
endforeach()

function(kubegap_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion)
  if(KUBEGAP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(NOT KUBEGAP_SANITIZE AND NOT KUBEGAP_TSAN AND NOT KUBEGAP_FUZZ)
    target_compile_options(${target} PRIVATE ${KUBEGAP_HARDENING_FLAGS}
      $<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2>)
    target_link_options(${target} PRIVATE -Wl,-z,relro,-z,now)
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

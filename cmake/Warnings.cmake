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
endfunction()

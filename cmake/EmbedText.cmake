# Writes OUTPUT: a C++ source defining `std::string_view FUNCTION()` that returns the
# text of INPUT, so a data file (policies/default-policy.yaml) ships inside the binary
# and cannot drift from the file.
file(READ "${INPUT}" content)
if(content MATCHES "\\)kgtext\"")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )kgtext\"")
endif()
set(body "// Generated from ${NAME} by cmake/EmbedText.cmake. Do not edit.\n#include <string_view>\n\n")
string(APPEND body "namespace kubegap {\n\nstd::string_view ${FUNCTION}() {\n  return R\"kgtext(${content})kgtext\";\n}\n\n}  // namespace kubegap\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)

# Every dependency is a Debian package; a missing one fails here, naming the package.
find_package(Threads REQUIRED)

macro(kubegap_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "${what} not found: install the Debian package '${package}' "
                        "(apt-get install ${package}), or run ./dev deps")
  endif()
endmacro()

find_package(Boost 1.81 CONFIG QUIET)
kubegap_require(Boost_FOUND "Boost >= 1.81 (Beast, Asio)" libboost1.81-dev)

find_package(OpenSSL 3 QUIET)
kubegap_require(OPENSSL_FOUND "OpenSSL 3" libssl-dev)

find_package(spdlog QUIET)
kubegap_require(spdlog_FOUND "spdlog" libspdlog-dev)

find_package(yaml-cpp QUIET)
kubegap_require(yaml-cpp_FOUND "yaml-cpp" libyaml-cpp-dev)

find_path(RAPIDJSON_INCLUDE_DIRS rapidjson/document.h)
if(RAPIDJSON_INCLUDE_DIRS)
  set(RAPIDJSON_FOUND TRUE)
endif()
kubegap_require(RAPIDJSON_FOUND "RapidJSON" rapidjson-dev)

# mimalloc: the allocator of a build without a sanitizer (a sanitizer brings its own).
# A review makes some 130 small allocations at the server; mimalloc's are cheaper than
# glibc's: 239k -> 224k instructions per review request; one thread 0.41 -> 0.44 of
# nginx on average (docs/performance.md). KUBEGAP_USE_MIMALLOC is what the build decided.
option(KUBEGAP_MIMALLOC "Link the executable with mimalloc (libmimalloc-dev); ignored under a sanitizer or fuzzing" ON)
set(KUBEGAP_USE_MIMALLOC OFF)
if(KUBEGAP_MIMALLOC AND NOT KUBEGAP_SANITIZE AND NOT KUBEGAP_TSAN AND NOT KUBEGAP_FUZZ)
  find_package(mimalloc CONFIG QUIET)
  kubegap_require(mimalloc_FOUND "mimalloc" libmimalloc-dev)
  set(KUBEGAP_USE_MIMALLOC ON)
endif()

if(KUBEGAP_BUILD_TESTS)
  find_package(GTest QUIET)
  kubegap_require(GTest_FOUND "GoogleTest" "libgtest-dev libgmock-dev")
endif()

# Finds the Debian-packaged dependencies and wraps each in a target with its include paths.
# scripts/install-deps.sh installs every package named here.

# LLVM Support: SourceMgr-based diagnostics, command-line parsing, ADT.
find_package(LLVM 16 REQUIRED CONFIG PATHS /usr/lib/llvm-16/lib/cmake/llvm NO_DEFAULT_PATH)
llvm_map_components_to_libnames(ORCH_LLVM_LIBS support)
separate_arguments(ORCH_LLVM_DEFINITIONS NATIVE_COMMAND "${LLVM_DEFINITIONS}")
add_library(orch_llvm_support INTERFACE)
target_include_directories(orch_llvm_support SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(orch_llvm_support INTERFACE ${ORCH_LLVM_DEFINITIONS})
target_link_libraries(orch_llvm_support INTERFACE ${ORCH_LLVM_LIBS})
set(ORCH_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})
set(ORCH_LIT ${LLVM_BUILD_MAIN_SRC_DIR}/utils/lit/lit.py)
if(NOT EXISTS ${ORCH_LIT})
  set(ORCH_LIT /usr/lib/llvm-16/build/utils/lit/lit.py)
endif()

# ANTLR4: the tool generates the parser at build time; the runtime is linked by the grammar
# library and the one frontend file that drives it.
find_program(ORCH_ANTLR4 antlr4 REQUIRED)
find_package(antlr4-runtime CONFIG REQUIRED)
# Clang 14 cannot compile misc/InterpreterDataReader.h (a defaulted constructor it deletes), and
# antlr4-runtime.h includes it although generated parsers never use it. A copy of the umbrella
# header without it, first on the include path, lets clang (libFuzzer, clangd) build the parser.
file(READ ${ANTLR4_INCLUDE_DIR}/antlr4-runtime.h ORCH_ANTLR4_UMBRELLA)
string(REPLACE "#include \"misc/InterpreterDataReader.h\"" "" ORCH_ANTLR4_UMBRELLA
       "${ORCH_ANTLR4_UMBRELLA}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/antlr4-compat/antlr4-runtime.h
     CONTENT "${ORCH_ANTLR4_UMBRELLA}" @ONLY)
add_library(orch_antlr4_runtime INTERFACE)
target_include_directories(orch_antlr4_runtime SYSTEM INTERFACE
  ${PROJECT_BINARY_DIR}/antlr4-compat ${ANTLR4_INCLUDE_DIR})
target_link_libraries(orch_antlr4_runtime INTERFACE antlr4_shared)

# ZeroMQ (C++ bindings) and MessagePack.
find_package(cppzmq REQUIRED)
find_package(msgpack CONFIG REQUIRED)
find_package(nlohmann_json 3 CONFIG REQUIRED)

# The standard library's real operators: PDF (poppler), OCR (tesseract), video (FFmpeg),
# Unicode normalisation (ICU).
find_package(PkgConfig REQUIRED)
pkg_check_modules(OrchPoppler REQUIRED IMPORTED_TARGET poppler-cpp)
pkg_check_modules(OrchTesseract REQUIRED IMPORTED_TARGET tesseract lept)
pkg_check_modules(OrchFfmpeg REQUIRED IMPORTED_TARGET libavformat libavcodec libswscale libavutil)
pkg_check_modules(OrchArchive REQUIRED IMPORTED_TARGET libarchive)
find_package(ICU REQUIRED COMPONENTS uc i18n)
# llm.* operators: HTTP to model servers.
find_package(CURL REQUIRED)
add_library(orch_msgpack INTERFACE)
target_compile_definitions(orch_msgpack INTERFACE MSGPACK_NO_BOOST)
target_link_libraries(orch_msgpack INTERFACE msgpackc-cxx)

# Tests and benchmarks.
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_program(ORCH_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT ORCH_PYTHON)
  find_program(ORCH_PYTHON python3 REQUIRED)
endif()

# Compiler launcher and warning flags shared by Orch's own targets.

find_program(ORCH_CCACHE ccache)
if(ORCH_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${ORCH_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${ORCH_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${ORCH_CCACHE})
endif()

# Applies the project's warning policy to one of its own targets (never to generated code).
function(orch_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${ORCH_WERROR}>>:-Werror>)
endfunction()

# Declares one of Orch's libraries: sources, public headers under include/, warnings.
function(orch_add_library name)
  add_library(${name} ${ARGN})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  orch_target_warnings(${name})
endfunction()

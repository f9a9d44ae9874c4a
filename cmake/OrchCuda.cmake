# Optional CUDA: with ORCH_CUDA=AUTO the kernels are built when nvcc is found; with OFF never;
# with ON a missing nvcc is a configuration error. Sets ORCH_HAVE_CUDA.

set(ORCH_HAVE_CUDA OFF)
if(NOT ORCH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_90 code for the H200 plus compute_90 PTX that newer parts JIT-compile.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(ORCH_HAVE_CUDA ON)
  elseif(ORCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ORCH_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "Orch: CUDA operators ${ORCH_HAVE_CUDA}")

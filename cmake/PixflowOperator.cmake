# pixflow_add_operator(NAME SOURCES a.cpp ... [CUDA_SOURCES a.cu ...] [LIBRARIES ...])
#
# Builds one plugin: a MODULE library named pixflow_<NAME> that exports only the C entry point
# (hidden visibility), compiled against the SDK headers, whose ABI version it records. The CUDA
# sources are compiled only when CUDA is enabled (PIXFLOW_WITH_CUDA); they then see
# PIXFLOW_WITH_CUDA=1, and so does the rest of the plugin, so run_cuda is declared only then.
# Used in-tree and, through find_package(pixflow), by third-party plugins.
function(pixflow_add_operator name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;CUDA_SOURCES;LIBRARIES" ${ARGN})
  set(target pixflow_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE pixflow::sdk ${ARG_LIBRARIES})
  # `#pragma omp simd` hints are honoured (no OpenMP runtime: threads come from TBB).
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fopenmp-simd>)
  endif()
  if(PIXFLOW_WITH_CUDA AND ARG_CUDA_SOURCES)
    target_sources(${target} PRIVATE ${ARG_CUDA_SOURCES})
    target_compile_definitions(${target} PRIVATE PIXFLOW_WITH_CUDA=1)
    target_link_libraries(${target} PRIVATE CUDA::cudart)
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED PIXFLOW_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PIXFLOW_PLUGIN_OUTPUT_DIR})
  endif()
  set_property(GLOBAL APPEND PROPERTY PIXFLOW_PLUGIN_TARGETS ${target})
  if(COMMAND pixflow_install_plugin)
    pixflow_install_plugin(${target})
  endif()
endfunction()

# pixflow_add_operator(NAME
#     SOURCES <op>.cpp ...            the operator: schema and backends (the thin adapter)
#     [KERNELS kernels/a.cpp ...]     the pure C++ kernels (functions over image views)
#     [CUDA_SOURCES kernels/a.cu ...] the CUDA kernels; compiled when CUDA is enabled
#     [LIBRARIES lib ...]             what the kernels and the operator link (TBB::tbb...)
#     [FLOAT exact|fast]              the floating-point policy of the kernels (below)
#     [TESTS test/<op>_test.cpp ...]  GoogleTest sources: the operator's tests
#     [EXAMPLE <op>.toml]             the example pipeline, run as a test
#     [OUTPUT_DIRECTORY dir])
#
# Builds one plugin, the folder layout that `pixflow new-operator` writes and every built-in
# plugin has:
#
#   <op>/CMakeLists.txt   this call            <op>/kernels/   pure kernels (.hpp, .cpp, .cu)
#   <op>/<op>.cpp         schema + backends    <op>/test/      the operator's tests
#   <op>/<op>.toml        example pipeline
#
#  - pixflow_<NAME>: a MODULE library that exports only the C entry point (hidden visibility),
#    compiled against the SDK headers, whose ABI version it records.
#  - pixflow_<NAME>_kernels: a static library of KERNELS and CUDA_SOURCES, linked into the
#    plugin and into the tests, which can call the kernels without pixflow.
#  - CUDA_SOURCES are compiled only when CUDA is enabled (PIXFLOW_WITH_CUDA); the plugin and its
#    kernels then see PIXFLOW_WITH_CUDA=1, so run_cuda is declared only then.
#  - Compiler policy, the same for every plugin: `#pragma omp simd` is honoured (-fopenmp-simd;
#    no OpenMP runtime: threads come from TBB). FLOAT exact: every float operation is rounded as
#    written, for kernels that must agree bit for bit across backends (-ffp-contract=off, no
#    trapping math so that comparisons and selects vectorise; nvcc --fmad=false). FLOAT fast: the
#    compiler may contract and reassociate (fixed at compile time, so runs stay deterministic)
#    and assume no errno, traps or signed zeros; for kernels whose backends agree to rounding.
#    Without FLOAT, the compiler's defaults.
#  - TESTS: in pixflow's own tree they join the one test binary (tests/CMakeLists.txt); in a
#    third-party project they become the executable <NAME>_test, linked with pixflow::framework,
#    the kernels and GoogleTest, with PIXFLOW_TEST_PLUGIN_DIR naming the plugin's folder, one
#    CTest test per case (a CUDA case without a GPU is listed as skipped). Off when
#    PIXFLOW_BUILD_TESTS is OFF or GoogleTest is not found.
#  - EXAMPLE: a CTest test runs the pipeline with this plugin, from a folder of the build tree
#    (relative output paths land there).
#  - A third-party project calls enable_testing() before this, so that ctest finds the tests.
# Used in-tree and, through find_package(pixflow), by third-party plugins.

# The compiler policy (see above) of one target's C++ and CUDA sources; `float` is exact, fast or "".
function(_pixflow_policy tgt float)
  set(gnu $<OR:$<CXX_COMPILER_ID:GNU>,$<CXX_COMPILER_ID:Clang>,$<CXX_COMPILER_ID:AppleClang>>)
  target_compile_options(${tgt} PRIVATE "$<$<AND:$<COMPILE_LANGUAGE:CXX>,${gnu}>:-fopenmp-simd>")
  if(float STREQUAL "exact")
    target_compile_options(${tgt} PRIVATE
      "$<$<AND:$<COMPILE_LANGUAGE:CXX>,${gnu}>:-ffp-contract=off;-fno-trapping-math>"
      "$<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>")
  elseif(float STREQUAL "fast")
    target_compile_options(${tgt} PRIVATE
      "$<$<AND:$<COMPILE_LANGUAGE:CXX>,${gnu}>:-ffp-contract=fast;-fno-math-errno;-fno-trapping-math;-fassociative-math;-fno-signed-zeros>")
  endif()
  set_target_properties(${tgt} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
endfunction()

function(pixflow_add_operator name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY;FLOAT;EXAMPLE" "SOURCES;KERNELS;CUDA_SOURCES;LIBRARIES;TESTS" ${ARGN})
  set(target pixflow_${name})
  set(kernels ${target}_kernels)
  set(_cuda_on OFF)
  if(PIXFLOW_WITH_CUDA AND ARG_CUDA_SOURCES)
    set(_cuda_on ON)
  endif()
  if(ARG_FLOAT AND NOT ARG_FLOAT MATCHES "^(exact|fast)$")
    message(FATAL_ERROR "pixflow_add_operator(${name}): FLOAT is exact or fast, not '${ARG_FLOAT}'")
  endif()

  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE pixflow::sdk ${ARG_LIBRARIES})
  set(_kernel_sources ${ARG_KERNELS})
  if(_cuda_on)
    list(APPEND _kernel_sources ${ARG_CUDA_SOURCES})
  endif()
  if(_kernel_sources)
    add_library(${kernels} STATIC ${_kernel_sources})
    target_link_libraries(${kernels} PUBLIC pixflow::sdk ${ARG_LIBRARIES})
    set_target_properties(${kernels} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    _pixflow_policy(${kernels} "${ARG_FLOAT}")
    _pixflow_policy(${target} "")
    target_link_libraries(${target} PRIVATE ${kernels})
    set_property(GLOBAL APPEND PROPERTY PIXFLOW_KERNEL_TARGETS ${kernels})
  else()
    _pixflow_policy(${target} "${ARG_FLOAT}")
  endif()
  if(_cuda_on)
    foreach(tgt ${target} ${kernels})
      target_compile_definitions(${tgt} PRIVATE PIXFLOW_WITH_CUDA=1)
      set_target_properties(${tgt} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
    endforeach()
    target_link_libraries(${kernels} PUBLIC CUDA::cudart)
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "")
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED PIXFLOW_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PIXFLOW_PLUGIN_OUTPUT_DIR})
  endif()
  set_property(GLOBAL APPEND PROPERTY PIXFLOW_PLUGIN_TARGETS ${target})

  # Tests and the example pipeline.
  set(_tests)
  foreach(src ${ARG_TESTS})
    get_filename_component(src ${src} ABSOLUTE)
    list(APPEND _tests ${src})
  endforeach()
  set(_example)
  if(ARG_EXAMPLE)
    get_filename_component(_example ${ARG_EXAMPLE} ABSOLUTE)
  endif()
  if(COMMAND pixflow_install_plugin)
    # pixflow's own tree: tests/CMakeLists.txt adds these to its test binary and CTest.
    pixflow_install_plugin(${target})
    set_property(GLOBAL APPEND PROPERTY PIXFLOW_OPERATOR_TESTS ${_tests})
    if(_example)
      set_property(GLOBAL APPEND PROPERTY PIXFLOW_OPERATOR_EXAMPLES "${name}=${_example}")
    endif()
    return()
  endif()
  if(DEFINED PIXFLOW_BUILD_TESTS AND NOT PIXFLOW_BUILD_TESTS)
    return()
  endif()
  get_target_property(_plugin_dir ${target} LIBRARY_OUTPUT_DIRECTORY)
  if(NOT _plugin_dir)
    set(_plugin_dir ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(_tests)
    find_package(GTest QUIET)
    if(NOT GTest_FOUND)
      message(STATUS "pixflow_add_operator(${name}): GoogleTest not found; its tests are not built")
    else()
      include(GoogleTest)
      add_executable(${name}_test ${_tests})
      target_link_libraries(${name}_test PRIVATE pixflow::framework GTest::gtest_main)
      if(TARGET ${kernels})
        target_link_libraries(${name}_test PRIVATE ${kernels})
      endif()
      target_compile_definitions(${name}_test PRIVATE PIXFLOW_TEST_PLUGIN_DIR="${_plugin_dir}")
      add_dependencies(${name}_test ${target})
      gtest_discover_tests(${name}_test PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
    endif()
  endif()
  if(_example AND DEFINED PIXFLOW_EXECUTABLE)
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/example)
    add_test(NAME ${name}.ExamplePipelineRuns
             COMMAND ${PIXFLOW_EXECUTABLE} --plugin-path ${_plugin_dir} run ${_example}
             WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/example)
  endif()
endfunction()

# Which Python the pixflow module is built for, and whether what it needs is there: sets
# PIXFLOW_PYTHON_FOUND (included by the top-level CMakeLists.txt and by python/CMakeLists.txt).
#  - the interpreter: $Python3_EXECUTABLE when given; else the first of `python3` on PATH and
#    /usr/bin/python3 that imports numpy (a pyenv or venv interpreter without numpy is passed
#    over for Debian's, which scripts/setup.sh equips with numpy and pytest);
#  - its development files (Python.h): Debian's python3-dev;
#  - pybind11's CMake package: Debian's pybind11-dev, or -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir).
if(NOT Python3_EXECUTABLE)
  find_program(_pixflow_path_python python3 NO_CACHE)
  foreach(_candidate IN ITEMS "${_pixflow_path_python}" /usr/bin/python3)
    if(_candidate AND EXISTS "${_candidate}")
      execute_process(COMMAND "${_candidate}" -c "import numpy" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(Python3_EXECUTABLE "${_candidate}" CACHE FILEPATH "The Python the pixflow module is built for")
        break()
      endif()
    endif()
  endforeach()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  find_package(pybind11 CONFIG QUIET)
endif()
if(Python3_FOUND AND pybind11_FOUND)
  set(PIXFLOW_PYTHON_FOUND ON)
else()
  set(PIXFLOW_PYTHON_FOUND OFF)
  set(PIXFLOW_PYTHON_MISSING "")
  if(NOT Python3_FOUND)
    string(APPEND PIXFLOW_PYTHON_MISSING " Python 3 with its development files (python3-dev) and numpy")
  endif()
  if(NOT pybind11_FOUND)
    string(APPEND PIXFLOW_PYTHON_MISSING " pybind11 (pybind11-dev)")
  endif()
endif()

// mpiexec.hpp: how the MPI tests start mpiexec (mpi_batch_test.cpp, mpi_image_test.cpp).
#pragma once

#include "support/paths.hpp"

#include <filesystem>
#include <string>

namespace pixflow::testing {

/// `cd <source dir> && <environment> mpiexec --oversubscribe `, to which a test appends its
/// ranks and command: as root too (CI runs as root), without Open MPI's single-copy
/// shared-memory path (containers often forbid the ptrace it needs), and with 3 s, not 1,
/// between mpirun's SIGTERM to the other ranks and its SIGKILL (odls_base_sigkill_timeout: on a
/// loaded 2-core CI machine a rank's cleanup thread, which removes its temporaries, was once
/// not scheduled within 1 s). mpirun sleeps that long whether or not the ranks are gone, so a
/// fault test's run takes about twice it: 10 s made each of the 17 fault tests 18-21 s, 3 s
/// makes them 4.5-6 s (2026-11-30; all 23 fault and batch tests passed three times with ctest
/// -j2 beside 3 and 6 busy loops on the 2 cores). Each mpiexec keeps its session directory
/// under `session_base` (the test's own temporary folder, orte_tmpdir_base), not the shared
/// /tmp/ompi.<host>.<uid>: with ctest -j2 two mpiexecs share that folder, and the one that ends
/// first removes it when it is empty while the other is between creating it and creating its
/// pid.N below it ("A call to mkdir was unable to create the desired directory ... No such file
/// or directory", which failed a clean-room CI run; Open MPI issue 8510). $PIXFLOW_MPIEXEC when
/// set: a packed Open MPI on another machine (scripts/gpu-mpi-check.sh).
inline std::string mpiexec_prefix(const std::filesystem::path& session_base) {
    return "cd " + q(source_dir().string()) + " && OMPI_MCA_orte_tmpdir_base=" + q(session_base.string()) +
           " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
           " OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_odls_base_sigkill_timeout=3"
           " PIXFLOW_PLUGIN_PATH= \"${PIXFLOW_MPIEXEC:-" PIXFLOW_MPIEXEC "}\" --oversubscribe ";
}

} // namespace pixflow::testing

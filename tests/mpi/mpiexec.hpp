// mpiexec.hpp: how the MPI tests start mpiexec (mpi_batch_test.cpp, mpi_image_test.cpp).
#pragma once

#include "support/paths.hpp"

#include <filesystem>
#include <string>

namespace pixflow::testing {

/// `cd <source dir> && <environment> mpiexec --oversubscribe `, to which a test appends its
/// ranks and command: as root too (CI runs as root), without Open MPI's single-copy
/// shared-memory path (containers often forbid the ptrace it needs), and with 10 s, not 1,
/// between mpirun's SIGTERM to the other ranks and its SIGKILL (odls_base_sigkill_timeout: on a
/// loaded 2-core CI machine a rank's cleanup thread, which removes its temporaries, was once not
/// scheduled within 1 s). Each mpiexec keeps its session directory under `session_base` (the
/// test's own temporary folder, orte_tmpdir_base), not the shared /tmp/ompi.<host>.<uid>: with
/// ctest -j2 two mpiexecs share that folder, and the one that ends first removes it when it is
/// empty while the other is between creating it and creating its pid.N below it ("A call to
/// mkdir was unable to create the desired directory ... No such file or directory", which
/// failed a clean-room CI run; Open MPI issue 8510). $PIXFLOW_MPIEXEC when set: a packed Open
/// MPI on another machine (scripts/gpu-mpi-check.sh).
inline std::string mpiexec_prefix(const std::filesystem::path& session_base) {
    return "cd " + q(source_dir().string()) + " && OMPI_MCA_orte_tmpdir_base=" + q(session_base.string()) +
           " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
           " OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_odls_base_sigkill_timeout=10"
           " PIXFLOW_PLUGIN_PATH= \"${PIXFLOW_MPIEXEC:-" PIXFLOW_MPIEXEC "}\" --oversubscribe ";
}

} // namespace pixflow::testing

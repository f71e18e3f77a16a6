// cli/: the `pixflow` subcommands, each a function of its parsed options that returns the exit
// code: 0 success, 1 an invalid pipeline or command line (a UserError thrown before anything
// ran; main prints it), 2 a failure while running (nothing written).
#pragma once

#include "batch/batch.hpp"
#include "compile/compile.hpp"
#include "loader/registry.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pixflow::cli {

/// What every subcommand that takes a pipeline accepts.
struct PipelineArgs {
    std::string file;
    std::vector<std::string> sets;                 ///< --set node.key=value
    std::string backend;                           ///< --backend
    bool no_fuse = false;                          ///< --no-fuse
    std::int64_t max_pixels = 0;                   ///< --max-pixels: 0 leaves each load node's own limit
    int strip_rows = 0;                            ///< --strip-rows (run, validate, graph)
    std::string memory_limit, device_memory_limit; ///< --memory-limit, --device-memory-limit
    bool strips = true;                            ///< false: bench (every node on whole images)
};

/// The compile options the pipeline arguments ask for (--backend, --no-fuse, --max-pixels).
host::CompileOptions compile_options(const PipelineArgs& a);

struct RunArgs {
    PipelineArgs pipeline;
    bool profile = false;
    std::string report_path;
    std::string mpi_halo = "exchange"; ///< --mpi-halo: one image over MPI ranks (docs/mpi.md)
    host::BatchOptions batch;          ///< --input ...: one run per image (batch/); --trace for single runs too
};

struct BenchArgs {
    PipelineArgs pipeline;
    int repeat = 20;
    std::string report_path;
};

// info.cpp: what the plugins provide
int ops_command(const host::Registry& reg);
int describe_command(const host::Registry& reg, const std::vector<std::string>& ops, bool markdown);
int plugins_command(const host::Registry& reg, const std::vector<std::string>& plugin_paths);

// pipeline_commands.cpp: what a pipeline does
int validate_command(const host::Registry& reg, const PipelineArgs& a);
int graph_command(const host::Registry& reg, const PipelineArgs& a, const std::string& dot_out);
int run_command(const host::Registry& reg, const RunArgs& a);
int bench_command(const host::Registry& reg, const BenchArgs& a);

/// Writes a small text file atomically (a FileTransaction: temporary + rename, an existing file
/// kept until the rename succeeded); throws InternalError on failure.
void write_file(const std::string& path, const std::string& text);

} // namespace pixflow::cli

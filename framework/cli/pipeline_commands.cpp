// cli/ validate, graph, run, bench: a pipeline through the one compile step (compile/), then
// checked, drawn, run or timed. A failure before anything runs is a UserError for main (exit 1);
// one while running is printed here and exits 2. Side outputs (--report, --trace, graph -o) are
// refused up front when they would overwrite a file of the pipeline, and written atomically.
#include "cli/commands.hpp"

#include "batch/trace.hpp"
#include "compile/compile.hpp"
#include "device/device.hpp"
#include "executor/executor.hpp"
#include "executor/output_files.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace pixflow::cli {

using namespace pixflow::host;

namespace {

Compiled compile_args(const Registry& reg, const PipelineArgs& a) {
    return compile_file(a.file, a.sets, reg, compile_options(a));
}

void print_notes(const Plan& p) {
    for (const auto& w : p.warnings) std::cerr << "warning: " << w.str() << "\n";
    for (const auto& n : p.notes) std::cerr << "note: " << n << "\n";
}

/// A failure while running exits 2, whoever's it is.
int run_failed(const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
}

} // namespace

CompileOptions compile_options(const PipelineArgs& a) {
    CompileOptions co;
    co.backend = a.backend;
    co.fuse = !a.no_fuse;
    co.strips = a.strips;
    co.strip_rows = a.strip_rows;
    if (!a.memory_limit.empty()) co.memory_limit = parse_byte_size(a.memory_limit, "--memory-limit");
    if (!a.device_memory_limit.empty())
        co.device_memory_limit = parse_byte_size(a.device_memory_limit, "--device-memory-limit");
    if (a.max_pixels > 0) {
        RawValue v;
        v.kind = RawValue::Kind::integer;
        v.i = a.max_pixels;
        v.loc.file = "--max-pixels " + std::to_string(a.max_pixels);
        co.param_defaults["max_pixels"] = v;
    }
    return co;
}

void write_file(const std::string& path, const std::string& text) {
    FileTransaction tx;
    tx.stage_text(path, text);
    tx.commit();
}

int validate_command(const Registry& reg, const PipelineArgs& a) {
    Compiled c = compile_args(reg, a);
    print_notes(c.plan);
    int cuda = 0;
    for (auto b : c.plan.backend) cuda += b == Backend::cuda;
    std::printf("%s: ok: %zu nodes (%d on cuda), %d upload(s), %d download(s)\n", a.file.c_str(), c.graph.nodes.size(),
                cuda, c.plan.uploads(), c.plan.downloads());
    // the planner's estimate: images, strip buffers and the scratch operators declare
    const StripPlan& sp = c.plan.strips;
    if (sp.active())
        std::printf("%s: %zu chain(s) in strips; estimated peak %s host, %s device (whole images: %s, %s)\n",
                    a.file.c_str(), sp.chains.size(), bytes_text(double(sp.host_peak)).c_str(),
                    bytes_text(double(sp.device_peak)).c_str(), bytes_text(double(sp.whole_host_peak)).c_str(),
                    bytes_text(double(sp.whole_device_peak)).c_str());
    else if (sp.host_peak || sp.device_peak) // 0 with --no-strips: no estimate was made
        std::printf("%s: estimated peak %s host, %s device\n", a.file.c_str(), bytes_text(double(sp.host_peak)).c_str(),
                    bytes_text(double(sp.device_peak)).c_str());
    return 0;
}

int graph_command(const Registry& reg, const PipelineArgs& a, const std::string& dot_out) {
    Compiled c = compile_args(reg, a);
    if (!dot_out.empty()) check_side_outputs({{dot_out, "-o"}}, pipeline_files(c.graph));
    std::string dot = plan_to_dot(c.graph, c.plan);
    if (dot_out.empty())
        std::cout << dot;
    else
        write_file(dot_out, dot);
    return 0;
}

int run_command(const Registry& reg, const RunArgs& a) {
    if (!a.batch.inputs.empty()) {
        // A batch launches each kernel of its pipeline once per image: with CUDA's lazy loading
        // the first images pay every module's load inside their spans, one after the other.
        // Loaded with the context instead (the batch's setup, which did not grow measurably),
        // 64 images of batch-blur-pool ran at 440-540 img/s after setup instead of 390-430, 256
        // at 1140-1200 instead of 1020-1060 (H100, docs/performance.md). Before any CUDA call
        // (the driver reads it once); the user's own setting wins.
        if (a.pipeline.backend != "cpu") ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
        BatchOptions batch = a.batch;
        batch.backend_override = a.pipeline.backend;
        batch.no_fuse = a.pipeline.no_fuse;
        CompileOptions co = compile_options(a.pipeline);
        batch.param_defaults = co.param_defaults;
        batch.memory_limit = co.memory_limit; // the budgets of all the images in flight together
        batch.device_memory_limit = co.device_memory_limit;
        batch.strip_rows = co.strip_rows;
        return run_batch_command(reg, a.pipeline.file, a.pipeline.sets, batch, a.report_path);
    }
    CompileOptions co = compile_options(a.pipeline);
    if (!a.batch.devices.empty()) { // one image over several GPUs: its streamed chains' strips
        std::string why;
        if (cuda_usable(&why)) {
            co.strip_devices = batch::parse_devices(a.batch.devices, cuda_device_count());
            co.device = co.strip_devices.front();
            if (co.strip_devices.size() == 1) co.strip_devices.clear();
        } else
            std::cerr << "note: --devices " << a.batch.devices << " ignored: " << why << "\n";
    }
    Compiled c = compile_file(a.pipeline.file, a.pipeline.sets, reg, co);
    const std::string& trace_path = a.batch.trace_path;
    std::vector<NamedPath> side;
    if (!trace_path.empty()) side.push_back({trace_path, "--trace"});
    if (!a.report_path.empty()) side.push_back({a.report_path, "--report"});
    check_side_outputs(side, pipeline_files(c.graph));
    print_notes(c.plan);
    // The outputs, the trace and the report are one transaction: all of them are written, or none.
    FileTransaction files;
    ExitGuard guard("an operator called exit() while the pipeline ran; nothing was written", 2);
    RunReport r;
    try {
        Executor ex(c.graph, c.plan);
        TraceWriter trace;
        RunOptions opt;
        opt.files = &files;
        if (!trace_path.empty())
            opt.on_span = [&](const Span& s) { trace.add(s, span_category(c.graph, s), a.pipeline.file); };
        r = ex.run(opt);
        if (!trace_path.empty()) files.stage_text(trace_path, trace.text());
        if (!a.report_path.empty()) files.stage_text(a.report_path, r.to_json() + "\n");
        files.commit();
    } catch (const std::exception& e) { return run_failed(e); }
    for (const auto& n : r.nodes)
        for (const auto& [k, v] : n.metrics) std::printf("%s: %s = %g\n", n.id.c_str(), k.c_str(), v);
    for (const auto& f : r.outputs) std::printf("wrote %s\n", f.c_str());
    if (a.profile) std::cout << r.table();
    return 0;
}

int bench_command(const Registry& reg, const BenchArgs& a) {
    Compiled c = compile_args(reg, a.pipeline);
    if (!a.report_path.empty()) check_side_outputs({{a.report_path, "--report"}}, pipeline_files(c.graph));
    print_notes(c.plan);
    bool any_cuda = c.plan.n_streams > 0;
    std::vector<BenchRow> rows;
    double dev_bw = 0, host_bw = 0;
    try {
        Executor ex(c.graph, c.plan);
        RunOptions ro;
        ro.keep_buffers = true;
        ro.skip_sinks = true;
        ex.run(ro);
        dev_bw = any_cuda ? measure_device_copy_bandwidth(c.plan.device) : 0;
        host_bw = measure_host_copy_bandwidth();
        rows = ex.bench(a.repeat, dev_bw, host_bw);
    } catch (const std::exception& e) { return run_failed(e); }
    std::printf("device: %s\n", any_cuda ? cuda_device_name(c.plan.device).c_str() : "none (CPU only)");
    if (any_cuda) std::printf("device copy bandwidth (read+write): %.1f GB/s\n", dev_bw / 1e9);
    std::printf("host copy bandwidth (read+write): %.1f GB/s\n", host_bw / 1e9);
    std::printf("%-14s %-14s %-7s %11s %10s %11s %9s\n", "node", "op", "backend", "median ms", "GB/s", "floor ms",
                "x floor");
    nlohmann::json j;
    j["nodes"] = nlohmann::json::array();
    j["pipeline"] = c.graph.name;
    j["repeat"] = a.repeat;
    j["device"] = any_cuda ? cuda_device_name(c.plan.device) : "none";
    j["device_copy_gbps"] = dev_bw / 1e9;
    j["host_copy_gbps"] = host_bw / 1e9;
    double total = 0;
    for (const auto& r : rows) {
        std::printf("%-14s %-14s %-7s %11.4f %10.1f %11.4f %9.2f\n", r.id.c_str(), r.op.c_str(), r.backend.c_str(),
                    r.median_ms, r.gbps, r.floor_ms, r.x_floor);
        nlohmann::json row{{"id", r.id},       {"op", r.op},     {"backend", r.backend},   {"median_ms", r.median_ms},
                           {"bytes", r.bytes}, {"gbps", r.gbps}, {"floor_ms", r.floor_ms}, {"x_floor", r.x_floor}};
        const Node& n = c.graph.nodes[c.graph.find(r.id)];
        if (!n.replaced.empty()) row["replaced"] = n.replaced;
        j["nodes"].push_back(row);
        total += r.median_ms;
    }
    std::printf("%-14s %-14s %-7s %11.4f\n", "total", "", "", total);
    j["total_ms"] = total;
    if (!a.report_path.empty()) write_file(a.report_path, json_text(j, 2) + "\n");
    return 0;
}

} // namespace pixflow::cli

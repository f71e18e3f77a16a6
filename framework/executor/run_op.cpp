#include "executor/run_op.hpp"

#include "compile/compile.hpp"

namespace pixflow::host {

std::vector<HostImage> run_single_op(const Registry& reg, const std::string& op, const std::string& backend,
                                     const std::vector<pf_image>& inputs,
                                     const std::map<std::string, std::string>& params, RunReport* report) {
    const OpInfo* info = reg.find(op);
    if (!info) throw UserError(Diagnostic{SourceLoc{"run_single_op", 0, 0}, "", "unknown op '" + op + "'", {}});
    PipelineSpec spec;
    spec.file = "run_single_op";
    spec.name = op;
    spec.backend = backend;
    std::vector<std::string> ports;
    for (int k = 0; k < info->desc->n_inputs; ++k) ports.emplace_back(info->desc->inputs[k].name);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        NodeSpec in;
        in.id = "in" + std::to_string(k);
        in.external = inputs[k];
        in.external->data = nullptr;
        spec.nodes.push_back(in);
    }
    NodeSpec n;
    n.id = "op";
    n.op = op;
    n.loc = SourceLoc{"run_single_op", 0, 0};
    n.inputs_as_table = true;
    for (std::size_t k = 0; k < inputs.size(); ++k)
        n.inputs.push_back(
            InputSpec{k < ports.size() ? ports[k] : "in" + std::to_string(k), "in" + std::to_string(k), "", {}});
    for (const auto& [key, value] : params)
        n.params.emplace_back(key, parse_value(value, SourceLoc{"param " + key, 0, 0}));
    spec.nodes.push_back(n);

    CompileOptions co;
    co.fuse = false; // one operator, as asked for
    Compiled c = compile(spec, reg, co);
    Executor ex(c.graph, c.plan);
    RunOptions ro;
    ro.keep_buffers = true;
    for (std::size_t k = 0; k < inputs.size(); ++k) ro.externals[NodeId(k)] = inputs[k];
    RunReport r = ex.run(ro);
    if (report) *report = r;
    NodeId v = c.graph.find("op");
    std::vector<HostImage> out;
    for (std::size_t k = 0; k < c.graph.nodes[v].outputs.size(); ++k) out.push_back(ex.fetch(v, int(k)));
    return out;
}

} // namespace pixflow::host

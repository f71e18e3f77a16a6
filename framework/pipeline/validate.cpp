// PipelineSpec -> Graph, in the phases of docs/architecture.md (validate_phases.hpp lists where
// each lives): 1. ops and parameters, 2. inputs, 3. cycles and order, 4. shapes, 5. file paths.
// A phase runs only when the ones before it passed; each reports all of its errors at once.
#include "pipeline/validate_phases.hpp"

namespace pixflow::host {

Graph build_graph(const PipelineSpec& spec, const Registry& reg) {
    Graph g;
    g.file = spec.file;
    g.name = spec.name;
    validate::Errors errs;
    if (!validate::valid_backend(spec.backend))
        validate::add(errs, spec.backend_loc, "", "backend = \"" + spec.backend + "\" is not one of auto, cpu, cuda");
    std::vector<std::string> ids;
    for (const NodeSpec& ns : spec.nodes) ids.push_back(ns.id);

    for (const NodeSpec& ns : spec.nodes) validate::resolve_node(spec, ns, reg, g.nodes.emplace_back(), errs);
    g.index(); // ids, for wiring
    for (NodeId v : g.nodes.ids()) validate::wire_inputs(spec.nodes[v.index()], v, g, ids, errs);
    if (!errs.empty()) throw UserError(errs);
    g.index(); // and now consumers
    validate::order_nodes(g);
    validate::infer_shapes(g, errs);
    validate::check_paths(g, errs);
    if (!errs.empty()) throw UserError(errs);
    return g;
}

} // namespace pixflow::host

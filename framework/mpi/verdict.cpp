// mpi/ the checks of a batch over ranks, agreed on before any image runs (verdict.hpp).
#include "mpi/verdict.hpp"

#include "batch/protocol.hpp"
#include "mpi/session.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace pixflow::mpi {
namespace {

using host::batch::MessageIn;
using host::batch::MessageOut;
using host::batch::MsgType;

void fnv(std::uint64_t& h, const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull; // a separator no path holds
}

std::string encode(const Verdict& v) {
    MessageOut m(MsgType::done);
    m.i64(v.status).u64(v.inputs).u64(v.inputs_hash).i64(v.rank).str(v.host).u64(v.lines.size());
    for (const auto& l : v.lines) m.str(l);
    return m.frame().substr(4);
}

Verdict decode(const std::string& body) {
    MessageIn m(body);
    Verdict v;
    v.status = int(m.i64());
    v.inputs = m.u64();
    v.inputs_hash = m.u64();
    v.rank = int(m.i64());
    v.host = m.str();
    std::uint64_t n = m.u64();
    for (std::uint64_t k = 0; k < n; ++k) v.lines.push_back(m.str());
    return v;
}

std::string who(const Verdict& v) { return "rank " + std::to_string(v.rank) + " on " + v.host; }

} // namespace

std::uint64_t hash_inputs(const std::vector<host::BatchInput>& inputs,
                          const std::vector<std::vector<std::string>>& out_paths) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        fnv(h, inputs[i].path.string());
        fnv(h, inputs[i].sub.string());
        if (i < out_paths.size())
            for (const auto& o : out_paths[i]) fnv(h, o);
    }
    return h;
}

int judge(const std::vector<Verdict>& all, std::vector<std::string>& print) {
    if (all.empty()) return 0;
    std::vector<Verdict> v = all;
    const Verdict& root = v[0];
    int code = 0;
    for (auto& x : v) code = std::max(code, x.status);
    // Ranks that passed but see other inputs than rank 0: their folders are not the same folder.
    if (root.status == 0)
        for (std::size_t k = 1; k < v.size(); ++k) {
            Verdict& x = v[k];
            if (x.status != 0 || (x.inputs == root.inputs && x.inputs_hash == root.inputs_hash)) continue;
            std::string what =
                x.inputs == root.inputs
                    ? "sees other inputs or output names than rank 0 (as many: " + std::to_string(x.inputs) + ")"
                    : "sees " + std::to_string(x.inputs) + " input(s) where rank 0 sees " + std::to_string(root.inputs);
            x.status = 1;
            x.lines = {"error: " + what +
                       "; every rank must see the same files: put the inputs, the pipeline and "
                       "--output in a folder that every machine shares, under the same path (docs/mpi.md)"};
            code = std::max(code, 1);
        }
    // Rank 0's own lines as a single process prints them; then each other reason once, with the
    // ranks that gave it.
    print = root.lines;
    std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> groups; // lines -> who
    for (std::size_t k = 1; k < v.size(); ++k) {
        if (v[k].status == 0 || v[k].lines == root.lines) continue;
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v[k].lines; });
        if (it == groups.end()) it = groups.insert(groups.end(), {v[k].lines, {}});
        it->second.push_back(who(v[k]));
    }
    for (const auto& [lines, ranks] : groups) {
        std::string names;
        for (const auto& r : ranks) names += (names.empty() ? "" : ", ") + r;
        for (const auto& l : lines) {
            const std::string prefix = "error: ";
            bool is_error = l.compare(0, prefix.size(), prefix) == 0;
            print.push_back("error: " + names + ": " + (is_error ? l.substr(prefix.size()) : l));
        }
    }
    return code;
}

int agree(MPI_Comm comm, const Session& s, Verdict mine) {
    mine.rank = s.rank();
    mine.host = s.host();
    std::string body = encode(mine);
    int n = int(body.size());
    std::vector<int> sizes(s.rank() == 0 ? std::size_t(s.size()) : 0), offsets;
    MPI_Request req;
    MPI_Igather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm, &req);
    wait_gently(req);
    std::string all;
    if (s.rank() == 0) {
        int at = 0;
        for (int k : sizes) {
            offsets.push_back(at);
            at += k;
        }
        all.assign(std::size_t(at), '\0');
    }
    MPI_Igatherv(body.data(), n, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0, comm, &req);
    wait_gently(req);
    int code = 0;
    if (s.rank() == 0) {
        std::vector<Verdict> v;
        for (int k = 0; k < s.size(); ++k)
            v.push_back(decode(all.substr(std::size_t(offsets[std::size_t(k)]), std::size_t(sizes[std::size_t(k)]))));
        std::vector<std::string> lines;
        code = judge(v, lines);
        for (const auto& l : lines) std::fprintf(stderr, "%s\n", l.c_str());
        std::fflush(stderr);
    }
    MPI_Ibcast(&code, 1, MPI_INT, 0, comm, &req);
    wait_gently(req);
    return code;
}

} // namespace pixflow::mpi

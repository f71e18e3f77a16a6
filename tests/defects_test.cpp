// The framework-side defects of issue 15, item 6, each with the test that would have caught it:
// non-regular input and pipeline files, a directory as the pipeline, --set with a newline or an
// empty port, unescaped ids in `pixflow graph`, quadratic validation, --backend cuda on a build
// without CUDA, nodes that a fusion pairs disagreeing, and outputs that nothing reads.
#include "compile/compile.hpp"
#include "loader/registry.hpp"
#include "pipeline/pipeline.hpp"
#include "planner/plan.hpp"
#include "support/op_harness.hpp"
#include "support/paths.hpp"

#include <pixflow/pixflow.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace pixflow::host;
using pixflow::testing::run_pixflow;
using pixflow::testing::TempDir;
using pixflow::testing::write_text;
namespace fs = std::filesystem;

namespace {

const Registry& reg() {
    static Registry r;
    static bool loaded = (r.load_all({pixflow::testing::plugin_dir(), pixflow::testing::test_plugin("planner_ops"),
                                      pixflow::testing::test_plugin("fusion_ops")}),
                          true);
    (void)loaded;
    return r;
}

/// The message of the UserError that `fn` throws, every diagnostic on its own line; "" when it
/// throws none.
std::string user_error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const pixflow::UserError& e) { return e.what(); }
    return "";
}

/// Runs `fn` in a child process and returns what it returned, or "TIMEOUT" when it did not finish
/// within `seconds` (the child is killed): a test of something that used to block forever must
/// fail, not hang the suite.
std::string in_child(int seconds, const std::function<std::string()>& fn) {
    int fd[2];
    if (pipe(fd) != 0) return "pipe failed";
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        std::string s = fn();
        ssize_t w = write(fd[1], s.data(), s.size());
        (void)w;
        _exit(0);
    }
    close(fd[1]);
    for (int k = 0; k < seconds * 20; ++k) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            std::string s;
            char buf[4096];
            for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) s.append(buf, std::size_t(n));
            close(fd[0]);
            return s;
        }
        usleep(50000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(fd[0]);
    return "TIMEOUT";
}

std::string load_save(const std::string& in, const std::string& out) {
    return "[nodes.src]\nop = \"load\"\npath = \"" + in + "\"\n[nodes.out]\nop = \"save\"\ninput = \"src\"\npath = \"" +
           out + "\"\n";
}

bool contains(const std::vector<std::string>& v, const std::string& part) {
    for (const auto& s : v)
        if (s.find(part) != std::string::npos) return true;
    return false;
}

} // namespace

// --- 1. Only regular files are read -------------------------------------------------------------

TEST(NonRegularFiles, AFifoAsAnInputIsRefusedWithoutBlocking) {
    TempDir t;
    ASSERT_EQ(mkfifo((t / "in.pgm").c_str(), 0600), 0);
    reg(); // loaded before the fork
    std::string text = load_save(t / "in.pgm", t / "out.pgm");
    auto validate = [&] { build_graph(parse_pipeline_text(text, "p.toml"), reg()); };
    std::string err = in_child(10, [&] { return user_error_of(validate); });
    EXPECT_EQ(err, "p.toml:3:8: node 'src': path = \"" + (t / "in.pgm") +
                       "\" is a FIFO (named pipe); expected a regular file (or a symbolic link to one)");
}

TEST(NonRegularFiles, ASymlinkToDevZeroAsAnInputIsRefusedWithoutReadingIt) {
    TempDir t;
#ifdef PIXFLOW_TEST_WITH_OIIO
    const std::string name = "zero.png"; // OpenImageIO reads /dev/zero for ever
#else
    const std::string name = "zero.pgm";
#endif
    fs::create_symlink("/dev/zero", t.path / name);
    reg();
    std::string text = load_save(t / name, t / "out.pgm");
    auto validate = [&] { build_graph(parse_pipeline_text(text, "p.toml"), reg()); };
    std::string err = in_child(10, [&] { return user_error_of(validate); });
    EXPECT_EQ(err, "p.toml:3:8: node 'src': path = \"" + (t / name) +
                       "\" is a symbolic link to /dev/zero, a character device; expected a regular file (or a symbolic "
                       "link to one)");
}

TEST(NonRegularFiles, AFifoAsThePipelineFileIsRefusedWithoutBlocking) {
    TempDir t;
    ASSERT_EQ(mkfifo((t / "p.toml").c_str(), 0600), 0);
    std::string path = t / "p.toml";
    std::string err = in_child(10, [&] { return user_error_of([&] { parse_pipeline_file(path); }); });
    EXPECT_EQ(err, path + ": the pipeline file is a FIFO (named pipe); expected a regular TOML file");
    auto r = run_pixflow("validate '" + path + "'"); // would block without the check
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "error: " + path + ": the pipeline file is a FIFO (named pipe); expected a regular TOML file\n");
}

TEST(NonRegularFiles, ARegularFileBehindASymlinkIsStillRead) {
    TempDir t;
    write_text(t / "in.pgm", "P5\n2 2\n255\nabcd");
    fs::create_symlink(t.path / "in.pgm", t.path / "link.pgm");
    Graph g = build_graph(parse_pipeline_text(load_save(t / "link.pgm", t / "out.pgm"), "p.toml"), reg());
    EXPECT_EQ(g.nodes[g.find("src")].outputs[0].width, 2);
}

// --- 2. A directory as the pipeline file --------------------------------------------------------

TEST(NonRegularFiles, ADirectoryAsThePipelineFileSaysItIsADirectory) {
    TempDir t;
    fs::create_directories(t.path / "p.toml");
    EXPECT_EQ(user_error_of([&] { parse_pipeline_file(t.path / "p.toml"); }),
              (t / "p.toml") + ": the pipeline file is a directory; expected a regular TOML file");
    auto r = run_pixflow("validate '" + (t / "p.toml") + "'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.find("has no nodes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the pipeline file is a directory"), std::string::npos) << r.err;
    pixflow::Engine e({pixflow::testing::plugin_dir()});
    EXPECT_NE(user_error_of([&] { e.load_file(t.path / "p.toml"); }).find("the pipeline file is a directory"),
              std::string::npos);
}

// --- 3. --set takes one line and no empty key part ----------------------------------------------

TEST(SetOption, ANewlineIsRefusedInsteadOfDroppingWhatFollows) {
    std::string err = user_error_of([] { parse_override("blur.sigma=1\nfoo=1"); });
    EXPECT_EQ(err,
              "--set blur.sigma=1\\nfoo=1: a control character (\\n) at byte 13; --set takes one line, node.key=value, "
              "with no newline, tab or other control character");
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line";
    EXPECT_NE(user_error_of([] { parse_override("blur.border=ze\tro"); }).find("a control character (\\t) at byte 15"),
              std::string::npos);
    EXPECT_NE(user_error_of([] { parse_override(std::string("blur.border=zero\x01", 17)); }).find("(\\x01)"),
              std::string::npos);
    // Through the parser too, with the pipeline's other phase-1 errors.
    const char* text = "[nodes.src]\nop = \"synth\"\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n";
    EXPECT_NE(user_error_of([&] {
                  parse_pipeline_text(text, "p.toml", {"blur.sigma=2\nblur.border=zero"});
              }).find("--set blur.sigma=2\\nblur.border=zero: a control character"),
              std::string::npos);
    auto r = run_pixflow("validate pipelines/blur.toml --set \"$(printf 'blur.sigma=2\\nfoo=1')\"");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("error: --set blur.sigma=2\\nfoo=1: a control character (\\n) at byte 13"), std::string::npos)
        << r.err;
}

TEST(SetOption, AnEmptyPortOrKeyPartIsRefused) {
    EXPECT_EQ(user_error_of([] { parse_override("blur.inputs.=src"); }),
              "--set blur.inputs.=src: the input port is empty; expected --set node.inputs.<port>=node[.port]");
    for (const char* bad : {"blur..sigma=1", "blur.sigma.=1", "blur.inputs..in=src"})
        EXPECT_NE(user_error_of([&] { parse_override(bad); }).find("has an empty part"), std::string::npos) << bad;
    // An Override built in code (the embedding API's set_value) meets the same rule.
    const char* text = "[nodes.src]\nop = \"synth\"\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n";
    Override o{"blur", "inputs.", parse_value("src", SourceLoc{"set(\"blur.inputs.\")", 0, 0})};
    EXPECT_EQ(user_error_of([&] { parse_pipeline_text(text, "p.toml", {}, {o}); }),
              "set(\"blur.inputs.\"): node 'blur': the input port is empty; expected inputs.<port> = \"node[.port]\"");
}

TEST(SetOption, AnInputNamingAnEmptyPortIsRefused) {
    const char* text = "[nodes.src]\nop = \"synth\"\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n";
    EXPECT_EQ(
        user_error_of([&] { parse_pipeline_text(text, "p.toml", {"blur.input=src."}); }),
        "--set blur.input=src.: node 'blur': input \"src.\" names an empty port; expected \"node\" or \"node.port\"");
    EXPECT_EQ(
        user_error_of([&] { parse_pipeline_text(text, "p.toml", {"blur.inputs.in=.out"}); }),
        "--set blur.inputs.in=.out: node 'blur': input \".out\" names an empty node; expected \"node\" or \"node.port\"");
}

// --- 4. `pixflow graph` writes valid DOT whatever the ids -----------------------------------------

namespace {

/// A small DOT reader for what plan_to_dot writes (graph, node, edge and attribute statements,
/// subgraphs), strict where Graphviz is: a quoted string ends at the first '"' that is not
/// preceded by an escaping backslash (`\\` is one unit, as in Graphviz's scanner). It also
/// refuses a raw newline inside a string, which plan_to_dot promises never to write. Collects
/// the node ids as Graphviz would store them (only \" unescaped).
class DotReader {
  public:
    explicit DotReader(std::string text) : m_s(std::move(text)) {}
    /// Throws std::runtime_error with the offset when the text is not DOT.
    void read() {
        next();
        if (m_tok == "strict") next();
        if (m_tok != "graph" && m_tok != "digraph") fail("expected graph or digraph");
        next();
        if (m_kind == Kind::id) next();
        expect("{");
        stmt_list();
        expect("}");
        if (m_kind != Kind::end) fail("text after the closing brace");
    }
    std::set<std::string> nodes, edge_ends;
    std::string graph_name;

  private:
    enum class Kind { id, punct, end };
    std::string m_s, m_tok;
    Kind m_kind = Kind::end;
    bool m_quoted = false;
    std::size_t m_pos = 0;

    [[noreturn]] void fail(const std::string& why) {
        throw std::runtime_error(why + " at byte " + std::to_string(m_pos) + " (token '" + m_tok + "')");
    }
    void next() {
        while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
        m_quoted = false;
        if (m_pos >= m_s.size()) {
            m_kind = Kind::end, m_tok.clear();
            return;
        }
        char c = m_s[m_pos];
        if (c == '"') {
            m_tok.clear();
            for (++m_pos;; ++m_pos) {
                if (m_pos >= m_s.size()) fail("unterminated string");
                char d = m_s[m_pos];
                if (d == '\n') fail("a raw newline inside a string");
                if (d == '"') break;
                if (d == '\\' && m_pos + 1 < m_s.size() && m_s[m_pos + 1] == '"')
                    m_tok += '"', ++m_pos;
                else if (d == '\\' && m_pos + 1 < m_s.size() && m_s[m_pos + 1] == '\\')
                    m_tok += "\\\\", ++m_pos;
                else
                    m_tok += d;
            }
            ++m_pos;
            m_kind = Kind::id, m_quoted = true;
            return;
        }
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') {
            if (c == '-' && m_pos + 1 < m_s.size() && m_s[m_pos + 1] == '>') {
                m_tok = "->", m_kind = Kind::punct, m_pos += 2;
                return;
            }
            std::size_t b = m_pos;
            while (m_pos < m_s.size() && (std::isalnum(static_cast<unsigned char>(m_s[m_pos])) || m_s[m_pos] == '_' ||
                                          m_s[m_pos] == '.' || m_s[m_pos] == '-'))
                ++m_pos;
            m_tok = m_s.substr(b, m_pos - b), m_kind = Kind::id;
            return;
        }
        if (std::string("{}[];,=").find(c) == std::string::npos) fail(std::string("unexpected character '") + c + "'");
        m_tok = std::string(1, c), m_kind = Kind::punct, ++m_pos;
    }
    void expect(const char* p) {
        if (m_kind != Kind::punct || m_tok != p) fail(std::string("expected ") + p);
        next();
    }
    bool at(const char* p) const { return m_kind == Kind::punct && m_tok == p; }
    bool keyword(const char* k) const { return m_kind == Kind::id && !m_quoted && m_tok == k; }
    std::string id() {
        if (m_kind != Kind::id) fail("expected an id");
        std::string s = m_tok;
        next();
        return s;
    }
    void attr_list() {
        while (at("[")) {
            next();
            while (!at("]")) {
                id();
                if (at("=")) next(), id();
                if (at(",") || at(";")) next();
            }
            next();
        }
    }
    void stmt_list() {
        while (!at("}")) {
            if (m_kind == Kind::end) fail("unterminated block");
            stmt();
            if (at(";")) next();
        }
    }
    void subgraph() {
        if (keyword("subgraph")) {
            next();
            if (m_kind == Kind::id) next();
        }
        expect("{");
        stmt_list();
        expect("}");
    }
    void stmt() {
        if (keyword("graph") || keyword("node") || keyword("edge")) {
            next();
            attr_list();
            return;
        }
        if (keyword("subgraph") || at("{")) {
            subgraph();
            return;
        }
        std::string a = id();
        if (at("=")) {
            next();
            id();
            return;
        }
        if (!at("->")) {
            nodes.insert(a);
            attr_list();
            return;
        }
        edge_ends.insert(a);
        while (at("->")) next(), edge_ends.insert(id());
        attr_list();
    }
};

/// plan_to_dot's escaping undone: the id as the pipeline wrote it.
std::string undo_dot_escape(const std::string& s) {
    std::string out;
    for (std::size_t k = 0; k < s.size(); ++k) {
        if (s[k] != '\\' || k + 1 == s.size()) {
            out += s[k];
            continue;
        }
        char n = s[++k];
        if (n == '\\')
            out += '\\';
        else if (n == 'n')
            out += '\n';
        else if (n == 'x' && k + 2 < s.size())
            out += char(std::stoi(s.substr(k + 1, 2), nullptr, 16)), k += 2;
        else
            out += '\\', out += n;
    }
    return out;
}

} // namespace

TEST(GraphDot, IdsWithQuotesBackslashesAndNewlinesGiveValidDot) {
    // TOML quoted keys allow any id; each one must come out of `pixflow graph` as one DOT id.
    const std::string text = "[pipeline]\nname = \"say \\\"hi\\\" \\\\ bye\"\n"
                             "[nodes.\"a\\\"b\"]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                             "[nodes.\"c\\\\d\"]\nop = \"gauss5x5\"\ninput = \"a\\\"b\"\n"
                             "[nodes.\"e\\nf\"]\nop = \"gauss5x5\"\ninput = \"c\\\\d\"\n"
                             "[nodes.\"g\\\\\"]\nop = \"gauss5x5\"\ninput = \"e\\nf\"\n"
                             "[nodes.\"h\\u0001\"]\nop = \"gauss5x5\"\ninput = \"g\\\\\"\n";
    CompileOptions co;
    co.backend = "cpu";
    Compiled c = compile(parse_pipeline_text(text, "ids.toml"), reg(), co);
    std::string dot = plan_to_dot(c.graph, c.plan);
    DotReader r(dot);
    ASSERT_NO_THROW(r.read()) << dot;
    std::set<std::string> ids;
    for (const std::string& n : r.nodes)
        if (n.rfind("legend_", 0) != 0) ids.insert(undo_dot_escape(n));
    EXPECT_EQ(ids, (std::set<std::string>{"a\"b", "c\\d", "e\nf", "g\\", std::string("h\x01")})) << dot;
    for (const std::string& e : r.edge_ends)
        EXPECT_TRUE(r.nodes.count(e)) << "edge end '" << e << "' is no node\n" << dot;
    EXPECT_EQ(r.edge_ends.size(), 5u);
}

TEST(GraphDot, TheCliWritesValidDotForAnIdWithAQuote) {
    TempDir t;
    write_text(t / "q.toml",
               "[nodes.\"x\\\"y\"]\nop = \"synth\"\n[nodes.out]\nop = \"save\"\ninput = \"x\\\"y\"\npath = \"" +
                   (t / "o.ppm") + "\"\n");
    auto r = run_pixflow("graph '" + (t / "q.toml") + "' --backend cpu");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    DotReader d(r.out);
    EXPECT_NO_THROW(d.read()) << r.out;
    EXPECT_TRUE(d.nodes.count("x\"y")) << r.out;
}

// --- 5. Validation and planning are near-linear in the node count ---------------------------------

TEST(LargePipeline, FortyThousandNodesValidateAndPlan) {
    // A chain of 40,000 nodes with a side branch every 7 nodes: before, every input was looked up
    // by scanning all nodes and Kahn's algorithm scanned all nodes per node (26 s in the audit).
    const int n = 40000;
    std::string text = "[nodes.n0]\nop = \"synth\"\nwidth = 8\nheight = 8\nchannels = 1\n";
    for (int k = 1; k < n - 1; ++k)
        text += "[nodes.n" + std::to_string(k) + "]\nop = \"gauss5x5\"\ninput = \"n" +
                std::to_string(k % 7 == 0 && k >= 5 ? k - 5 : k - 1) + "\"\n";
    text += "[nodes.out]\nop = \"save\"\ninput = \"n" + std::to_string(n - 2) + "\"\npath = \"unused.pgm\"\n";
    CompileOptions co;
    co.backend = "cpu";
    Compiled c = compile(parse_pipeline_text(text, "big.toml"), reg(), co);
    ASSERT_EQ(c.graph.nodes.size(), std::size_t(n));
    ASSERT_EQ(c.graph.order.size(), std::size_t(n));
    NodeMap<int> position(c.graph.nodes.size(), -1);
    for (std::size_t k = 0; k < c.graph.order.size(); ++k) position[c.graph.order[k]] = int(k);
    for (NodeId v : c.graph.nodes.ids())
        for (const auto& in : c.graph.nodes[v].inputs) ASSERT_LT(position[in.node], position[v]) << c.graph.nodes[v].id;
    EXPECT_EQ(c.graph.find("n12345"), NodeId(12345));
    EXPECT_EQ(c.graph.consumers(c.graph.find("n9"), 0).size(), 2u); // n10 and n14
    EXPECT_EQ(c.plan.uploads() + c.plan.downloads(), 0);
    // Node k - 1 before each side branch (k % 7 == 0) is read by no node: 5,714 notes, of which
    // the first 20 are printed and the rest counted.
    EXPECT_TRUE(contains(c.plan.notes, "... and 5694 more outputs that no node reads (5714 in all)"))
        << c.plan.notes.back();
}

TEST(LargePipeline, AnErrorListsAFewNodesNotAll) {
    std::string text = "[nodes.n0]\nop = \"synth\"\n";
    for (int k = 1; k < 2000; ++k) text += "[nodes.n" + std::to_string(k) + "]\nop = \"gauss5x5\"\ninput = \"n0\"\n";
    text += "[nodes.bad]\nop = \"gauss5x5\"\ninput = \"n00\"\n";
    std::string err = user_error_of([&] { build_graph(parse_pipeline_text(text, "big.toml"), reg()); });
    EXPECT_NE(err.find("input 'n00' is not a node (did you mean 'n0'?); nodes: n0, n1, "), std::string::npos)
        << err.substr(0, 300);
    EXPECT_NE(err.find(", ... (2001 in all)"), std::string::npos) << err.substr(0, 300);
    EXPECT_LT(err.size(), 1000u);
}

// --- 6. --backend cuda without a usable device, also on a build without CUDA ----------------------

TEST(CudaRequest, PipelineWideCudaWithoutCudaIsAnErrorEvenWhenNoOpHasCuda) {
    // A build without CUDA has no op with a CUDA implementation: "cuda" used to leave every node
    // on the CPU and succeed.
    Graph g = build_graph(
        parse_pipeline_text("[nodes.src]\nop = \"tp_src\"\n[nodes.x]\nop = \"tp_cpu\"\ninput = \"src\"\n", "p.toml"),
        reg());
    PlanOptions o;
    o.cuda_usable = false;
    o.cuda_why = "pixflow was built without CUDA (PIXFLOW_WITH_CUDA=OFF)";
    o.backend_override = "cuda";
    EXPECT_EQ(
        user_error_of([&] { make_plan(g, o); }),
        "--backend cuda: backend = \"cuda\" but pixflow was built without CUDA (PIXFLOW_WITH_CUDA=OFF); accepted: "
        "\"cpu\" or \"auto\"");
    Graph h = build_graph(
        parse_pipeline_text("[pipeline]\nbackend = \"cuda\"\n[nodes.src]\nop = \"tp_src\"\n", "p.toml"), reg());
    o.backend_override.clear();
    EXPECT_EQ(user_error_of([&] { make_plan(h, o); }),
              "p.toml:2:11: backend = \"cuda\" but pixflow was built without CUDA (PIXFLOW_WITH_CUDA=OFF); accepted: "
              "\"cpu\" or \"auto\"");
    o.cuda_usable = true; // with a device, CPU-only ops stay on the CPU as before
    o.backend_override = "cuda";
    EXPECT_NO_THROW(make_plan(g, o));
}

TEST(CudaRequest, TheCliRefusesBackendCudaWithoutADevice) {
    if (pixflow::testing::cuda_available()) GTEST_SKIP() << "a GPU is present";
    auto r = run_pixflow("validate pipelines/blur.toml --backend cuda --set out.path=b.ppm");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("error: --backend cuda: backend = \"cuda\" but "), std::string::npos) << r.err;
}

// --- 7. Nodes that a fusion pairs must agree ------------------------------------------------------

namespace {
const std::string tp_chain = "[nodes.src]\nop = \"tp_src\"\n"                  // 1-2
                             "[nodes.add]\nop = \"tp_add\"\ninput = \"src\"\n" // 3-5
                             "wrap = true\n"                                   // 6
                             "[nodes.scale]\nop = \"tp_scale\"\ninput = \"add\"\n";
} // namespace

TEST(FusionPairs, ADisagreementIsAWarningNamingBothNodesValuesAndLines) {
    Compiled c = compile(parse_pipeline_text(tp_chain, "f.toml"), reg());
    ASSERT_EQ(c.plan.warnings.size(), 1u);
    EXPECT_EQ(
        c.plan.warnings[0].str(),
        "f.toml:7:8: node 'scale': wrap = false (the default) but node 'add' (f.toml:6:8) has wrap = true; tp_add "
        "and tp_scale belong together: plugin fusion_ops fuses tp_add -> tp_scale into tp_add_scale only when they "
        "agree, so these nodes run one by one and the result is most likely not the one meant; set both to the same "
        "value");
    EXPECT_EQ(c.graph.nodes.size(), 3u); // not fused
    CompileOptions no_fuse;
    no_fuse.fuse = false;
    EXPECT_EQ(compile(parse_pipeline_text(tp_chain, "f.toml"), reg(), no_fuse).plan.warnings.size(), 1u);
    // Agreeing nodes fuse, and say nothing.
    // On the CPU: the test plugin's fused op has no CUDA backend, so on a GPU machine "auto" would
    // put the chain on CUDA and leave it unfused.
    CompileOptions on_cpu;
    on_cpu.backend = "cpu";
    Compiled agree = compile(parse_pipeline_text(tp_chain, "f.toml", {"scale.wrap=true"}), reg(), on_cpu);
    EXPECT_TRUE(agree.plan.warnings.empty());
    EXPECT_EQ(agree.graph.nodes.size(), 2u);
}

TEST(FusionPairs, QuantizeAndDequantizeAtDifferentQualitiesWarn) {
    fs::current_path(pixflow::testing::source_dir());
    Compiled c = compile_file("pipelines/jpeg-roundtrip.toml", {"quant.quality=20", "dequant.quality=75"}, reg());
    ASSERT_EQ(c.plan.warnings.size(), 1u);
    std::string w = c.plan.warnings[0].str();
    EXPECT_EQ(
        w.rfind("--set dequant.quality=75: node 'dequant': quality = 75 but node 'quant' (--set quant.quality=20) has "
                "quality = 20; quantize and dequantize belong together: plugin jpeg fuses dct8x8 -> quantize -> "
                "dequantize -> idct8x8 into jpeg_roundtrip8x8 only when they agree",
                0),
        0u)
        << w;
    EXPECT_TRUE(compile_file("pipelines/jpeg-roundtrip.toml", {}, reg()).plan.warnings.empty());
    auto r = run_pixflow("validate pipelines/jpeg-roundtrip.toml --set dequant.quality=75");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: --set dequant.quality=75: node 'dequant': quality = 75 but node 'quant' "
                         "(pipelines/jpeg-roundtrip.toml:27:11) has quality = 50;"),
              std::string::npos)
        << r.err;
}

TEST(FusionPairs, TheWarningReachesTheRunReportTheBatchAndTheApi) {
    // The warning is not only printed by validate: a run's --report, a batch's stderr and report,
    // and the library's Pipeline::warnings() carry it too (it used to stay in the plan).
    TempDir t;
    fs::create_directories(t.path / "in");
    fs::copy_file(pixflow::testing::source_dir() / "tests/data/jpeg-source.ppm", t.path / "in" / "a.ppm");
    const std::string body = "[nodes.gray]\nop = \"grayscale\"\ninput = \"src\"\n"
                             "[nodes.dct]\nop = \"dct8x8\"\ninput = \"gray\"\n"
                             "[nodes.quant]\nop = \"quantize\"\ninput = \"dct\"\nquality = 20\n"
                             "[nodes.dequant]\nop = \"dequantize\"\ninput = \"quant\"\nquality = 75\n"
                             "[nodes.idct]\nop = \"idct8x8\"\ninput = \"dequant\"\ndtype = \"u8\"\n"
                             "[nodes.out]\nop = \"save\"\ninput = \"idct\"\npath = \"" +
                             (t / "o.pgm") + "\"\n";
    write_text(t / "p.toml",
               "[nodes.src]\nop = \"load\"\npath = \"" + (t.path / "in" / "a.ppm").string() + "\"\n" + body);
    const std::string said =
        "node 'dequant': quality = 75 but node 'quant' (" + (t / "p.toml") + ":13:11) has quality = 20";
    auto slurp = [](const std::string& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    auto one = run_pixflow("run '" + (t / "p.toml") + "' --report '" + (t / "r.json") + "'");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_NE(one.err.find("warning: " + (t / "p.toml") + ":17:11: " + said), std::string::npos) << one.err;
    EXPECT_NE(slurp(t / "r.json").find("\"warnings\": [\n    \"" + (t / "p.toml") + ":17:11: " + said),
              std::string::npos)
        << slurp(t / "r.json");

    auto batch = run_pixflow("run '" + (t / "p.toml") + "' --input '" + (t / "in") + "' --output '" + (t / "outs") +
                             "' --report '" + (t / "b.json") + "'");
    ASSERT_EQ(batch.exit_code, 0) << batch.err;
    EXPECT_NE(batch.err.find("warning: " + (t / "p.toml") + ":17:11: " + said), std::string::npos) << batch.err;
    EXPECT_NE(slurp(t / "b.json").find(said), std::string::npos) << slurp(t / "b.json");

    pixflow::Engine e({pixflow::testing::plugin_dir()});
    pixflow::Pipeline api = e.load_file(t / "p.toml");
    auto w = api.warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].node, "dequant");
    EXPECT_NE(w[0].str().find(said), std::string::npos) << w[0].str();
}

// --- 8. Outputs that nothing reads, and a pipeline that writes nothing ----------------------------

namespace {
const std::string no_save = "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                            "[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n";
} // namespace

TEST(UnusedOutputs, AnUnreadOutputAndNoSinkAreNoted) {
    Compiled c = compile(parse_pipeline_text(no_save, "n.toml"), reg());
    EXPECT_TRUE(contains(c.plan.notes,
                         "n.toml:5:8: node 'blur': output 'out' (gauss5x5) is read by no node, so it is "
                         "computed for nothing; read it from another node (input = \"blur\") or remove the node"));
    EXPECT_TRUE(
        contains(c.plan.notes, "n.toml: the pipeline writes nothing: no node saves a file or has another effect"));
    EXPECT_FALSE(contains(c.plan.notes, "node 'src'")); // read by blur
    // A save node reading it: nothing to say.
    Compiled saved = compile(
        parse_pipeline_text(no_save + "[nodes.out]\nop = \"save\"\ninput = \"blur\"\npath = \"x.ppm\"\n", "n.toml"),
        reg());
    EXPECT_FALSE(contains(saved.plan.notes, "read by no node"));
    EXPECT_FALSE(contains(saved.plan.notes, "writes nothing"));
}

TEST(UnusedOutputs, OutputsTheCallerReadsAreNotNoted) {
    CompileOptions co;
    co.outputs_read = {"blur"};
    co.note_no_sink = false;
    Compiled c = compile(parse_pipeline_text(no_save, "n.toml"), reg(), co);
    EXPECT_FALSE(contains(c.plan.notes, "read by no node"));
    EXPECT_FALSE(contains(c.plan.notes, "writes nothing"));
    // The embedding API marks its outputs and expects no file.
    pixflow::Engine e({pixflow::testing::plugin_dir()});
    pixflow::Image in(8, 8, 1, pixflow::DType::u8), out(8, 8, 1, pixflow::DType::u8);
    pixflow::Pipeline p =
        e.load_string("[nodes.src]\nop = \"memory\"\n[nodes.blur]\nop = \"gauss5x5\"\ninput = \"src\"\n", "api.toml");
    p.input("src", in.view()).output("blur", out.view());
    EXPECT_FALSE(contains(p.notes(), "read by no node"));
    EXPECT_FALSE(contains(p.notes(), "writes nothing"));
}

TEST(UnusedOutputs, ValidateAndRunPrintTheNotes) {
    TempDir t;
    write_text(t / "n.toml", no_save);
    for (const char* cmd : {"validate", "run"}) {
        auto r = run_pixflow(std::string(cmd) + " '" + (t / "n.toml") + "' --backend cpu");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(
            r.err.find("note: " + (t / "n.toml") + ":5:8: node 'blur': output 'out' (gauss5x5) is read by no node"),
            std::string::npos)
            << cmd << "\n"
            << r.err;
        EXPECT_NE(r.err.find("note: " + (t / "n.toml") + ": the pipeline writes nothing"), std::string::npos)
            << cmd << "\n"
            << r.err;
    }
}

// --- Options that give a parameter to every node declaring it (--max-pixels) -----------------------

TEST(ParamDefaults, EveryNodeDeclaringTheParameterGetsTheValueUnlessItSetsItsOwn) {
    const std::string p = "[nodes.src]\nop = \"synth\"\nwidth = 8\nheight = 8\n"
                          "[nodes.a]\nop = \"gauss5x5\"\ninput = \"src\"\n"
                          "[nodes.b]\nop = \"gauss5x5\"\ninput = \"a\"\nsigma = 3.0\n";
    CompileOptions co;
    RawValue v;
    v.kind = RawValue::Kind::floating;
    v.f = 2.5;
    v.loc.file = "--sigma 2.5";
    co.param_defaults["sigma"] = v;
    Compiled c = compile(parse_pipeline_text(p, "d.toml"), reg(), co);
    auto sigma_of = [&](const char* id) {
        const Node& n = c.graph.nodes[c.graph.find(id)];
        for (int k = 0; k < n.op->desc->n_params; ++k)
            if (std::string(n.op->desc->params[k].name) == "sigma") return n.params[k].f;
        return -1.0;
    };
    EXPECT_EQ(sigma_of("a"), 2.5);
    EXPECT_EQ(sigma_of("b"), 3.0); // the pipeline's own value wins
    // A value the parameter does not accept names the option that gave it.
    v.f = -1;
    v.loc.file = "--sigma -1";
    co.param_defaults["sigma"] = v;
    std::string err = user_error_of([&] { compile(parse_pipeline_text(p, "d.toml"), reg(), co); });
    EXPECT_EQ(err.rfind("--sigma -1: node 'a': sigma = -1", 0), 0u) << err;
    // An option no node of the pipeline declares changes nothing, and a note says so.
    co.param_defaults.clear();
    RawValue m;
    m.kind = RawValue::Kind::integer;
    m.i = 10;
    m.loc.file = "--max-pixels 10";
    co.param_defaults["max_pixels"] = m;
    Compiled d = compile(parse_pipeline_text(p, "d.toml"), reg(), co);
    EXPECT_NE(std::find(d.plan.notes.begin(), d.plan.notes.end(),
                        "--max-pixels 10: no node of this pipeline has a parameter max_pixels, so it changes nothing"),
              d.plan.notes.end());
}

// lazy_oiio_test.cpp: issue 18, OpenImageIO loaded only when a file needs it. The `pixflow`
// executable and the io plugin link no OpenImageIO (their ELF dynamic sections, read by
// `readelf -d`, have no NEEDED entry for it); a run on PPM files never loads it (the dynamic
// linker's own account, LD_DEBUG=files, of `pixflow run` and the plugin scan it starts), nor does
// a run on PNG and JPEG files where libpng and libjpeg are built in; a run on TIFF files loads the
// io plugin's module pixflow_io_oiio.so and works; a module that cannot be
// loaded ($PIXFLOW_IO_OIIO_MODULE naming a file that does not exist) is an error naming the file
// read or written, the module and what is built in. The PNG and TIFF codecs themselves are
// tested through the module by plugins/io/test (Io*) and stream_test (Stream*).
#include "support/paths.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace pixflow::testing;
namespace fs = std::filesystem;

/// Runs pixflow with `env` (shell assignments) before it and `args` after it, from the source dir.
CommandResult run_with(const std::string& env, const std::string& args) {
    TempDir t;
    const std::string cmd = "cd " + q(source_dir().string()) + " && PIXFLOW_PLUGIN_PATH= " + env + " " +
                            q(pixflow_exe().string()) + " " + args + " >" + q(t / "out") + " 2>" + q(t / "err");
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(t / "out");
    r.err = slurp(t / "err");
    return r;
}

bool have_readelf() { return std::system("command -v readelf >/dev/null 2>&1") == 0; }

/// The NEEDED entries of an ELF file's dynamic section, from `readelf -d`.
std::vector<std::string> needed_of(const fs::path& file) {
    TempDir t;
    const std::string cmd = "readelf -d " + q(file.string()) + " >" + q(t / "out") + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << ": " << slurp(t / "out");
    std::vector<std::string> needed;
    const std::string text = slurp(t / "out");
    // " 0x0000000000000001 (NEEDED)             Shared library: [libtbb.so.12]"
    for (std::size_t pos = 0; (pos = text.find("(NEEDED)", pos)) != std::string::npos; ++pos) {
        const std::size_t open = text.find('[', pos), close = text.find(']', open);
        if (open == std::string::npos || close == std::string::npos) break;
        needed.push_back(text.substr(open + 1, close - open - 1));
    }
    return needed;
}

bool needs_oiio(const std::vector<std::string>& needed) {
    for (const std::string& n : needed)
        if (n.rfind("libOpenImageIO", 0) == 0) return true;
    return false;
}

fs::path module_path() { return plugin_dir() / "io" / "pixflow_io_oiio.so"; }

#ifdef PIXFLOW_TEST_WITH_OIIO
constexpr bool k_with_oiio = true;
#else
constexpr bool k_with_oiio = false;
#endif

/// A load -> save pipeline from `in` to `out`.
std::string copy_pipeline(const TempDir& t, const std::string& in, const std::string& out) {
    const std::string toml = t / "copy.toml";
    write_text(toml, "[nodes.src]\nop = \"load\"\npath = \"" + in +
                         "\"\n\n[nodes.out]\nop = \"save\"\ninput = "
                         "\"src\"\npath = \"" +
                         out + "\"\n");
    return toml;
}

TEST(LazyOiio, ExecutableAndIoPluginHaveNoNeededOpenImageIO) {
    if (!have_readelf()) GTEST_SKIP() << "readelf is not installed (binutils): the ELF check cannot run";
    for (const fs::path& f : {pixflow_exe(), plugin_dir() / "pixflow_io.so"}) {
        const std::vector<std::string> needed = needed_of(f);
        EXPECT_FALSE(needed.empty()) << f << ": no NEEDED entries read (readelf's output changed?)";
        EXPECT_FALSE(needs_oiio(needed)) << f << " links OpenImageIO";
    }
    if (k_with_oiio) // the module is where OpenImageIO went: the check above can see it
        EXPECT_TRUE(needs_oiio(needed_of(module_path()))) << module_path();
}

/// The libraries the dynamic linker loaded in a run, from LD_DEBUG=files ("file=libX.so [0]; ...").
std::string loaded_by(const std::string& args) {
    const CommandResult r = run_with("LD_DEBUG=files", args);
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0);
    return r.err;
}

TEST(LazyOiio, PpmRunLoadsNoOpenImageIO) {
    if (!k_with_oiio) GTEST_SKIP() << "this build has no OpenImageIO";
    TempDir t;
    write_ppm(t.path / "in.ppm", 16, 8, 1);
    const std::string log = loaded_by("run " + q(copy_pipeline(t, t / "in.ppm", t / "out.ppm")));
    ASSERT_NE(log.find("pixflow_io.so"), std::string::npos) << "LD_DEBUG=files did not show the io plugin";
    EXPECT_EQ(log.find("libOpenImageIO"), std::string::npos) << "a PPM run loaded OpenImageIO";
    EXPECT_EQ(log.find("pixflow_io_oiio.so"), std::string::npos) << "a PPM run loaded the module";
    EXPECT_EQ(slurp(t.path / "out.ppm"), slurp(t.path / "in.ppm"));
}

TEST(LazyOiio, TiffRunLoadsTheModuleAndRoundTrips) {
    if (!k_with_oiio) GTEST_SKIP() << "this build has no OpenImageIO";
    TempDir t;
    write_ppm(t.path / "in.ppm", 16, 8, 2);
    const std::string log = loaded_by("run " + q(copy_pipeline(t, t / "in.ppm", t / "mid.tif")));
    EXPECT_NE(log.find("pixflow_io_oiio.so"), std::string::npos);
    EXPECT_NE(log.find("libOpenImageIO"), std::string::npos);
    const CommandResult back = run_with("", "run " + q(copy_pipeline(t, t / "mid.tif", t / "back.ppm")));
    ASSERT_EQ(back.exit_code, 0) << back.err;
    EXPECT_EQ(slurp(t.path / "back.ppm"), slurp(t.path / "in.ppm")); // TIFF is lossless
}

#if defined(PIXFLOW_IO_PNG) && defined(PIXFLOW_IO_JPEG)
constexpr bool k_png_jpeg = true;
#else
constexpr bool k_png_jpeg = false;
#endif

TEST(LazyOiio, PngAndJpegRunsLoadNoOpenImageIO) {
    if (!k_png_jpeg) GTEST_SKIP() << "this build has no built-in PNG and JPEG (libpng, libjpeg)";
    TempDir t;
    write_ppm(t.path / "in.ppm", 16, 8, 4);
    for (const char* ext : {".png", ".jpg"}) {
        SCOPED_TRACE(ext);
        const std::string mid = t / (std::string("mid") + ext), back = t / (std::string("back") + ext + ".ppm");
        for (const std::string& log : {loaded_by("run " + q(copy_pipeline(t, t / "in.ppm", mid))),
                                       loaded_by("run " + q(copy_pipeline(t, mid, back)))}) {
            ASSERT_NE(log.find("pixflow_io.so"), std::string::npos) << "LD_DEBUG=files did not show the io plugin";
            EXPECT_NE(log.find(ext[1] == 'p' ? "libpng16" : "libjpeg"), std::string::npos);
            EXPECT_EQ(log.find("libOpenImageIO"), std::string::npos)
                << "a run on " << ext << " files loaded OpenImageIO";
            EXPECT_EQ(log.find("pixflow_io_oiio.so"), std::string::npos)
                << "a run on " << ext << " files loaded the module";
        }
    }
    EXPECT_EQ(slurp(t.path / "back.png.ppm"), slurp(t.path / "in.ppm")); // PNG is lossless
}

TEST(LazyOiio, MissingModuleNamesFileModuleAndBuiltInFormats) {
    if (!k_with_oiio) GTEST_SKIP() << "this build has no OpenImageIO";
    TempDir t;
    write_ppm(t.path / "in.ppm", 16, 8, 3);
    const std::string missing = (t.path / "nowhere" / "pixflow_io_oiio.so").string();
    const std::string env = "PIXFLOW_IO_OIIO_MODULE=" + q(missing);
    // writing a PNG: refused when the pipeline is checked, before anything runs
    CommandResult w = run_with(env, "run " + q(copy_pipeline(t, t / "in.ppm", t / "out.tif")));
    EXPECT_NE(w.exit_code, 0);
    EXPECT_NE(w.err.find("copy.toml:8:8: node 'out': cannot write '" + (t / "out.tif") + "'"), std::string::npos)
        << w.err;
    EXPECT_NE(w.err.find("module '" + missing + "' cannot be loaded"), std::string::npos) << w.err;
    EXPECT_NE(w.err.find("No such file or directory"), std::string::npos) << w.err; // dlerror()
    EXPECT_NE(w.err.find(".pgm .ppm .pnm .pfm .npy"), std::string::npos) << w.err;
    EXPECT_FALSE(fs::exists(t.path / "out.tif"));
    // reading one (written with the module found)
    ASSERT_EQ(run_with("", "run " + q(copy_pipeline(t, t / "in.ppm", t / "in.tif"))).exit_code, 0);
    CommandResult r = run_with(env, "run " + q(copy_pipeline(t, t / "in.tif", t / "out.ppm")));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("cannot read '" + (t / "in.tif") + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("module '" + missing + "' cannot be loaded"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(".pgm .ppm .pnm .pfm .npy"), std::string::npos) << r.err;
    // PPM needs no module
    EXPECT_EQ(run_with(env, "run " + q(copy_pipeline(t, t / "in.ppm", t / "out.ppm"))).exit_code, 0);
}

TEST(LazyOiio, VersionListsTheModulesFormats) {
    const CommandResult v = run_with("", "--version");
    ASSERT_EQ(v.exit_code, 0) << v.err;
    if (!k_with_oiio) {
        // PNG and JPEG are built in without OpenImageIO too (libpng, libjpeg): the line says so.
        EXPECT_NE(v.out.find(std::string("OpenImageIO: off; load/save formats: .pgm .ppm .pnm .pfm .npy") +
                             (k_png_jpeg ? " .png .jpg .jpeg\n" : "\n")),
                  std::string::npos)
            << v.out;
        return;
    }
    EXPECT_NE(v.out.find("OpenImageIO: on ("), std::string::npos) << v.out;
    EXPECT_NE(v.out.find(std::string("load/save formats: .pgm .ppm .pfm .npy") + (k_png_jpeg ? " .png .jpg" : "") +
                         " built in, and"),
              std::string::npos)
        << v.out;
    EXPECT_NE(v.out.find(" .png"), std::string::npos) << v.out;
    EXPECT_NE(v.out.find(" .tif"), std::string::npos) << v.out;
    const CommandResult m = run_with("PIXFLOW_IO_OIIO_MODULE=/nonexistent/pixflow_io_oiio.so", "--version");
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_NE(m.out.find("OpenImageIO: on, but its module '/nonexistent/pixflow_io_oiio.so' cannot be loaded"),
              std::string::npos)
        << m.out;
}

} // namespace

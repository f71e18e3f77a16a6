// pixflow-plugin-scanner: loads ONE plugin file in a process of its own, calls its entry point,
// validates its descriptor (loader/descriptor_check.hpp), calls its init, unloads it, and reports
// what happened on fd 3 (loader/scan_protocol.hpp). The host (loader/plugin_scan.cpp) starts one
// per plugin file that its cache does not know, as GStreamer's gst-plugin-scanner does: a plugin
// that segfaults, aborts, calls exit() or hangs in a static constructor or its entry point takes
// only this process down, and the host rejects it with the reason.
//
//   pixflow-plugin-scanner [--parent PID] PLUGIN.so     (report on stdout when fd 3 is not open)
//
// It links only the C library and the validator: no framework, no TBB, so it starts in a few ms.
// $PIXFLOW_PLUGIN_SCAN_LOG, when set, names a file that gets one line per scan (the tests count
// them to prove that a cached run starts no scanner).
#include "loader/descriptor_check.hpp"
#include "loader/scan_protocol.hpp"

#include <pixflow/abi.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <exception>
#include <fcntl.h>
#include <string>
#include <sys/prctl.h>
#include <unistd.h>

namespace proto = pixflow::host::scan_protocol;

namespace {

int out_fd = proto::report_fd;

/// One line, written with one write() so that it reaches the host whole even if the process dies
/// right after.
void say(const std::string& line) {
    std::string s = line + "\n";
    const char* p = s.data();
    std::size_t n = s.size();
    while (n > 0) {
        ssize_t w = ::write(out_fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(3); // the host went away
        p += w;
        n -= std::size_t(w);
    }
}

[[noreturn]] void finish(void* lib) {
    if (lib) {
        say("phase unload");
        dlclose(lib);
    }
    say("done");
    // _exit: no atexit handlers of the plugin, no leak check at exit; what had to be said is said.
    _exit(0);
}

[[noreturn]] void reject(const std::string& why, void* lib) {
    say("result rejected " + proto::escape(why));
    finish(lib);
}

} // namespace

// Sanitizer builds: let a plugin's SIGSEGV kill the process with the signal (the host names it),
// instead of ASan turning it into exit status 1; leaks of a plugin are not the scan's business,
// also when $ASAN_OPTIONS turns leak detection on (a plugin calling exit() must end with its own
// status, not LeakSanitizer's 23).
extern "C" const char* __asan_default_options() {
    return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=0";
}
extern "C" __attribute__((weak)) void __lsan_disable();

int main(int argc, char** argv) {
    const char* file = nullptr;
    long parent = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--parent") == 0 && i + 1 < argc)
            parent = std::strtol(argv[++i], nullptr, 10);
        else
            file = argv[i];
    }
    if (__lsan_disable) __lsan_disable();
    if (fcntl(proto::report_fd, F_GETFD) == -1) out_fd = STDOUT_FILENO; // run by hand
    if (!file) {
        std::fprintf(stderr, "usage: pixflow-plugin-scanner [--parent PID] PLUGIN.so\n");
        return 2;
    }
    // Die with the host: a plugin that hangs must not outlive a pixflow killed by Ctrl-C.
    if (parent > 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != pid_t(parent)) _exit(4);
    }
    say(proto::hello);
    if (const char* log = std::getenv("PIXFLOW_PLUGIN_SCAN_LOG"); log && *log) {
        int fd = ::open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            std::string line = std::string(file) + "\n";
            [[maybe_unused]] ssize_t w = ::write(fd, line.data(), line.size());
            ::close(fd);
        }
    }

    say("phase load");
    void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* e = dlerror();
        reject(std::string("cannot be loaded: ") + (e ? e : "dlopen failed"), nullptr);
    }
    void* sym = dlsym(lib, PIXFLOW_ENTRY_SYMBOL);
    if (!sym) reject("not a pixflow plugin: it exports no '" PIXFLOW_ENTRY_SYMBOL "' symbol", lib);

    say("phase entry");
    const pf_plugin_desc* d = nullptr;
    try {
        d = reinterpret_cast<pf_entry_fn>(sym)();
    } catch (const std::exception& e) {
        reject(std::string("its entry point threw an exception (") + e.what() +
                   "); a C entry point must return a descriptor or NULL",
               lib);
    } catch (...) {
        reject("its entry point threw an exception of an unknown type; a C entry point must not throw", lib);
    }

    if (d && d->struct_size >= offsetof(pf_plugin_desc, name))
        say("abi " + std::to_string(d->abi_major) + " " + std::to_string(d->abi_minor));
    say("phase check");
    if (std::string why = pixflow::host::check_plugin_descriptor(d); !why.empty()) reject(why, lib);

    say("phase init");
    if (d->init) {
        char err[512];
        std::memset(err, 0, sizeof err);
        int32_t s = PF_OK;
        try {
            s = d->init(err, sizeof err);
        } catch (const std::exception& e) {
            reject(std::string("its init threw an exception (") + e.what() + ")", lib);
        } catch (...) { reject("its init threw an exception of an unknown type", lib); }
        std::string msg = pixflow::host::terminated_message(err, sizeof err);
        if (s != PF_OK) reject("its init failed: " + (msg.empty() ? std::string("no message") : msg), lib);
    }

    say("plugin " + proto::escape(d->name));
    say("version " + proto::escape(d->version));
    for (int k = 0; k < d->n_ops; ++k) say(std::string("op ") + proto::escape(d->ops[k].name));
    say("result ok");
    finish(lib);
}

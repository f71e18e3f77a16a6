// batch/ an isolated batch's worker process (`pixflow __worker`, started by isolate.cpp): takes
// one image at a time from its parent, compiles and runs it, and leaves the outputs staged for the
// parent to commit. Whatever an operator does here (a crash, abort(), exit(), a hang) ends or
// stalls only this process; the parent names it, fails the image and starts another worker.
#include "batch/isolate.hpp"
#include "batch/protocol.hpp"
#include "executor/output_files.hpp"

#include <tbb/global_control.h>

#include <chrono>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace pixflow::host {

using namespace batch;

int run_batch_worker(const Registry& reg, int fd, long parent) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC); // a process an operator starts does not hold our socket open
    // The parent may end without closing our socket (SIGKILL) while an operator hangs here.
    std::thread([parent] {
        for (;;) {
            if (long(::getppid()) != parent) {
                abort_all_files(0);
                ::_exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }).detach();
    ExitGuard guard("", kWorkerExitCalled); // an operator's exit(): the parent says so

    Inbox inbox;
    auto cfg = receive_message(fd, inbox);
    if (!cfg || cfg->type() != MsgType::config) return 1;
    CompileOptions co = cfg->compile_options();
    int device = int(cfg->i64());
    int threads = int(cfg->i64());
    bool trace = cfg->u64() != 0;
    co.device = std::max(device, 0);
    std::optional<tbb::global_control> limit;
    if (threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, std::size_t(threads));

    std::mutex send_mu; // operators log from several threads
    auto send = [&](MessageOut& m) {
        std::lock_guard lk(send_mu);
        send_message(fd, m);
    };
    PinnedCache pinned;
    RunResources lane;
    lane.device = co.device;
    lane.pinned = &pinned;
    bool pool_kept = false;
    std::map<std::thread::id, int> thread_index;

    while (auto m = receive_message(fd, inbox)) {
        if (m->type() != MsgType::job) continue;
        std::uint64_t index = m->u64();
        PipelineSpec spec = m->spec();
        {
            MessageOut begin(MsgType::begin);
            begin.u64(index);
            send(begin);
        }
        FileTransaction tx;
        tx.on_stage = [&](const std::string& tmp, const std::string& fin) {
            MessageOut s(MsgType::staged);
            s.str(tmp).str(fin);
            send(s);
        };
        MessageOut done(MsgType::done);
        try {
            Compiled c = compile(spec, reg, co);
            if (c.plan.n_streams > 0 && !pool_kept) {
                keep_device_pool(co.device);
                pool_kept = true;
            }
            Executor ex(c.graph, c.plan);
            RunOptions ro;
            ro.files = &tx;
            if (c.plan.n_streams > 0) ro.resources = &lane;
            ro.log = [&](int level, const std::string& text) {
                MessageOut l(MsgType::log);
                l.i64(level).str(text);
                send(l);
            };
            ro.on_node = [&](NodeId v, bool started) {
                MessageOut n(MsgType::node);
                n.str(c.graph.nodes[v].id).u64(started);
                send(n);
            };
            if (trace)
                ro.on_span = [&](const Span& sp) {
                    std::string lane_key;
                    if (sp.device >= 0)
                        lane_key = "stream " + std::to_string(sp.stream);
                    else {
                        auto [it, fresh] = thread_index.emplace(sp.thread, int(thread_index.size()));
                        lane_key = "thread " + std::to_string(it->second);
                    }
                    MessageOut s(MsgType::span);
                    s.str(sp.id)
                        .str(sp.op)
                        .str(sp.backend)
                        .str(span_category(c.graph, sp))
                        .i64(sp.device)
                        .str(lane_key);
                    s.i64(sp.start.time_since_epoch().count()).i64(sp.end.time_since_epoch().count());
                    send(s);
                };
            RunReport r = ex.run(ro);
            tx.release(); // the parent commits them now
            done.u64(1).str("").u64(r.outputs.size());
            for (const auto& o : r.outputs) done.str(o);
        } catch (const UserError& e) {
            tx.rollback();
            done.u64(0).str(error_text(e)).u64(0);
        } catch (const std::exception& e) {
            tx.rollback();
            done.u64(0).str(e.what()).u64(0);
        }
        send(done);
    }
    return 0;
}

} // namespace pixflow::host

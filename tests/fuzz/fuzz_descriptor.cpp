// libFuzzer target: the plugin descriptor validator (framework/loader/descriptor_check.hpp), on a
// pf_plugin_desc built from the fuzz bytes with its operators, ports, parameters, choices,
// fusions, access patterns (at the stride of the plugin's ABI) and scratch estimates. The bytes choose every count (small, at a bound, past it, negative, any int32), every
// struct_size, flag, mask, double and function pointer, and for every string pointer one of:
// NULL, a terminated string of fuzz bytes, a name shared with other fields (so that fusions can
// name real operators and duplicates happen), a string of exactly 4097 bytes with no NUL (longer
// than every bound: a validator that reads past its bound, or a strlen, leaves the allocation and
// ASan reports it), a long string at a bound (+-1), raw bytes (control, invalid UTF-8).
//
// Every block is its own exact-size heap allocation, so any read past a count, past a string or
// past a short plugin struct_size is an ASan report. What cannot be built safely: pointers into
// unmapped memory (the validator cannot detect them; the scanner's child process is the answer
// to those) and arrays shorter than a count the validator accepts.
//
// When the validator accepts, the target then reads the descriptor the way the host does
// (strlen of every string, every choice, every fusion name): acceptance must make that safe.
#include "loader/descriptor_check.hpp"

#include <pixflow/abi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using pixflow::host::DescriptorLimits;

int32_t infer_stub(const pf_value*, int32_t, const pf_image*, int32_t, pf_image*, int32_t, char*, size_t) {
    return PF_OK;
}
int32_t run_stub(const pf_run_args*) { return PF_OK; }
int32_t init_stub(char*, size_t) { return PF_OK; }
size_t carry_stub(const pf_value*, int32_t, const pf_image*, int32_t, const pf_image*, int32_t) { return 8; }
int32_t whole_stub(const pf_value*, int32_t, const pf_image*, int32_t, const pf_image*, int32_t, char*, size_t) {
    return 0;
}
void scratch_stub(const pf_value*, int32_t, const pf_image*, int32_t, const pf_image*, int32_t, int32_t, size_t* h,
                  size_t* d) {
    *h = *d = 0;
}

struct Builder {
    const uint8_t* p;
    size_t n;
    std::vector<std::shared_ptr<void>> keep; // every allocation, freed after the input
    std::vector<const char*> strings;        // earlier strings, for reuse
    std::vector<const char*> op_names;

    uint8_t u8() {
        if (!n) return 0;
        --n;
        return *p++;
    }
    uint32_t u32() { // little-endian, one statement per byte (operands of | are unsequenced)
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) v |= uint32_t(u8()) << (8 * k);
        return v;
    }
    int32_t i32() { return int32_t(u32()); }
    double f64() {
        uint64_t lo = u32();
        uint64_t v = lo | uint64_t(u32()) << 32;
        double d;
        std::memcpy(&d, &v, sizeof d);
        return d;
    }

    template <class T> T* alloc(std::size_t count) {
        std::shared_ptr<T[]> a(new T[count > 0 ? count : 1]());
        keep.push_back(a);
        return a.get();
    }
    char* bytes(std::size_t len) { // exactly len bytes
        std::shared_ptr<char[]> a(new char[len > 0 ? len : 1]);
        keep.push_back(a);
        return a.get();
    }

    const char* string() {
        static const char* const pool[] = {"in", "out", "mode", "k", "tp_a", "tp_b", "fast", "slow", "", "a-b_C9"};
        const char* s = nullptr;
        switch (u8() % 9) {
        case 0: return nullptr;
        case 1:
        case 2: { // terminated fuzz bytes
            std::size_t len = u8() % 40;
            char* b = bytes(len + 1);
            for (std::size_t i = 0; i < len; ++i) b[i] = char(u8());
            b[len] = '\0';
            s = b;
            break;
        }
        case 3: s = pool[u8() % (sizeof pool / sizeof *pool)]; break;
        case 4: { // unterminated, longer than every bound
            std::size_t len = DescriptorLimits::doc_bytes + 1;
            char* b = bytes(len);
            char fill = char(u8() | 1);
            std::memset(b, fill, len);
            s = b;
            break;
        }
        case 5: { // terminated, at a bound or one past it
            static const std::size_t lens[] = {63,   64,   65,  127, 128, 129, DescriptorLimits::choice_bytes + 1,
                                               4095, 4096, 4097};
            std::size_t len = lens[u8() % (sizeof lens / sizeof *lens)];
            char* b = bytes(len + 1);
            std::memset(b, u8() % 2 ? 'a' : '_', len);
            b[len] = '\0';
            s = b;
            break;
        }
        case 6: { // raw bytes, terminated
            std::size_t len = u8() % 16;
            char* b = bytes(len + 1);
            for (std::size_t i = 0; i < len; ++i) b[i] = char(u8() | 0x80 * (i % 2));
            b[len] = '\0';
            s = b;
            break;
        }
        case 7:
            if (!op_names.empty()) return op_names[u8() % op_names.size()];
            return pool[4];
        default:
            if (!strings.empty()) return strings[u8() % strings.size()];
            return pool[0];
        }
        if (s && strings.size() < 64) strings.push_back(s);
        return s;
    }

    /// A count, and how many elements to allocate (the array must hold every element the
    /// validator may accept: all of them when the count is within the bound).
    std::pair<int32_t, std::size_t> count(int limit) {
        uint8_t sel = u8();
        int32_t c;
        if (sel < 200)
            c = sel % 5;
        else if (sel < 250) {
            const int32_t edge[] = {limit, limit + 1, -1, INT32_MIN, INT32_MAX};
            c = edge[sel % 5];
        } else
            c = i32();
        std::size_t n_alloc = c >= 0 && c <= limit ? std::size_t(c) : std::size_t(u8() % 2);
        return {c, n_alloc};
    }
    template <class T> const T* array(T* a, int32_t c) { return (c == 0 || u8() % 8 == 0) && u8() % 2 ? nullptr : a; }

    uint32_t struct_size(std::size_t right) { return u8() % 16 == 0 ? u32() : uint32_t(right); }

    void port(pf_port_desc& d) {
        d.struct_size = struct_size(sizeof d);
        d.name = string();
        d.doc = string();
        d.dtypes = u8() % 4 == 0 ? u32() : PF_ALL_DTYPES;
        d.channels = u8() % 4 == 0 ? u32() : PF_ALL_CHANNELS;
    }
    void param(pf_param_desc& d) {
        d.struct_size = struct_size(sizeof d);
        d.name = string();
        d.doc = string();
        d.type = u8() % 8;
        d.flags = u8() % 4 == 0 ? u32() : u8() % 8;
        d.default_value.type = u8() % 4 == 0 ? u8() % 8 : d.type;
        d.default_value.b = i32();
        int64_t i_hi = u32();
        d.default_value.i = i_hi - int64_t(u32());
        d.default_value.f = u8() % 4 == 0 ? f64() : double(int8_t(u8()));
        d.default_value.s = string();
        d.has_range = u8() % 2;
        d.min = u8() % 4 == 0 ? f64() : double(int8_t(u8()));
        d.max = u8() % 4 == 0 ? f64() : double(int8_t(u8()));
        auto [c, na] = count(DescriptorLimits::choices);
        const char** choices = alloc<const char*>(na);
        for (std::size_t k = 0; k < na; ++k) choices[k] = string();
        d.choices = array(choices, c);
        d.n_choices = c;
    }
    void op(pf_op_desc& d) {
        d.struct_size = struct_size(sizeof d);
        d.name = string();
        if (d.name && op_names.size() < 16) {
            // only names the validator reads within bounds may be shared as fusion targets
            if (strnlen(d.name, DescriptorLimits::name_bytes + 1) <= DescriptorLimits::name_bytes)
                op_names.push_back(d.name);
        }
        d.doc = string();
        d.flags = u8() % 4 == 0 ? u32() : u8() % 8;
        auto [ci, ni] = count(DescriptorLimits::ports);
        auto* ins = alloc<pf_port_desc>(ni);
        for (std::size_t k = 0; k < ni; ++k) port(ins[k]);
        d.inputs = array(ins, ci);
        d.n_inputs = ci;
        auto [co, no] = count(DescriptorLimits::ports);
        auto* outs = alloc<pf_port_desc>(no);
        for (std::size_t k = 0; k < no; ++k) port(outs[k]);
        d.outputs = array(outs, co);
        d.n_outputs = co;
        auto [cp, np] = count(DescriptorLimits::params);
        auto* ps = alloc<pf_param_desc>(np);
        for (std::size_t k = 0; k < np; ++k) param(ps[k]);
        d.params = array(ps, cp);
        d.n_params = cp;
        uint8_t fns = u8();
        d.infer = fns & 1 ? nullptr : &infer_stub;
        d.run_cpu = fns & 2 ? nullptr : &run_stub;
        d.run_cuda = fns & 4 ? &run_stub : nullptr;
    }
    void fusion(pf_fusion_desc& d) {
        d.struct_size = struct_size(sizeof d);
        d.fused_op = string();
        auto [cc, nc] = count(DescriptorLimits::chain);
        const char** chain = alloc<const char*>(nc);
        for (std::size_t k = 0; k < nc; ++k) chain[k] = string();
        d.chain = array(chain, cc);
        d.n_chain = cc;
        auto [cb, nb] = count(DescriptorLimits::binds);
        auto* binds = alloc<pf_fusion_bind>(nb);
        for (std::size_t k = 0; k < nb; ++k) binds[k] = {string(), int32_t(int8_t(u8())), string()};
        d.binds = array(binds, cb);
        d.n_binds = cb;
        auto [cs, ns] = count(DescriptorLimits::same);
        auto* same = alloc<pf_fusion_same>(ns);
        for (std::size_t k = 0; k < ns; ++k)
            same[k] = {int32_t(int8_t(u8())), string(), int32_t(int8_t(u8())), string()};
        d.same = array(same, cs);
        d.n_same = cs;
    }

    /// The plugin descriptor, in a block of exactly its struct_size when that is shorter than
    /// this ABI's (at least the struct_size field itself).
    const pf_plugin_desc* plugin() {
        pf_plugin_desc d{};
        uint8_t sel = u8() % 16;
        d.struct_size = sel == 0   ? u32()
                        : sel == 1 ? uint32_t(offsetof(pf_plugin_desc, fusions)) // ABI 1.0
                                   : uint32_t(sizeof d);
        d.abi_major = u8() % 16 == 0 ? u32() : PIXFLOW_ABI_MAJOR;
        d.abi_minor = u8() % 16 == 0 ? u32() : u8() % (PIXFLOW_ABI_MINOR + 1);
        d.name = string();
        d.version = string();
        auto [co, no] = count(DescriptorLimits::ops);
        auto* ops = alloc<pf_op_desc>(no);
        for (std::size_t k = 0; k < no; ++k) op(ops[k]);
        d.ops = array(ops, co);
        d.n_ops = co;
        d.init = u8() % 2 ? &init_stub : nullptr;
        auto [cf, nf] = count(DescriptorLimits::fusions);
        auto* fusions = alloc<pf_fusion_desc>(nf);
        for (std::size_t k = 0; k < nf; ++k) fusion(fusions[k]);
        d.fusions = array(fusions, cf);
        d.n_fusions = cf;
        // ABI 1.2: access patterns, each entry as long as the plugin's minor says (1.2's end before
        // whole_reason): a host that indexes them with its own sizeof reads past the block
        auto [ca, na] = count(DescriptorLimits::ops);
        const std::size_t stride = d.abi_minor <= 2 ? offsetof(pf_access_desc, whole_reason) : sizeof(pf_access_desc);
        char* access = bytes(na * stride);
        for (std::size_t k = 0; k < na; ++k) {
            pf_access_desc a{};
            a.struct_size = struct_size(stride);
            a.op = string();
            a.kind = u8() % 8 == 0 ? i32() : u8() % 5;
            a.halo = u8() % 8 == 0 ? i32() : u8() % 3;
            a.in_rows = u8() % 8 == 0 ? i32() : u8() % 3;
            a.out_rows = u8() % 8 == 0 ? i32() : u8() % 3;
            a.carry_bytes = u8() % 2 ? &carry_stub : nullptr;
            a.whole_reason = u8() % 4 == 0 ? &whole_stub : nullptr;
            std::memcpy(access + k * stride, &a, stride);
        }
        d.access = array(reinterpret_cast<pf_access_desc*>(access), ca);
        d.n_access = ca;
        auto [cs, ns] = count(DescriptorLimits::ops); // ABI 1.5: scratch estimates
        auto* scratch = alloc<pf_scratch_desc>(ns);
        for (std::size_t k = 0; k < ns; ++k)
            scratch[k] = {struct_size(sizeof(pf_scratch_desc)), string(), u8() % 4 == 0 ? nullptr : &scratch_stub};
        d.scratch = array(scratch, cs);
        d.n_scratch = cs;
        std::size_t size = std::max<std::size_t>(sizeof d.struct_size, std::min<std::size_t>(d.struct_size, sizeof d));
        auto* block = alloc<unsigned char>(size); // new[] of unsigned char: aligned for any scalar
        std::memcpy(block, &d, size);
        return reinterpret_cast<const pf_plugin_desc*>(block);
    }
};

/// What the host reads of an accepted descriptor (cli describe, registry, validate, fuse).
std::size_t read_like_the_host(const pf_plugin_desc& d) {
    std::size_t sum = std::strlen(d.name) + std::strlen(d.version);
    for (int k = 0; k < d.n_ops; ++k) {
        const pf_op_desc& op = d.ops[k];
        sum += std::strlen(op.name) + std::strlen(op.doc);
        for (int j = 0; j < op.n_inputs; ++j)
            sum += std::strlen(op.inputs[j].name) + (op.inputs[j].doc ? std::strlen(op.inputs[j].doc) : 0);
        for (int j = 0; j < op.n_outputs; ++j)
            sum += std::strlen(op.outputs[j].name) + (op.outputs[j].doc ? std::strlen(op.outputs[j].doc) : 0);
        for (int j = 0; j < op.n_params; ++j) {
            const pf_param_desc& p = op.params[j];
            sum += std::strlen(p.name) + std::strlen(p.doc);
            if (p.type == PF_PARAM_CHOICE)
                for (int c = 0; c < p.n_choices; ++c) sum += std::strlen(p.choices[c]);
            if (!(p.flags & PF_PARAM_REQUIRED) && (p.type == PF_PARAM_STRING || p.type == PF_PARAM_CHOICE))
                sum += std::strlen(p.default_value.s);
        }
    }
    if (d.abi_minor >= 1 && d.struct_size >= offsetof(pf_plugin_desc, n_fusions) + sizeof(d.n_fusions))
        for (int k = 0; k < d.n_fusions; ++k) {
            const pf_fusion_desc& f = d.fusions[k];
            sum += std::strlen(f.fused_op);
            for (int j = 0; j < f.n_chain; ++j) sum += std::strlen(f.chain[j]);
            for (int j = 0; j < f.n_binds; ++j)
                sum += std::strlen(f.binds[j].fused_param) + std::strlen(f.binds[j].param);
            for (int j = 0; j < f.n_same; ++j) sum += std::strlen(f.same[j].param_a) + std::strlen(f.same[j].param_b);
        }
    if (pixflow::host::has_access_patterns(d))
        for (int k = 0; k < d.n_access; ++k) sum += std::strlen(pixflow::host::access_entry(d, k).op);
    if (pixflow::host::has_scratch_estimates(d))
        for (int k = 0; k < d.n_scratch; ++k) sum += std::strlen(d.scratch[k].op);
    return sum;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Builder b{data, size, {}, {}, {}};
    const pf_plugin_desc* d = b.plugin();
    std::string reason = pixflow::host::check_plugin_descriptor(d);
    if (std::getenv("PIXFLOW_FUZZ_PRINT"))
        std::fprintf(stderr, "verdict: %s\n", reason.empty() ? "ok" : reason.c_str());
    if (reason.empty()) {
        volatile std::size_t sink = read_like_the_host(*d);
        (void)sink;
    } else if (reason.find('\n') != std::string::npos) {
        __builtin_trap(); // a reason is one line
    }
    return 0;
}

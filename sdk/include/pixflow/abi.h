/* pixflow plugin ABI: the only thing that crosses the host/plugin boundary.
 *
 * Conventions (read once, they hold for every struct below):
 *  - Plain C. No C++ types, exceptions or heap ownership cross this boundary, so a plugin built
 *    with another compiler or standard library (clang + libc++, say) loads into a g++ host.
 *  - Every struct starts with `struct_size` (sizeof as the writer knew it). A reader only touches
 *    fields that lie inside struct_size, so structs can grow at the end in a new ABI minor.
 *  - Strings are NUL-terminated UTF-8 and stay owned by whoever wrote them: descriptor strings
 *    by the plugin (static storage, valid while it is loaded), argument strings by the host
 *    (valid for the duration of the call).
 *  - Functions return a pf_status; on failure they write a one-line message into the caller's
 *    buffer (truncated, always NUL-terminated). Nothing else leaves a callback: no C++ exception
 *    and no longjmp may cross this boundary, in either direction.
 *  - Each callback below states its contract: when the host calls it, what may run at the same
 *    time, what it may touch, and what its statuses mean. The C++ layer (operator.hpp) keeps
 *    the parts it can (catching exceptions, filling parameter structs); the rest is the
 *    operator's to keep.
 *
 * Versioning: PIXFLOW_ABI_MAJOR changes on any incompatible change; the host refuses plugins of
 * another major. PIXFLOW_ABI_MINOR grows when fields are appended; the host loads plugins of its
 * own or an older minor and refuses newer ones.
 *
 * Image layout:  row y starts at (char*)data + y*pitch; pixel x of row y holds `channels`
 * interleaved samples of `dtype`.
 *
 *      data ->  [c0 c1 c2][c0 c1 c2] ... [c0 c1 c2] (padding)   <- row 0, `pitch` bytes
 *               [c0 c1 c2][c0 c1 c2] ... [c0 c1 c2] (padding)   <- row 1
 */
#ifndef PIXFLOW_ABI_H
#define PIXFLOW_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The minor versions: 1.1: pf_plugin_desc.fusions; 1.2: access patterns (pf_access_desc,
   pf_plugin_desc.access) and strips (pf_run_args.strip); 1.3: pf_access_desc.whole_reason
   (access that depends on parameters); 1.4: PF_OP_SPLIT and pf_run_args.collective (a
   whole-image op run split over cooperating processes); 1.5: scratch estimates (pf_scratch_desc,
   pf_plugin_desc.scratch); 1.6: memory a node keeps between its calls (pf_host.persistent). Each
   define stays on one line: CMake reads both from this file
   (file(STRINGS) in the top CMakeLists.txt). */
#define PIXFLOW_ABI_MAJOR 1
#define PIXFLOW_ABI_MINOR 6

/* The one symbol every plugin exports. */
#define PIXFLOW_ENTRY_SYMBOL "pixflow_plugin_entry"

#if defined(_WIN32)
#define PIXFLOW_EXPORT __declspec(dllexport)
#else
#define PIXFLOW_EXPORT __attribute__((visibility("default")))
#endif

/* Statuses, and whose fault each is. The host reports the first two as errors in the user's
 * pipeline or input (with the node and its place in the pipeline file: fix the pipeline); the
 * next two as failures of pixflow or its environment (a bug to report, or a machine problem).
 * The message says what went wrong; for a user error, also the value received and what would be
 * accepted; for an internal error, where: it ends with "(internal error at <file>:<line>)". */
typedef enum pf_status {
    PF_OK = 0,
    PF_ERR_INVALID = 1,     /* the user's fault: a bad parameter value or input (a corrupt file,
                               a size or combination the op refuses) */
    PF_ERR_UNSUPPORTED = 2, /* the user's fault: a case this op does not handle (a dtype, a
                               channel count, a device feature); another op or backend may */
    PF_ERR_RUNTIME = 3,     /* not the user's: an I/O failure or out of memory, or an internal
                               error (a broken invariant: a bug in pixflow or the plugin) */
    PF_ERR_CUDA = 4,        /* not the user's: a CUDA call failed (the message names the call
                               and its file:line) */
    PF_ERR_CANCELLED = 5    /* the run was cancelled (pf_host.cancelled) and the op stopped
                               early: its outputs are undefined; not an error of its own */
} pf_status;

typedef enum pf_dtype {
    PF_DTYPE_INVALID = 0,
    PF_U8 = 1,
    PF_U16 = 2,
    PF_I16 = 3,
    PF_I32 = 4,
    PF_U32 = 5,
    PF_U64 = 6,
    PF_F32 = 7,
    PF_F64 = 8
} pf_dtype;

/* Bit masks for the accepted dtypes / channel counts of a port. */
#define PF_DTYPE_BIT(d) (1u << (d))
#define PF_ALL_DTYPES 0x1FEu
#define PF_CHANNELS_BIT(c) (1u << (c))
#define PF_ALL_CHANNELS 0x1Eu /* 1..4 */

#define PF_HOST (-1) /* pf_image.device for host memory */

typedef struct pf_image {
    uint32_t struct_size;
    int32_t width;
    int32_t height;
    int32_t channels; /* 1..4, interleaved */
    int32_t dtype;    /* pf_dtype */
    int32_t device;   /* PF_HOST or a CUDA device ordinal */
    int64_t pitch;    /* bytes from one row to the next */
    void* data;       /* NULL when the struct only describes a shape (infer) */
} pf_image;

typedef enum pf_param_type {
    PF_PARAM_BOOL = 1,
    PF_PARAM_INT = 2,
    PF_PARAM_FLOAT = 3,
    PF_PARAM_STRING = 4,
    PF_PARAM_CHOICE = 5 /* a string out of `choices` */
} pf_param_type;

/* Flags of a parameter. A path flag tells the host what the string means, so that the host can
 * refuse to overwrite a file the same pipeline reads and can write outputs atomically. */
#define PF_PARAM_REQUIRED 0x1u   /* no default: the pipeline must set it */
#define PF_PARAM_INPUT_PATH 0x2u /* a file the op reads */
/* PF_PARAM_OUTPUT_PATH: a file the op writes; the host hands it a temporary path with the same
 * extension and renames it when the whole pipeline has succeeded. */
#define PF_PARAM_OUTPUT_PATH 0x4u

typedef struct pf_value {
    int32_t type; /* pf_param_type */
    int32_t b;
    int64_t i;
    double f;
    const char* s; /* STRING and CHOICE */
} pf_value;

typedef struct pf_param_desc {
    uint32_t struct_size;
    const char* name;
    const char* doc;
    int32_t type; /* pf_param_type */
    uint32_t flags;
    pf_value default_value; /* ignored when PF_PARAM_REQUIRED */
    int32_t has_range;      /* INT and FLOAT: min <= v <= max */
    double min;
    double max;
    const char* const* choices; /* CHOICE */
    int32_t n_choices;
} pf_param_desc;

typedef struct pf_port_desc {
    uint32_t struct_size;
    const char* name;
    const char* doc;
    uint32_t dtypes;   /* PF_DTYPE_BIT mask of accepted dtypes (inputs) or possible ones (outputs) */
    uint32_t channels; /* PF_CHANNELS_BIT mask */
} pf_port_desc;

/* What the host offers a running op, valid during one run call (pf_run_args.host). Every
 * callback is thread-safe: the op may call it from threads it runs on (TBB workers), as long as
 * the run call has not returned. */
typedef struct pf_host {
    uint32_t struct_size;
    void* self;
    /* Scratch memory of `bytes` bytes on `device` (PF_HOST, or the op's CUDA device: that of its
     * images), aligned to 64 bytes on the host and 256 on a device. The op never frees it: the host releases it once
     * the op's work is complete, that is when run returns on the CPU, and on CUDA once the work
     * enqueued on the op's stream has finished (device scratch is stream-ordered on that stream,
     * so kernels enqueued there may use it). Returns NULL when out of memory; the op then
     * returns PF_ERR_RUNTIME. */
    void* (*alloc)(void* self, int32_t device, size_t bytes);
    /* A message on stderr, prefixed with the node's id. level: 0 debug (not shown), 1 info,
     * 2 warning. Not for errors: return a status instead. */
    void (*log)(void* self, int32_t level, const char* message);
    /* Non-zero once the run is being abandoned (another node failed, or the user interrupted).
     * An op whose work takes long (iterations, row groups) polls it between steps and, when it
     * is set, stops and returns PF_ERR_CANCELLED. Cheap: an atomic load. */
    int32_t (*cancelled)(void* self);
    /* A named number for the run report (PSNR, iterations...), printed and written to JSON. The
     * key is copied. Several calls with one key keep the last value. */
    void (*metric)(void* self, const char* key, double value);
    /* ABI 1.6 (read only when struct_size covers it). Memory that this node keeps from one call
     * of the operator to the next, for state that would otherwise be rebuilt at every call (the
     * cleared flags of a single-pass scan, a launch counter): `bytes` bytes on `device`, which
     * must be the op's own (its images' CUDA device in run_cuda, PF_HOST in run_cpu), aligned
     * as alloc's. On PF_OK, *data is the memory and *state a host word beside it, both exactly
     * as this node's last call that took this block left them (its device work included: the
     * host orders `stream` after it), or, when the block is new, bytes all zero and *state 0.
     * A block is this node's alone and one call's at a time: calls that run at once (strips on
     * several streams or GPUs) get blocks of their own, and a call that asks for other bytes
     * than its block's gets a new, zeroed one. After a call that failed (any status but PF_OK)
     * its blocks are zeroed again, state 0, so a half-updated block is never seen. One block a
     * call: asked again in the same call, it is the same block. The host frees them with the
     * pipeline. Returns PF_ERR_INVALID for another device, bytes == 0 or, asked again, other
     * bytes (the op's mistake: it then returns PF_ERR_RUNTIME); PF_ERR_RUNTIME when out of
     * memory. Device blocks count in the run's device memory (peak_device_bytes) from their
     * first call on; count the bytes in the operator's scratch estimate (pf_scratch_desc). */
    int32_t (*persistent)(void* self, int32_t device, size_t bytes, void** data, uint64_t** state);
} pf_host;

/* ABI 1.2. Where the current run call lies in a run by horizontal strips (pf_run_args.strip).
 * Only an operator that declared an access pattern other than PF_ACCESS_WHOLE is ever run by
 * strips; its views then hold a band of full-width rows of the whole image. Row numbers are those
 * of the whole image.
 *
 *      whole input (in_height rows)          whole output (out_height rows)
 *      +--------------------------+          +--------------------------+
 *      |                          |          |                          |
 *  in_row0 -> [ input view ]      |  ---->   out_row0 -> [ output view ] |
 *      |                          |          |                          |
 *      +--------------------------+          +--------------------------+
 *
 * The views' own heights say how many rows they hold. A stencil's input view holds its halo rows
 * too, clipped at the image's edges, and its output view the same rows: the host keeps only the
 * rows it needs, so a stencil treats its view exactly as a whole image. */
typedef struct pf_strip {
    uint32_t struct_size;
    int32_t index;      /* 0 .. count - 1, in order from the top (carried operators: strictly so) */
    int32_t count;      /* strips of this run */
    int32_t in_row0;    /* row of the whole input that is the input view's row 0 (0 for sources) */
    int32_t in_height;  /* height of the whole input (0 for sources) */
    int32_t out_row0;   /* row of the whole output that is the output view's row 0 */
    int32_t out_height; /* height of the whole output */
    /* PF_ACCESS_CARRIED: the state handed from one strip to the next, carry_bytes bytes (as the
     * operator's carry_bytes said) on the device of the op's images. Zero-filled before strip 0;
     * what the op leaves in it is what it finds at the next strip. NULL for other operators. */
    void* carry;
    size_t carry_bytes;
} pf_strip;

/* ABI 1.4. What an operator that declared PF_OP_SPLIT gets when the host runs it split over
 * `size` cooperating processes (the ranks of an mpirun, docs/mpi.md): each process runs the op on
 * the same whole-image views, computes only the rows [row0, row1) of its outputs (a band, never
 * empty; the bands of the processes tile the outputs, in rank order), and reaches the others
 * through the callbacks below. The host completes the other rows of the outputs itself after the
 * call. The input views are whole images, but only rows [row0, row1) of them are sure to be
 * valid: rows outside the band are read through exchange_rows.
 *
 *      whole output                 rank 0   rows [0, row1_0)        exchange_rows: each band
 *      +------------------+ <-+     rank 1   rows [row1_0, row1_1)   sends its first row up and
 *      |  band of rank 0  |   |     ...                              its last row down, and gets
 *      +------------------+   |                                      the rows next to it
 *      |  band of rank 1  |   +-- allreduce_f64: one value per process
 *      +------------------+
 *
 * The callbacks are collective: every process of the run calls the same ones, in the same
 * order, with the same `n` or `bytes`; they block until the others have called them. They may be
 * called from any one thread of the op's run call at a time, never concurrently. Each returns
 * PF_OK, or PF_ERR_RUNTIME when the exchange failed (the op then returns PF_ERR_RUNTIME). When
 * one process's op fails, the host ends every process of the run (no output is written), so an
 * op never waits for a process that has stopped calling. */
typedef enum pf_reduce_op { PF_REDUCE_SUM = 0, PF_REDUCE_MIN = 1, PF_REDUCE_MAX = 2 } pf_reduce_op;

typedef struct pf_collective {
    uint32_t struct_size;
    void* self;
    int32_t rank;       /* this process, 0 .. size - 1, top band first */
    int32_t size;       /* processes running the op */
    int32_t row0, row1; /* the rows of the whole outputs this process computes */
    /* Replaces each of values[0 .. n) by its reduction over the processes (pf_reduce_op). The
     * result is the same bits on every process: sums are added in rank order. */
    int32_t (*allreduce_f64)(void* self, int32_t op, double* values, int32_t n);
    /* Sends `first` (bytes: the band's first row, say) to rank - 1 and `last` to rank + 1; fills
     * `above` with what rank - 1 sent as its `last`, and `below` with rank + 1's `first`. At the
     * top (rank 0) and the bottom (rank size - 1) the missing neighbour's buffer is left as it
     * is. */
    int32_t (*exchange_rows)(void* self, const void* first, const void* last, void* above, void* below, size_t bytes);
} pf_collective;

typedef struct pf_run_args {
    uint32_t struct_size;
    const pf_value* params; /* one per param desc, in declaration order, all set */
    int32_t n_params;
    const pf_image* inputs; /* one per input port */
    int32_t n_inputs;
    const pf_image* outputs; /* one per output port, allocated by the host as `infer` said */
    int32_t n_outputs;
    void* stream; /* cudaStream_t to launch on (CUDA backend), NULL on the CPU */
    const pf_host* host;
    char* error; /* message buffer for failures */
    size_t error_size;
    /* ABI 1.2 (read only when struct_size covers it): the strip this call computes, or NULL when
     * the views are the whole images. Never set for an operator whose access is PF_ACCESS_WHOLE
     * (which includes every operator of a plugin built against ABI 1.0 or 1.1). */
    const pf_strip* strip;
    /* ABI 1.4 (read only when struct_size covers it): set only for an op that declared
     * PF_OP_SPLIT, when the host runs it split over processes (see pf_collective); NULL: the op
     * computes its whole outputs, as always. */
    const pf_collective* collective;
} pf_run_args;

/* Runs the op on one set of images: run_cpu on host images, run_cuda on device images.
 *
 * When: after the host has validated the pipeline (every parameter resolved and checked against
 * its declaration, every input's dtype and channels against its port, infer called) and
 * allocated the outputs as infer said. args and everything it points to are valid for the call
 * only: keep no pointer to an image, a string or the host after returning.
 *
 * Concurrency: independent nodes run at the same time, so run (of this op and of others in the
 * plugin) may be called concurrently from several host threads, and never on a fixed thread. It
 * must be reentrant: no mutable global or static state (constants and thread-safe caches only).
 * On the CPU it may run its own parallel loops with TBB (the host's thread pool).
 *
 * Images: inputs are read-only (the same image may feed several nodes at once); outputs are
 * distinct from the inputs and from each other, not cleared: write every sample. Rows are
 * `pitch` bytes apart (pf_image); do not assume packed rows.
 *
 * CUDA (run_cuda): the images live on the current device. Enqueue every kernel, copy and
 * memset on `stream` only (never the default stream) and return: returning means enqueued, not
 * done. Never synchronise: no cudaDeviceSynchronize, cudaStreamSynchronize, synchronous
 * cudaMemcpy, cudaMalloc or cudaFree; the host orders `stream` after the producers of the inputs
 * and the consumers after it, and waits only where data must reach the CPU. Take temporary
 * device memory from host->alloc. Check every call and launch, and return PF_ERR_CUDA with the
 * call and its file:line when one fails. (One exception is tolerated: an op that must read a
 * result back for a metric may synchronise its own stream once, at the end of the call, as
 * chan_vese does for its iteration count; it stalls only its own node.)
 *
 * Returns PF_OK, or a status (above) with a one-line message in `error`. A cancelled run may
 * return PF_ERR_CANCELLED; the host then discards the outputs. */
typedef int32_t (*pf_run_fn)(const pf_run_args* args);

/* Shape inference: given the parameters and input shapes (data == NULL), fill one pf_image per
 * output (width, height, channels, dtype; the rest is the host's). Also the place for checks
 * that involve several values, or the parameters and the input shapes (PF_ERR_INVALID with a
 * message naming the parameter, so that the host can point at it in the pipeline file).
 *
 * When: during validation (`pixflow validate`, before every run, for fusion checks), possibly
 * several times per node, concurrently from several threads, before any run and independently
 * of them. It must be a pure function of its arguments: touch no pixels, keep no state; it may
 * read what the shapes depend on (load reads the file's header). Outputs beyond what it sets
 * are left as the host gave them. */
typedef int32_t (*pf_infer_fn)(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                               pf_image* outputs, int32_t n_outputs, char* error, size_t error_size);

#define PF_OP_SOURCE 0x1u /* no inputs: produces an image (load, synth) */
#define PF_OP_SINK 0x2u   /* has side effects (save, compare): always runs, even with no consumer */
#define PF_OP_FUSED 0x4u  /* implements a chain of other operators (see pf_fusion_desc) */
/* PF_OP_SPLIT (ABI 1.4): a whole-image op (PF_ACCESS_WHOLE) that can also run split over
 * cooperating processes, each computing a band of its outputs' rows (pf_run_args.collective);
 * on the CPU only. */
#define PF_OP_SPLIT 0x8u

typedef struct pf_op_desc {
    uint32_t struct_size;
    const char* name;
    const char* doc; /* one line */
    uint32_t flags;
    const pf_port_desc* inputs;
    int32_t n_inputs;
    const pf_port_desc* outputs; /* the first is the default port */
    int32_t n_outputs;
    const pf_param_desc* params;
    int32_t n_params;
    pf_infer_fn infer;
    pf_run_fn run_cpu;  /* never NULL */
    pf_run_fn run_cuda; /* NULL when the op has no CUDA implementation or the plugin was built
                           without CUDA */
} pf_op_desc;

/* ABI 1.1. A fused implementation of a chain of operators: the planner replaces the nodes
 * chain[0] -> chain[1] -> ... (each one's first output feeding the next one's first input, no
 * other consumer of those intermediate outputs, one backend for all) by one node of `fused_op`,
 * an operator of the same plugin whose inputs are chain[0]'s and whose outputs are the last
 * one's. Its parameters take their values from the chain's nodes through `binds`; `same` lists
 * parameters that must be equal for the chain to be fused (else the nodes run one by one). */
typedef struct pf_fusion_bind {
    const char* fused_param; /* a parameter of fused_op ... */
    int32_t node;            /* ... takes the value of chain[node]'s ... */
    const char* param;       /* ... parameter `param` */
} pf_fusion_bind;

typedef struct pf_fusion_same {
    int32_t node_a;
    const char* param_a;
    int32_t node_b;
    const char* param_b;
} pf_fusion_same;

typedef struct pf_fusion_desc {
    uint32_t struct_size;
    const char* fused_op;
    const char* const* chain; /* operator names, in data-flow order; at least 2 */
    int32_t n_chain;
    const pf_fusion_bind* binds;
    int32_t n_binds;
    const pf_fusion_same* same;
    int32_t n_same;
} pf_fusion_desc;

/* ABI 1.2. How an operator reads its input rows, so that the host can run it on horizontal
 * strips of an image too large for memory (or when asked to). Strips are full-width bands of
 * rows; the output of a strip run must equal, bit for bit, the same rows of the whole-image run.
 *
 *   PF_ACCESS_WHOLE      needs the whole image at once (chan_vese, compare). The default: an
 *                        operator without a pf_access_desc, or of a plugin built against ABI 1.0
 *                        or 1.1, is never run by strips.
 *   PF_ACCESS_POINTWISE  output row y depends on input row y only (convert, grayscale); output
 *                        height = input height. A source with this access computes any band of
 *                        its rows on its own (synth, load): pf_strip.out_row0 says which.
 *   PF_ACCESS_STENCIL    output row y depends on input rows y - halo .. y + halo (gauss5x5: 2);
 *                        output height = input height. The host gives it a view holding the
 *                        halo rows as well (clipped at the image's edges) and keeps the middle,
 *                        so its border rule applies exactly where the view's edge is the
 *                        image's: no change to a stencil's kernel is needed.
 *   PF_ACCESS_BLOCKS     rows come in blocks: in_rows input rows give out_rows output rows
 *                        (maxpool2x2: 2 -> 1; dct8x8: 8 -> 8); strips start at multiples of
 *                        in_rows. Rows after the last whole block (maxpool's odd last row, a
 *                        partial 8-row block) belong to the last strip; the host asks `infer`
 *                        which bands are valid, so `infer` must accept any band that starts at a
 *                        block and ends at one or at the image's end.
 *   PF_ACCESS_CARRIED    output row y depends on input rows 0 .. y, through a state the operator
 *                        carries from strip to strip (integral: the output row above the strip).
 *                        Strips run in order, each once; pf_strip.carry holds carry_bytes(...)
 *                        bytes that the host keeps between them. Output height = input height.
 *                        A source may be carried too: its rows in order (a file read from the
 *                        start); so may a sink (a file written in order: save).
 * Columns are never split: every view is full width. */
typedef enum pf_access_kind {
    PF_ACCESS_WHOLE = 0,
    PF_ACCESS_POINTWISE = 1,
    PF_ACCESS_STENCIL = 2,
    PF_ACCESS_BLOCKS = 3,
    PF_ACCESS_CARRIED = 4
} pf_access_kind;

/* PF_ACCESS_CARRIED: bytes of state between strips, from the parameters and the whole images'
 * shapes (data == NULL). Called by the host while planning, like infer (pure, concurrent). */
typedef size_t (*pf_carry_bytes_fn)(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                                    const pf_image* outputs, int32_t n_outputs);

/* ABI 1.3. Whether one node of the operator, with these parameters and whole images' shapes
 * (data == NULL), may run by strips after all: 0 when it may; otherwise non-zero, with a clause
 * saying why in `why` ("it reads .png files whole"), and the node is whole-image. For an operator
 * whose access depends on its parameters: load and save stream the formats that can be read and
 * written by rows, and no others. Called by the host while planning, like infer (pure, concurrent). */
typedef int32_t (*pf_whole_reason_fn)(const pf_value* params, int32_t n_params, const pf_image* inputs,
                                      int32_t n_inputs, const pf_image* outputs, int32_t n_outputs, char* why,
                                      size_t why_size);

/* struct_size is sizeof(pf_access_desc) of the plugin's ABI: up to carry_bytes for ABI 1.2, up to
 * whole_reason from 1.3 on. */
typedef struct pf_access_desc {
    uint32_t struct_size;
    const char* op;                /* an operator of this plugin (each at most once) */
    int32_t kind;                  /* pf_access_kind */
    int32_t halo;                  /* STENCIL: 1 .. 4096 rows; else 0 */
    int32_t in_rows;               /* BLOCKS: 1 .. 4096 input rows per block; else 0 */
    int32_t out_rows;              /* BLOCKS: 1 .. 4096 output rows per block; else 0 */
    pf_carry_bytes_fn carry_bytes; /* CARRIED: never NULL; else NULL */
    /* ABI 1.3 (read only when struct_size covers it): NULL when the access always holds. */
    pf_whole_reason_fn whole_reason;
} pf_access_desc;

/* ABI 1.5. The most scratch memory (pf_host.alloc) one call of the operator's run_cpu (cuda == 0)
 * or run_cuda (cuda == 1) takes for these parameters and images' shapes (data == NULL): on the
 * host into *host_bytes, on the device into *device_bytes (both 0 when it takes none). Run by
 * strips, the shapes are a strip's (heights: its rows); else the whole images'. The planner counts
 * it in the run's memory estimate beside the images, so that the budget that decides whole images
 * or strips (`--memory-limit`, `--device-memory-limit`) covers it. Called by the host while
 * planning, like infer (pure, concurrent); it cannot fail (a too large answer only makes strips
 * thinner). An operator with no entry is taken to use none. */
typedef void (*pf_scratch_bytes_fn)(const pf_value* params, int32_t n_params, const pf_image* inputs, int32_t n_inputs,
                                    const pf_image* outputs, int32_t n_outputs, int32_t cuda, size_t* host_bytes,
                                    size_t* device_bytes);

typedef struct pf_scratch_desc {
    uint32_t struct_size;
    const char* op;            /* an operator of this plugin (each at most once) */
    pf_scratch_bytes_fn bytes; /* never NULL */
} pf_scratch_desc;

typedef struct pf_plugin_desc {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char* name;
    const char* version;
    const pf_op_desc* ops;
    int32_t n_ops;
    /* Called once, after loading and after the host has checked the descriptor, before any
     * other callback of the plugin, on one thread. A status other than PF_OK rejects the plugin,
     * with the message (the C++ layer reports a mistake in an operator's declaration this way).
     * May be NULL. */
    int32_t (*init)(char* error, size_t error_size);
    /* ABI 1.1 (read only when struct_size covers them): fused chains this plugin implements. */
    const pf_fusion_desc* fusions;
    int32_t n_fusions;
    /* ABI 1.2 (read only when struct_size covers them): the access pattern of each operator
     * that has one other than PF_ACCESS_WHOLE; an operator listed nowhere is whole-image. */
    const pf_access_desc* access;
    int32_t n_access;
    /* ABI 1.5 (read only when struct_size covers them): the scratch estimate of each operator
     * that takes scratch memory; an operator listed nowhere is taken to take none. */
    const pf_scratch_desc* scratch;
    int32_t n_scratch;
} pf_plugin_desc;

/* The entry point (PIXFLOW_ENTRY_SYMBOL). The host may call it more than once, from one thread
 * at a time; it returns the same descriptor, in static storage, valid while the plugin is
 * loaded, and never fails (report problems through init). */
typedef const pf_plugin_desc* (*pf_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PIXFLOW_ABI_H */

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
 *    buffer (truncated, always NUL-terminated).
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

#define PIXFLOW_ABI_MAJOR 1
#define PIXFLOW_ABI_MINOR 1 /* 1.1: pf_plugin_desc.fusions */

/* The one symbol every plugin exports. */
#define PIXFLOW_ENTRY_SYMBOL "pixflow_plugin_entry"

#if defined(_WIN32)
#define PIXFLOW_EXPORT __declspec(dllexport)
#else
#define PIXFLOW_EXPORT __attribute__((visibility("default")))
#endif

typedef enum pf_status {
    PF_OK = 0,
    PF_ERR_INVALID = 1,     /* bad parameters or input: the user's fault */
    PF_ERR_UNSUPPORTED = 2, /* this op cannot do that (dtype, backend...) */
    PF_ERR_RUNTIME = 3,     /* I/O failure, internal error */
    PF_ERR_CUDA = 4,        /* a CUDA call failed */
    PF_ERR_CANCELLED = 5
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
#define PF_PARAM_REQUIRED 0x1u    /* no default: the pipeline must set it */
#define PF_PARAM_INPUT_PATH 0x2u  /* a file the op reads */
#define PF_PARAM_OUTPUT_PATH 0x4u /* a file the op writes: the host hands it a temporary path
                                     with the same extension and renames it when the whole
                                     pipeline has succeeded */

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

/* What the host offers a running op. All callbacks are thread-safe. */
typedef struct pf_host {
    uint32_t struct_size;
    void* self;
    /* Scratch memory on `device` (PF_HOST or the op's CUDA device), released by the host after
     * the op's work (on its stream) completes. Returns NULL when out of memory. */
    void* (*alloc)(void* self, int32_t device, size_t bytes);
    /* level: 0 debug, 1 info, 2 warning. */
    void (*log)(void* self, int32_t level, const char* message);
    /* Non-zero once the run has been cancelled: long loops should check it and stop. */
    int32_t (*cancelled)(void* self);
    /* A named number for the run report (PSNR, iterations...), printed and written to JSON. */
    void (*metric)(void* self, const char* key, double value);
} pf_host;

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
} pf_run_args;

typedef int32_t (*pf_run_fn)(const pf_run_args* args);

/* Shape inference: given the parameters and input shapes (data == NULL), fill one pf_image per
 * output (width, height, channels, dtype). Also the place for parameter checks that depend on
 * more than one value. Must not touch pixels. */
typedef int32_t (*pf_infer_fn)(const pf_value* params, int32_t n_params, const pf_image* inputs,
                               int32_t n_inputs, pf_image* outputs, int32_t n_outputs, char* error,
                               size_t error_size);

#define PF_OP_SOURCE 0x1u /* no inputs: produces an image (load, synth) */
#define PF_OP_SINK 0x2u   /* has side effects (save, compare): always runs, even with no consumer */
#define PF_OP_FUSED 0x4u  /* implements a chain of other operators (see pf_fusion_desc) */

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

typedef struct pf_plugin_desc {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char* name;
    const char* version;
    const pf_op_desc* ops;
    int32_t n_ops;
    /* Called once after loading; a failure rejects the plugin with the message. May be NULL. */
    int32_t (*init)(char* error, size_t error_size);
    /* ABI 1.1 (read only when struct_size covers them): fused chains this plugin implements. */
    const pf_fusion_desc* fusions;
    int32_t n_fusions;
} pf_plugin_desc;

typedef const pf_plugin_desc* (*pf_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PIXFLOW_ABI_H */

/* pixflow host API: the few functions of the pixflow framework library (libpixflow_framework)
 * that tools and tests outside pixflow may call. Plain C, like abi.h, so a program built with
 * another compiler or standard library can link them. pixflow/testing.hpp wraps them for
 * GoogleTest. */
#ifndef PIXFLOW_HOST_API_H
#define PIXFLOW_HOST_API_H

#include <pixflow/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Non-zero when a CUDA device is usable and pixflow was built with CUDA. */
int32_t pixflow_host_cuda_usable(void);

/* Runs one operator on host images.
 *  plugin_path: ':'-separated folders or files searched first (then $PIXFLOW_PLUGIN_PATH, then
 *               the installation's plugin folder); may be NULL.
 *  backend:     "cpu" or "cuda".
 *  params:      n_params "key=value" strings, values written as in a pipeline (1.5, true, zero).
 *  outputs:     on success *outputs points to *n_outputs tightly packed host images owned by the
 *               host; release them with pixflow_host_free_outputs.
 * Returns PF_OK, or a status with a one-line message in error. */
int32_t pixflow_host_run_op(const char* plugin_path, const char* op, const char* backend, const pf_image* inputs,
                            int32_t n_inputs, const char* const* params, int32_t n_params, pf_image** outputs,
                            int32_t* n_outputs, char* error, size_t error_size);
void pixflow_host_free_outputs(pf_image* outputs, int32_t n_outputs);

#ifdef __cplusplus
}
#endif

#endif /* PIXFLOW_HOST_API_H */

/* How pipeline.c runs one segment: through porttool's C API (host segments always; accelerator
 * segments with the reference backend) or through the RKNN runtime. */
#ifndef PL_BACKEND_H_
#define PL_BACKEND_H_

#include <stddef.h>

#include "pipeline.h"

typedef struct pl_runner pl_runner;

pl_runner* pl_pt_open(const pl_segment* seg, const char* path, char* err, size_t err_len);
int pl_pt_run(pl_runner* r, const pl_segment* seg, void* const* in, void* const* out, char* err,
              size_t err_len);
void pl_pt_close(pl_runner* r);

#if PIPELINE_BACKEND_RKNN
pl_runner* pl_rknn_open(const pl_segment* seg, const char* path, char* err, size_t err_len);
int pl_rknn_run(pl_runner* r, const pl_segment* seg, void* const* in, void* const* out, char* err,
                size_t err_len);
void pl_rknn_close(pl_runner* r);
#endif

/* The pt_tensor view of a pipeline tensor at `data`. */
pt_tensor pl_pt_tensor(const pl_tensor* t, void* data);
size_t pl_elements(const pl_tensor* t);

#endif /* PL_BACKEND_H_ */

/* Minimal .npy (format 1.0/2.0, C order, little-endian) reading and writing for the runner
 * demo: reads a file into a caller buffer after checking its dtype and shape against the
 * pipeline's tensor, so a wrong file is an error naming it instead of a silent misread. */
#ifndef PL_NPY_H_
#define PL_NPY_H_

#include <stddef.h>

#include "pipeline.h"

/* 0 on success; otherwise non-zero with a message naming `path` in err. */
int pl_npy_read(const char* path, const pl_tensor* t, void* data, char* err, size_t err_len);
int pl_npy_write(const char* path, const pl_tensor* t, const void* data, char* err, size_t err_len);

#endif /* PL_NPY_H_ */

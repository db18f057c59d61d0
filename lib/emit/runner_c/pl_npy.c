/* See pl_npy.h. */
#include "pl_npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* pl_npy_descr(int32_t dtype) {
  switch (dtype) {
    case PT_FLOAT:
      return "<f4";
    case PT_DOUBLE:
      return "<f8";
    case PT_INT8:
      return "|i1";
    case PT_UINT8:
      return "|u1";
    case PT_INT16:
      return "<i2";
    case PT_UINT16:
      return "<u2";
    case PT_INT32:
      return "<i4";
    case PT_UINT32:
      return "<u4";
    case PT_INT64:
      return "<i8";
    case PT_UINT64:
      return "<u8";
    case PT_BOOL:
      return "|b1";
    default:
      return NULL;
  }
}

static void pl_shape_text(const int64_t* dims, size_t rank, char* out, size_t len) {
  size_t i, used = 0;
  out[0] = '\0';
  for (i = 0; i < rank && used < len; ++i) {
    used += (size_t)snprintf(out + used, len - used, i ? "x%lld" : "%lld", (long long)dims[i]);
  }
  if (rank == 0) snprintf(out, len, "scalar");
}

int pl_npy_read(const char* path, const pl_tensor* t, void* data, char* err, size_t err_len) {
  unsigned char pre[10];
  char header[4096], descr[16] = "", got[256], want[256];
  const char *want_descr = pl_npy_descr(t->dtype), *p;
  size_t header_len, rank = 0, n;
  int64_t dims[PT_MAX_RANK];
  FILE* f = fopen(path, "rb");
  if (f == NULL) return snprintf(err, err_len, "%s: cannot open", path), 1;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return snprintf(err, err_len, "%s: not a .npy file", path), 1;
  }
  header_len = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) { /* 4-byte header length: two more bytes */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) header_len = sizeof header;
    header_len |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  if (header_len >= sizeof header || fread(header, 1, header_len, f) != header_len) {
    fclose(f);
    return snprintf(err, err_len, "%s: truncated or oversized .npy header", path), 1;
  }
  header[header_len] = '\0';
  p = strstr(header, "'descr':");
  if (p) sscanf(p + 8, " '%15[^']'", descr);
  if (strstr(header, "'fortran_order': True")) {
    fclose(f);
    return snprintf(err, err_len, "%s: Fortran order; save it C-contiguous", path), 1;
  }
  p = strstr(header, "'shape':");
  p = p ? strchr(p, '(') : NULL;
  while (p && *p && *p != ')' && rank < PT_MAX_RANK) {
    char* end;
    long long v = strtoll(p + 1, &end, 10);
    if (end == p + 1) break;
    dims[rank++] = v;
    p = end + strspn(end, " ,");
    --p;
  }
  pl_shape_text(dims, rank, got, sizeof got);
  pl_shape_text(t->dims, t->rank, want, sizeof want);
  if (want_descr == NULL || strcmp(descr, want_descr) != 0) {
    fclose(f);
    return snprintf(err, err_len, "%s: dtype '%s', input '%s' needs '%s'", path, descr, t->name,
                    want_descr ? want_descr : "?"),
           1;
  }
  if (rank != t->rank || memcmp(dims, t->dims, rank * sizeof dims[0]) != 0) {
    fclose(f);
    return snprintf(err, err_len, "%s: shape %s, input '%s' needs %s", path, got, t->name, want), 1;
  }
  n = fread(data, 1, t->bytes, f);
  fclose(f);
  if (n != t->bytes) {
    return snprintf(err, err_len, "%s: %u data bytes, %u expected", path, (unsigned)n,
                    (unsigned)t->bytes),
           1;
  }
  return 0;
}

int pl_npy_write(const char* path, const pl_tensor* t, const void* data, char* err,
                 size_t err_len) {
  char header[512], shape[256] = "";
  size_t i, used = 0, len;
  FILE* f;
  for (i = 0; i < t->rank; ++i) {
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s", (long long)t->dims[i],
                             (i + 1 < t->rank) ? " " : "");
  }
  if (t->rank > 1) shape[used - 1] = '\0'; /* "(1, 3)" not "(1, 3,)" */
  len = (size_t)snprintf(header, sizeof header,
                         "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                         pl_npy_descr(t->dtype), shape);
  while ((10 + len + 1) % 64 != 0) header[len++] = ' ';
  header[len++] = '\n';
  f = fopen(path, "wb");
  if (f == NULL) return snprintf(err, err_len, "%s: cannot create", path), 1;
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc((int)(len & 0xff), f);
  fputc((int)(len >> 8), f);
  fwrite(header, 1, len, f);
  fwrite(data, 1, t->bytes, f);
  if (fclose(f) != 0) return snprintf(err, err_len, "%s: write failed", path), 1;
  return 0;
}

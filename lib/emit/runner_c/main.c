/* Demo for the generated pipeline: reads the inputs from .npy files, runs the pipeline, writes
 * every graph output as DIR/NAME.npy.
 *   runner --input NAME=FILE.npy ... [--output-dir DIR] [--segments DIR] [--profile]
 *          [--repeat N] [--dump-bridges DIR]
 * Exit codes: 0 ok, 2 usage, 3 bad input or a failed run. */
#define _POSIX_C_SOURCE 200112L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "pipeline.h"
#include "pl_npy.h"

static int usage(const char* msg) {
  fprintf(stderr,
          "error: %s\nusage: runner --input NAME=FILE.npy ... [--output-dir DIR] [--segments DIR] "
          "[--profile] [--repeat N] [--dump-bridges DIR]\n",
          msg);
  return 2;
}

/* Tensor names may hold '/' or ':'; file names get '_' instead. */
static void file_name(const char* dir, const char* name, char* out, size_t len) {
  size_t i, n = (size_t)snprintf(out, len, "%s/", dir);
  for (i = 0; name[i] && n + 5 < len; ++i) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    out[n++] = (ok && !(i == 0 && c == '.')) ? c : '_';
  }
  snprintf(out + n, len - n, ".npy");
}

static int make_dir(const char* dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "error: %s: cannot create the directory\n", dir);
    return 1;
  }
  return 0;
}

static int write_all(const char* dir, const pl_tensor* (*get)(size_t), size_t count,
                     void* const outputs[]) {
  size_t i;
  char path[4096], err[1024];
  if (make_dir(dir) != 0) return 3;
  for (i = 0; i < count; ++i) {
    const pl_tensor* t = get(i);
    file_name(dir, t->name, path, sizeof path);
    if (pl_npy_write(path, t, outputs[i], err, sizeof err) != 0) {
      fprintf(stderr, "error: %s\n", err);
      return 3;
    }
    printf("%s -> %s\n", t->name, path);
  }
  return 0;
}

struct dump_ctx {
  const char* dir;
  int failed;
};

static void dump_bridge(const pl_tensor* t, const void* data, void* ctx) {
  struct dump_ctx* d = (struct dump_ctx*)ctx;
  char path[4096], err[1024];
  file_name(d->dir, t->name, path, sizeof path);
  if (pl_npy_write(path, t, data, err, sizeof err) != 0) {
    fprintf(stderr, "error: %s\n", err);
    d->failed = 1;
  }
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  static void* inputs[PIPELINE_NUM_INPUTS > 0 ? PIPELINE_NUM_INPUTS : 1];
  static void* outputs[PIPELINE_NUM_OUTPUTS];
  const char *output_dir = NULL, *segments = NULL, *dump = NULL;
  int profile = 0, repeat = 1, i, r, rc = 0;
  size_t k;
  double *totals, *sums;
  pipeline* p = NULL;
  struct dump_ctx dump_ctx = {NULL, 0};
  char err[1024];
#if defined(__GLIBC__)
  /* The program's allocator policy (libporttool-runtime leaves it to the program): keep freed
   * tensor memory in the heap, so a run reuses the previous run's pages instead of faulting in
   * fresh zeroed ones for every intermediate. */
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(a, "--profile") == 0) {
      profile = 1;
    } else if (strcmp(a, "--output-dir") == 0 && has_value) {
      output_dir = argv[++i];
    } else if (strcmp(a, "--segments") == 0 && has_value) {
      segments = argv[++i];
    } else if (strcmp(a, "--dump-bridges") == 0 && has_value) {
      dump = argv[++i];
    } else if (strcmp(a, "--repeat") == 0 && has_value) {
      repeat = atoi(argv[++i]);
      if (repeat < 1) return usage("--repeat needs a positive count");
    } else if (strcmp(a, "--input") == 0 && has_value) {
      const char* spec = argv[++i];
      const char* eq = strchr(spec, '=');
      int found = 0;
      if (eq == NULL) return usage("--input takes NAME=FILE.npy");
      for (k = 0; k < PIPELINE_NUM_INPUTS; ++k) {
        const pl_tensor* t = pipeline_input(k);
        if (strlen(t->name) != (size_t)(eq - spec) || strncmp(t->name, spec, (size_t)(eq - spec)))
          continue;
        found = 1;
        if (inputs[k] != NULL) return usage("an input is given twice");
        inputs[k] = malloc(t->bytes ? t->bytes : 1);
        if (inputs[k] == NULL || pl_npy_read(eq + 1, t, inputs[k], err, sizeof err) != 0) {
          fprintf(stderr, "error: %s\n", inputs[k] ? err : "out of memory");
          return 3;
        }
      }
      if (!found) {
        fprintf(stderr, "error: --input %s: the pipeline has no input named so; inputs:", spec);
        for (k = 0; k < PIPELINE_NUM_INPUTS; ++k) fprintf(stderr, " %s", pipeline_input(k)->name);
        fprintf(stderr, "\n");
        return 2;
      }
    } else {
      fprintf(stderr, "error: unknown or incomplete option '%s'\n", a);
      return usage("see the options below");
    }
  }
  for (k = 0; k < PIPELINE_NUM_INPUTS; ++k) {
    if (inputs[k] == NULL) {
      fprintf(stderr, "error: input '%s' missing: give --input %s=FILE.npy\n",
              pipeline_input(k)->name, pipeline_input(k)->name);
      return 2;
    }
  }
  for (k = 0; k < PIPELINE_NUM_OUTPUTS; ++k) {
    outputs[k] = malloc(pipeline_output(k)->bytes ? pipeline_output(k)->bytes : 1);
    if (outputs[k] == NULL) return fprintf(stderr, "error: out of memory\n"), 3;
  }
  if (pipeline_init(&p, segments) != 0) {
    fprintf(stderr, "error: %s\n", pipeline_last_error());
    return 3;
  }
  if (dump) {
    if (make_dir(dump) != 0) return 3;
    dump_ctx.dir = dump;
    pipeline_set_bridge_observer(p, dump_bridge, &dump_ctx);
  }
  totals = (double*)calloc((size_t)repeat, sizeof *totals);
  sums = (double*)calloc((size_t)repeat, sizeof *sums);
  for (r = 0; r < repeat && rc == 0; ++r) {
    const pipeline_profile* prof;
    if (pipeline_run(p, (const void* const*)inputs, outputs) != 0) {
      fprintf(stderr, "error: %s\n", pipeline_last_error());
      rc = 3;
      break;
    }
    if (dump_ctx.failed) rc = 3;
    prof = pipeline_last_profile(p);
    totals[r] = prof->total_ms;
    for (k = 0; k < PIPELINE_NUM_SEGMENTS; ++k) sums[r] += prof->segment_ms[k];
    if (profile) {
      for (k = 0; k < PIPELINE_NUM_SEGMENTS; ++k) {
        printf("segment %u %-28s %9.3f ms\n", (unsigned)k, pl_segments[k].file,
               prof->segment_ms[k]);
      }
      printf("bridges (conversions, copies)      %9.3f ms\n", prof->bridge_ms);
      printf("total                              %9.3f ms\n", prof->total_ms);
    }
  }
  if (rc == 0 && (profile || repeat > 1)) {
    qsort(totals, (size_t)repeat, sizeof *totals, cmp_double);
    qsort(sums, (size_t)repeat, sizeof *sums, cmp_double);
    printf("arena: %u bytes (alignment %u)\n", (unsigned)PIPELINE_ARENA_SIZE,
           (unsigned)PIPELINE_ALIGNMENT);
    printf("median over %d run(s): total %.3f ms, segments %.3f ms, overhead %.4fx\n", repeat,
           totals[repeat / 2], sums[repeat / 2], totals[repeat / 2] / sums[repeat / 2]);
  }
  if (rc == 0 && output_dir) {
    rc = write_all(output_dir, pipeline_output, PIPELINE_NUM_OUTPUTS, outputs);
  }
  pipeline_free(p);
  free(totals);
  free(sums);
  for (k = 0; k < PIPELINE_NUM_INPUTS; ++k) free(inputs[k]);
  for (k = 0; k < PIPELINE_NUM_OUTPUTS; ++k) free(outputs[k]);
  return rc;
}

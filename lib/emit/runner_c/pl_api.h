/* The pipeline runner's API and tables (included by the generated pipeline.h after its
 * #defines). One pipeline per process: its bridges live in one static arena. */
#ifndef PL_API_H_
#define PL_API_H_

#include <porttool/runtime.h>
#include <stddef.h>
#include <stdint.h>

enum { PL_GRAPH_INPUT = 0, PL_GRAPH_OUTPUT = 1, PL_ARENA = 2 };
enum { PL_ACCELERATOR = 0, PL_HOST = 1 };
#define PL_NONE ((size_t)-1)

/* A tensor the runner moves between segments. */
typedef struct pl_tensor {
  const char* name;
  int32_t dtype; /* pt_dtype */
  size_t rank;
  int64_t dims[PT_MAX_RANK];
  size_t bytes;
  int where; /* PL_GRAPH_INPUT / PL_GRAPH_OUTPUT: slot is the index; PL_ARENA: offset */
  size_t slot;
  size_t output_index; /* a bridge that is also a graph output: copied there after the run */
  int quantized;       /* an int8 bridge: scale and zero point apply */
  float scale;
  int32_t zero_point;
  size_t staging_offset; /* arena offset of its int8 device copy (fake NPU), or PL_NONE */
} pl_tensor;

typedef int (*pl_kernel_fn)(const pt_tensor* inputs, size_t n_inputs, pt_tensor* outputs,
                            size_t n_outputs);

typedef struct pl_segment {
  const char* file;
  int role;
  const char* custom_op; /* the op a scaffolded C kernel runs, or NULL */
  pl_kernel_fn kernel;
  size_t n_inputs;
  const int* inputs; /* indices into pl_tensors */
  size_t n_outputs;
  const int* outputs;
  const size_t* scratch; /* per input: arena offset of its fake-quantized copy, or PL_NONE */
} pl_segment;

typedef struct pipeline pipeline;

typedef struct pipeline_profile {
  double segment_ms[PIPELINE_NUM_SEGMENTS];
  double bridge_ms; /* conversions and copies between segments */
  double total_ms;
} pipeline_profile;

/* Loads every segment from segment_dir (NULL: PIPELINE_SEGMENT_DIR) and checks it against the
 * pipeline. Returns 0, or non-zero with the reason in pipeline_last_error(). */
int pipeline_init(pipeline** p, const char* segment_dir);
/* inputs[i] / outputs[i] follow PIPELINE_INPUT_* / PIPELINE_OUTPUT_* (buffers of the sizes
 * PIPELINE_INPUT_*_BYTES / PIPELINE_OUTPUT_*_BYTES). Returns 0 or non-zero with an error. */
int pipeline_run(pipeline* p, const void* const inputs[], void* const outputs[]);
void pipeline_free(pipeline* p);
const char* pipeline_last_error(void);
const pipeline_profile* pipeline_last_profile(const pipeline* p);

/* Describes graph inputs, graph outputs and bridges (for the demo's file handling). */
const pl_tensor* pipeline_input(size_t i);
const pl_tensor* pipeline_output(size_t i);
/* Called with every bridge right after its producer ran (and its conversions were applied):
 * arena slots are reused once a bridge is dead, so this is where to look at them. */
typedef void (*pipeline_bridge_observer)(const pl_tensor* bridge, const void* data, void* ctx);
void pipeline_set_bridge_observer(pipeline* p, pipeline_bridge_observer fn, void* ctx);

/* Tables, in the generated pipeline_tables.c. */
extern const pl_tensor pl_tensors[];
extern const size_t pl_num_tensors;
extern const pl_segment pl_segments[PIPELINE_NUM_SEGMENTS];
extern const int pl_graph_inputs[];
extern const int pl_graph_outputs[];
extern const int pl_bridges[];
extern const size_t pl_num_bridges;
extern unsigned char* const pl_arena;

#endif /* PL_API_H_ */

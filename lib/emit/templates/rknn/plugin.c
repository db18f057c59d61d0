/* rknn_server plugin for {{rknn_op}} ({{domain|c_comment}}::{{Op|c_comment}}): build as librkcst_{{sym}}.so and install
 * to /usr/lib/rknpu/op_plugins/ (Linux) or /vendor/lib64/ (Android arm64). One op per library.
 * Scaffolded by porttool scaffold-op (source sha256 {{sha256}}). */
#include "{{sym}}_rknn.h"

#ifndef RKNN_CUSTOM_OP_EXPORT
#define RKNN_CUSTOM_OP_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

RKNN_CUSTOM_OP_EXPORT rknn_custom_op* get_rknn_custom_op(void) { return {{sym}}_rknn_op(); }

#ifdef __cplusplus
}
#endif

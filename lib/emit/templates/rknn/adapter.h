/* RKNN adapter for {{domain|c_comment}}::{{Op|c_comment}} (RKNN op type {{rknn_op}}), scaffolded by porttool
 * scaffold-op (source sha256 {{sha256}}). */
#ifndef {{SYM}}_RKNN_H_
#define {{SYM}}_RKNN_H_

#include "rknn_api.h"
#include "rknn_custom_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The op's descriptor: op_type "{{rknn_op}}", CPU target, init/compute/destroy callbacks. */
rknn_custom_op* {{sym}}_rknn_op(void);

/* Registers the op with a context; call right after rknn_init(), before rknn_run().
 * Returns rknn_register_custom_ops' status (RKNN_SUCC = 0). */
int {{sym}}_rknn_register(rknn_context ctx);

#ifdef __cplusplus
}
#endif

#endif /* {{SYM}}_RKNN_H_ */

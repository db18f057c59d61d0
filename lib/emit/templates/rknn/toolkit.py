"""RKNN-Toolkit2 conversion-time class for {{rknn_op}} ({{domain|py_string}}::{{Op|py_string}}), scaffolded by porttool
scaffold-op from node {{node|py_string}} of {{model|py_string}} (sha256 {{sha256}}).

shape_infer follows op.json's shape rule ({{shape_rule}}); compute is a numpy transcription of
kernel/{{sym}}.c, so conversion, simulation and the board agree. Register it between
rknn.config() and rknn.load_onnx():

    from {{rknn_op}}_toolkit import {{rknn_op}}
    rknn.reg_custom_op({{rknn_op}}())
"""
import math
import types

import numpy as np
from rknn.api.custom_op import get_node_attr

# Attribute name -> value of the source node (used when the node does not carry it).
_DEFAULTS = {
{{py_defaults}}}


def _c(v):
    return np.float32(v)


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


def _div(a, b):
    return a / b


def _max(a, b):
    return np.maximum(a, b)


def _min(a, b):
    return np.minimum(a, b)


def _neg(a):
    return -a


def _abs(a):
    return np.abs(a)


def _exp(a):
    return np.exp(a)


def _tanh(a):
    return np.tanh(a)


_erf = np.vectorize(math.erf, otypes=[np.float32])


def _gtsel(a, t):
    return np.where(a > t, a, np.float32(0))


class {{rknn_op}}:
    op_type = '{{rknn_op}}'

    def _params(self, node):
        p = {}
        for name, default in _DEFAULTS.items():
            try:
                value = get_node_attr(node, name)
            except Exception:  # absent attribute
                value = None
            p[name] = default if value is None else value
        return types.SimpleNamespace(**p)

    def shape_infer(self, node, in_shapes, in_dtypes):
{{py_shape_infer}}
    def compute(self, node, inputs):
{{py_compute}}

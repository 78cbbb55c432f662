"""Rewrites an opset-17 ONNX model (or an older one whose operators kept their meaning since, such as
PaddleOCR's opset-11 PP-OCRv4 detector) into the forms of opsets 18 to 21, for checking QTK's import of them.

    /usr/bin/python3 packages/onnx/scripts/upgrade-opset.py IN.onnx OUT_DIR [18 19 20 21]

Writes OUT_DIR/<name>-op<N>.onnx for each opset N (18 to 21 by default). From 18: every Reduce* takes its
`axes` as an int64 input instead of an attribute; Split without sizes (or with equal ones) gets `num_outputs`;
Pad takes an `axes` input naming only the padded axes; Resize takes `axes` and only their scales / sizes.
From 20: PyTorch's decomposed GELU, Div(x, √2) → Erf → Add(1) → Mul(x) → Mul(½), becomes one Gelu node.
Debian's python3-onnx (1.12) knows opsets up to 17 only, so nothing here asks onnx to check the result:
onnxruntime is the judge (packages/onnx/scripts/check-upgraded.ts).
"""

import math
import os
import sys

import onnx
from onnx import helper, numpy_helper
import numpy as np

REDUCE = {
    "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
}
IR_VERSION = {18: 8, 19: 9, 20: 9, 21: 10}


class Graph:
    def __init__(self, graph):
        self.graph = graph
        self.inits = {t.name: t for t in graph.initializer}
        self.consts = {}
        for n in graph.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
        self.counter = 0

    def value(self, name):
        """The constant value of `name`: an initializer, a Constant, or a Concat of those (PyTorch's Resize scales)."""
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        if name in self.consts:
            return self.consts[name]
        producer = next((n for n in self.graph.node if name in n.output), None)
        if producer is not None and producer.op_type == "Concat":
            parts = [self.value(i) for i in producer.input]
            if all(p is not None for p in parts):
                axis = next((a.i for a in producer.attribute if a.name == "axis"), 0)
                return np.concatenate(parts, axis=axis)
        return None

    def int64_input(self, base, values):
        self.counter += 1
        name = f"{base}_opset_upgrade_{self.counter}"
        self.graph.initializer.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def readers(self, value):
        return [n for n in self.graph.node if value in n.input]


def take_attr(node, name):
    for i, a in enumerate(node.attribute):
        if a.name == name:
            del node.attribute[i]
            return helper.get_attribute_value(a)
    return None


def upgrade_18(g):
    changed = {"reduce": 0, "split": 0, "pad": 0, "resize": 0}
    for n in g.graph.node:
        if n.op_type in REDUCE:
            axes = take_attr(n, "axes")
            if axes is not None:
                n.input.append(g.int64_input(n.name or n.op_type, list(axes)))
                changed["reduce"] += 1
        elif n.op_type == "Split":
            sizes = g.value(n.input[1]) if len(n.input) > 1 and n.input[1] else None
            k = len(n.output)
            if sizes is not None:
                chunk = math.ceil(int(sizes.sum()) / k)
                expected = [max(0, min(chunk, int(sizes.sum()) - i * chunk)) for i in range(k)]
                if list(map(int, sizes)) != expected:
                    continue
                del n.input[1]
            n.attribute.append(helper.make_attribute("num_outputs", k))
            changed["split"] += 1
        elif n.op_type == "Pad" and len(n.input) > 1:
            pads = g.value(n.input[1])
            if pads is None:
                continue
            r = len(pads) // 2
            axes = [a for a in range(r) if pads[a] != 0 or pads[r + a] != 0]
            new_pads = [int(pads[a]) for a in axes] + [int(pads[r + a]) for a in axes]
            ins = list(n.input) + [""] * (3 - len(n.input))
            ins[1] = g.int64_input(n.name or "pad", new_pads)
            ins.append(g.int64_input(n.name or "pad", [a - r for a in axes]))  # negative axes
            del n.input[:]
            n.input.extend(ins)
            changed["pad"] += 1
        elif n.op_type == "Resize":
            ins = list(n.input) + [""] * (4 - len(n.input))
            scales = g.value(ins[2]) if ins[2] else None
            sizes = g.value(ins[3]) if ins[3] else None
            if sizes is not None and len(sizes) == 4:
                ins[3] = g.int64_input(n.name or "resize", [int(s) for s in sizes[2:]])
            elif scales is not None and len(scales) == 4 and scales[0] == 1 and scales[1] == 1:
                ins[2] = n.name + "_scales_18"
                g.graph.initializer.append(numpy_helper.from_array(scales[2:].astype(np.float32), ins[2]))
            else:
                continue
            del n.input[:]
            n.input.extend(ins)
            n.attribute.append(helper.make_attribute("axes", [2, 3]))
            changed["resize"] += 1
    return changed


def is_scalar(g, name, value, tol=1e-6):
    v = g.value(name)
    return v is not None and v.size == 1 and abs(float(v.reshape(-1)[0]) - value) <= tol * max(1, abs(value))


def upgrade_20(g):
    """Div(x, √2) → Erf → Add(1) → Mul(x, ·) → Mul(·, ½), PyTorch's export of GELU, as one Gelu node."""
    nodes = list(g.graph.node)
    remove = set()
    count = 0
    for i, erf in enumerate(nodes):
        if erf.op_type != "Erf":
            continue
        div = next((n for n in nodes if erf.input[0] in n.output), None)
        if div is None or div.op_type != "Div" or not is_scalar(g, div.input[1], math.sqrt(2)):
            continue
        x = div.input[0]
        add = g.readers(erf.output[0])
        if len(add) != 1 or add[0].op_type != "Add":
            continue
        add = add[0]
        one = [v for v in add.input if v != erf.output[0]]
        if len(one) != 1 or not is_scalar(g, one[0], 1):
            continue
        m1 = g.readers(add.output[0])
        if len(m1) != 1 or m1[0].op_type != "Mul" or x not in m1[0].input:
            continue
        m1 = m1[0]
        m2 = g.readers(m1.output[0])
        if len(m2) != 1 or m2[0].op_type != "Mul":
            continue
        m2 = m2[0]
        half = [v for v in m2.input if v != m1.output[0]]
        if len(half) != 1 or not is_scalar(g, half[0], 0.5):
            continue
        gelu = helper.make_node("Gelu", [x], [m2.output[0]], name=(div.name or "gelu") + "_gelu", approximate="none")
        remove.update(id(n) for n in (div, erf, add, m1, m2))
        g.graph.node.insert(list(g.graph.node).index(m2), gelu)
        count += 1
    kept = [n for n in g.graph.node if id(n) not in remove]
    del g.graph.node[:]
    g.graph.node.extend(kept)
    return count


def main():
    src, out_dir = sys.argv[1], sys.argv[2]
    opsets = [int(a) for a in sys.argv[3:]] or [18, 19, 20, 21]
    name = os.path.basename(src).replace("-op17.onnx", "").replace(".onnx", "")
    os.makedirs(out_dir, exist_ok=True)
    for opset in opsets:
        model = onnx.load(src)
        g = Graph(model.graph)
        changed = upgrade_18(g)
        if opset >= 20:
            changed["gelu"] = upgrade_20(g)
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = opset
        model.ir_version = IR_VERSION[opset]
        path = os.path.join(out_dir, f"{name}-op{opset}.onnx")
        onnx.save(model, path)
        print(path, changed)


if __name__ == "__main__":
    main()

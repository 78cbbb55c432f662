// Builds small ONNX models by hand (node lists, value infos) for the importer's tests and the fuzz
// corpus; exported by @qtk/onnx/testing for the tests of @qtk/onnx-deploy.
import {
  DataType,
  encodeModel,
  type ModelMsg,
  type NodeMsg,
  type TensorMsg,
  type ValueInfoMsg,
} from '../onnx-schema.js';

/** A tensor value info: float32 unless `elem` says otherwise; string dims are dynamic (dim_param). */
export function valueInfo(
  name: string,
  dims: readonly (number | string)[],
  elem: number = DataType.FLOAT,
): ValueInfoMsg {
  return {
    name,
    type: {
      tensor_type: {
        elem_type: elem,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) },
      },
    },
  };
}

/** An opset-`opset` model of graph 'g' with input x and output y of shape [N, 4], unless `graph` overrides them. */
export function handMadeModel(nodes: NodeMsg[], graph: Partial<ModelMsg['graph']> = {}, opset = 13): Uint8Array {
  return encodeModel({
    ir_version: 7,
    opset_import: [{ domain: '', version: opset }],
    graph: { name: 'g', node: nodes, input: [valueInfo('x', ['N', 4])], output: [valueInfo('y', ['N', 4])], ...graph },
  });
}

/** A float32 initializer of shape `dims`: `values`, or by default a ramp in [-0.5, 0.36] repeating every 7. */
export function floatInitializer(name: string, dims: readonly number[], values?: readonly number[]): TensorMsg {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = Float32Array.from(values ?? Array.from({ length: n }, (_, i) => (i % 7) / 7 - 0.5));
  return { name, dims: [...dims], data_type: DataType.FLOAT, raw_data: new Uint8Array(data.buffer) };
}

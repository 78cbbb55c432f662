import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calibrate, convertFx, prepareQatFx, type QatModule, setFakeQuantize } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import type { FixedAdd, FixedConv, FixedTableOp, Quantize } from '@qtk/fixed-point';
import { Graph, GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import { ConvSkipNet } from '@qtk/test-models';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  importOnnx,
  OnnxExportError,
  UnsupportedOnnxOpError,
  AttrType,
  DataType,
  decodeModel,
  type ModelMsg,
  type NodeMsg,
  QTK_VISUAL_DOMAIN,
} from '@qtk/onnx';
import { onnxCheck } from '@qtk/onnx/testing';
import { itWithOnnxChecker } from '../../../../scripts/onnx-checker.js';
import { attrsOf, bits, floatBits, rawBuffer, str, strs } from '../testing/read-attributes.js';
import { exportQuantizedOnnx } from '../node.js';
import { exportQuantizedOnnxBytes } from './export-quantized-onnx.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-onnx-visual-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const callModules = (gm: GraphModule) => gm.graph.nodes.filter((n) => n.op === 'call_module');

let calibrated: GraphModule;
let fixed: GraphModule;
let example: Tensor;

beforeAll(() => {
  // quant stub, conv-bn-relu (fused), conv, sigmoid (a table on bayes), add, pool, flatten, high-precision Linear
  const g = new Generator(11);
  const float = new ConvSkipNet({ generator: g, inChannels: 2, sigmoid: true });
  float.eval();
  calibrated = prepareQatFx(
    float,
    { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
    { march: 'bayes', onWarning: () => {} },
  );
  calibrate(
    calibrated,
    Array.from({ length: 3 }, () => rand([4, 2, 6, 6], { generator: g }).mul(2).sub(1)),
  );
  fixed = convertFx(calibrated, { march: 'bayes', onWarning: () => {} });
  example = rand([2, 2, 6, 6], { generator: g });
});

describe('exportQuantizedOnnx of a calibrated model', () => {
  let model: ModelMsg;
  let byName: Map<string, NodeMsg>;
  beforeAll(() => {
    model = decodeModel(exportQuantizedOnnxBytes(calibrated, example));
    byName = new Map(model.graph!.node!.map((n) => [n.name!, n]));
  });

  it('has one qtk node per module call, named after the call, in a declared domain', () => {
    const calls = callModules(calibrated);
    expect(model.graph!.node!.length).toBe(calls.length);
    expect(model.graph!.node!.map((n) => n.name)).toEqual(calls.map((n) => n.name));
    expect(model.graph!.node!.every((n) => n.domain === QTK_VISUAL_DOMAIN)).toBe(true);
    expect(model.opset_import).toContainEqual({ domain: QTK_VISUAL_DOMAIN, version: 1 });
    for (const n of calls) expect(str(attrsOf(byName.get(n.name)!).get('module_path'))).toBe(n.target);
  });

  it('carries each QAT module’s weight and output scales bit for bit, with dtypes, axes, fused parts and march', () => {
    const qat = calibrated.getSubmodule('relu1') as QatModule;
    const a = attrsOf(byName.get('relu1')!);
    expect(byName.get('relu1')!.op_type).toBe('Conv');
    expect(strs(a.get('fused'))).toEqual(['Conv', 'Relu']);
    expect(strs(a.get('meta.fusedFrom'))).toEqual(['relu1', 'bn1', 'conv1']);
    expect(str(a.get('march'))).toBe('bayes');
    expect(floatBits(a.get('weight_scale'))).toEqual(bits(qat.weightFakeQuant!.scale.values()));
    expect(a.get('weight_scale')!.floats).toHaveLength(4);
    expect(a.get('weight_axis')!.i).toBe(0);
    expect(str(a.get('weight_dtype'))).toBe('qint8');
    expect(floatBits(a.get('output_scale'))).toEqual(bits(qat.activationPostProcess!.scale.values()));
    expect(a.get('output_axis')!.i).toBe(-1);
    expect(str(a.get('output_dtype'))).toBe('qint8');
    // its input is the QuantStub's output: that fake-quant's scale
    const stub = calibrated.getSubmodule('quant') as QatModule;
    expect(floatBits(a.get('input_scale'))).toEqual(bits(stub.activationPostProcess!.scale.values()));
  });

  it('shows a generated add, its separate output fake-quant, a scale-keeping flatten and a float high-precision output', () => {
    const add = attrsOf(byName.get('_generated_add_0')!);
    expect(byName.get('_generated_add_0')!.op_type).toBe('Add');
    expect(str(add.get('method'))).toBe('add');
    const sig = calibrated.getSubmodule('sig') as QatModule;
    const relu1 = calibrated.getSubmodule('relu1') as QatModule;
    expect(floatBits(add.get('input_0_scale'))).toEqual(bits(sig.activationPostProcess!.scale.values()));
    expect(floatBits(add.get('input_1_scale'))).toEqual(bits(relu1.activationPostProcess!.scale.values()));
    expect(str(add.get('output_dtype'))).toBe('float32'); // the sum is quantized by the next node
    const fqNode = calibrated.graph.nodes.find(
      (n) => n.op === 'call_module' && calibrated.getSubmodule(n.target) instanceof FakeQuantize,
    )!;
    const fq = calibrated.getSubmodule(fqNode.target) as FakeQuantize;
    expect(byName.get(fqNode.name)!.op_type).toBe('FakeQuantize');
    expect(floatBits(attrsOf(byName.get(fqNode.name)!).get('output_scale'))).toEqual(bits(fq.scale.values()));
    const pool = calibrated.getSubmodule('pool') as QatModule;
    expect(floatBits(attrsOf(byName.get('flatten')!).get('output_scale'))).toEqual(
      bits(pool.activationPostProcess!.scale.values()),
    );
    const fc = attrsOf(byName.get('fc')!);
    expect(byName.get('fc')!.op_type).toBe('Gemm');
    expect(fc.get('weight_scale')!.floats).toHaveLength(3);
    expect(str(fc.get('output_dtype'))).toBe('float32');
    expect(fc.has('output_scale')).toBe(false);
  });

  it('leaves a model in QAT state as it was: its observers do not see the example', () => {
    const scales = () =>
      calibrated
        .modules()
        .filter((m) => m instanceof FakeQuantize)
        .map((m) => bits((m as FakeQuantize).scale.values()));
    const before = scales();
    setFakeQuantize(calibrated, 'QAT');
    try {
      const model = decodeModel(exportQuantizedOnnxBytes(calibrated, example.mul(10)));
      expect(scales()).toEqual(before);
      const fqNode = model.graph!.node!.find((n) => n.op_type === 'FakeQuantize')!;
      expect(str(attrsOf(fqNode).get('state'))).toBe('QAT');
      const states = calibrated.modules().flatMap((m) => (m instanceof FakeQuantize ? [m.fakeQuantState] : []));
      expect(new Set(states)).toEqual(new Set(['QAT']));
    } finally {
      setFakeQuantize(calibrated, 'VALIDATION');
    }
  });

  it('writes the float weights as initializers that are inputs of their node', () => {
    const w = (calibrated.getSubmodule('relu1') as QatModule).module.getTensor('conv.weight');
    const init = model.graph!.initializer!.find((t) => t.name === 'relu1.module.conv.weight')!;
    expect(init.data_type).toBe(DataType.FLOAT);
    expect(init.dims).toEqual([...w.shape]);
    expect(Array.from(new Float32Array(rawBuffer(init.raw_data!)))).toEqual(Array.from(w.values()));
    expect(byName.get('relu1')!.input).toEqual(['quant', 'relu1.module.conv.weight', 'relu1.module.conv.bias']);
    const names = model.graph!.initializer!.map((t) => t.name);
    expect(names.some((n) => n!.includes('FakeQuant') || n!.includes('activationPostProcess'))).toBe(false);
  });
});

describe('exportQuantizedOnnx of a fixed-point model', () => {
  let model: ModelMsg;
  let byName: Map<string, NodeMsg>;
  beforeAll(() => {
    model = decodeModel(exportQuantizedOnnxBytes(fixed, example));
    byName = new Map(model.graph!.node!.map((n) => [n.name!, n]));
  });

  it('has one qtk node per module call and records stage and march', () => {
    expect(model.graph!.node!.map((n) => n.name)).toEqual(callModules(fixed).map((n) => n.name));
    const meta = new Map(model.metadata_props!.map((p) => [p.key, p.value]));
    expect(meta.get('qtk.stage')).toBe('fixed-point');
    expect(meta.get('qtk.march')).toBe('bayes');
  });

  it('carries input and output scales, dtypes and the requantize plan of a fused conv bit for bit', () => {
    const conv = fixed.getSubmodule('relu1') as FixedConv;
    const quant = fixed.getSubmodule('quant') as Quantize;
    const a = attrsOf(byName.get('relu1')!);
    expect(str(a.get('module_class'))).toBe('FixedConv');
    expect(strs(a.get('fused'))).toEqual(['Conv', 'Relu']);
    expect(floatBits(a.get('input_scale'))).toEqual(bits([quant.scale]));
    expect(str(a.get('input_dtype'))).toBe('qint8');
    expect(floatBits(a.get('output_scale'))).toEqual(bits(conv.config.outScale));
    expect(str(a.get('output_dtype'))).toBe('qint8');
    expect(a.get('requant.m')!.ints).toEqual(Array.from(conv.config.requant!.m));
    expect(a.get('requant.n')!.ints).toEqual(Array.from(conv.config.requant!.n));
    expect(str(a.get('requant.rule'))).toBe(conv.config.requant!.rule);
    expect(a.get('bias')!.ints).toEqual(Array.from(conv.config.bias!));
    expect(a.get('attrs.padding')!.ints).toEqual([1, 1]);
  });

  it('gives a high-precision output its per-channel scales and axis, and an int32 value type', () => {
    const fc = fixed.getSubmodule('fc') as FixedConv;
    const a = attrsOf(byName.get('fc')!);
    expect(str(a.get('output_dtype'))).toBe('qint32');
    expect(a.get('output_axis')!.i).toBe(1);
    expect(floatBits(a.get('output_scale'))).toEqual(bits(fc.config.outScale));
    expect(a.get('output_scale')!.floats).toHaveLength(3);
    const vi = model.graph!.value_info!.find((v) => v.name === 'fc')!;
    expect(vi.type!.tensor_type!.elem_type).toBe(DataType.INT32);
    expect(model.graph!.value_info!.find((v) => v.name === 'relu1')!.type!.tensor_type!.elem_type).toBe(DataType.INT8);
  });

  it('keeps a double (the add’s accumulator scale) exact as a DOUBLE tensor attribute, and a table as INTS', () => {
    const add = fixed.getSubmodule('_generated_add_0') as FixedAdd;
    const sAcc = attrsOf(byName.get('_generated_add_0')!).get('plan.sAcc')!;
    const plan = add.config.plan as { sAcc: number };
    if (Math.fround(plan.sAcc) === plan.sAcc) expect(sAcc.f).toBe(plan.sAcc);
    else {
      expect(sAcc.type).toBe(AttrType.TENSOR);
      expect(sAcc.t!.data_type).toBe(DataType.DOUBLE);
      expect(new Float64Array(rawBuffer(sAcc.t!.raw_data!))[0]).toBe(plan.sAcc);
    }
    const table = fixed.getSubmodule('sig') as FixedTableOp;
    const entries = (table.config.plans[0] as { entries: Int8Array }).entries;
    expect(attrsOf(byName.get('sig')!).get('plans.0.entries')!.ints).toEqual(Array.from(entries));
  });

  it('writes integer weights as INT8 initializers', () => {
    const w = (fixed.getSubmodule('relu1') as FixedConv).config.weight;
    const init = model.graph!.initializer!.find((t) => t.name === 'relu1.weight')!;
    expect(init.data_type).toBe(DataType.INT8);
    expect(Array.from(new Int8Array(rawBuffer(init.raw_data!)))).toEqual(Array.from(w.values()));
  });

  it('takes a quantized example input for a segment that starts inside the quantized region', () => {
    const graph = new Graph();
    const q = graph.placeholder('q');
    graph.output(graph.callModule('conv2', [q]));
    const segment = new GraphModule(fixed, graph);
    const input = (fixed.getSubmodule('relu1') as FixedConv).call(
      (fixed.getSubmodule('quant') as Quantize).call(example),
    );
    const m = decodeModel(exportQuantizedOnnxBytes(segment, input));
    expect(m.graph!.input![0]!.type!.tensor_type!.elem_type).toBe(DataType.INT8);
    const a = attrsOf(m.graph!.node![0]!);
    expect(floatBits(a.get('input_scale'))).toEqual(bits(input.scale));
    expect(str(a.get('input_dtype'))).toBe('qint8');
  });

  it('refuses a wrong number of example inputs with an OnnxExportError', () => {
    expect(() => exportQuantizedOnnxBytes(fixed, [example, example])).toThrow(OnnxExportError);
    expect(() => exportQuantizedOnnxBytes(fixed, [example, example])).toThrow(/takes 1 inputs, got 2/);
  });
});

describe('exportQuantizedOnnx files', () => {
  itWithOnnxChecker(
    'pass onnx.checker (custom domain declared), for the calibrated and the fixed-point model',
    (python) => {
      for (const [name, gm] of [
        ['calibrated', calibrated],
        ['fixed', fixed],
      ] as const) {
        const path = join(dir, `${name}.onnx`);
        exportQuantizedOnnx(gm, example, path);
        expect(onnxCheck(python, path)).toBeNull();
        const plain = spawnSync(
          python,
          ['-c', 'import sys, onnx\nonnx.checker.check_model(onnx.load(sys.argv[1]), full_check=False)', path],
          { encoding: 'utf8' },
        );
        expect(plain.stderr).toBe('');
        expect(plain.status).toBe(0);
      }
    },
  );

  it('do not load in ONNX Runtime, which has no qtk operators', async () => {
    await expect(ort.InferenceSession.create(exportQuantizedOnnxBytes(fixed, example))).rejects.toThrow(/qtk/);
  });

  it('are written atomically and equal the bytes returned; weights: false leaves out the initializers', () => {
    const path = join(dir, 'fixed-small.onnx');
    const bytes = exportQuantizedOnnx(fixed, example, path, { weights: false });
    expect(readdirSync(dir).filter((f) => f.startsWith('fixed-small'))).toEqual(['fixed-small.onnx']);
    expect(Array.from(readFileSync(path))).toEqual(Array.from(bytes));
    const model = decodeModel(bytes);
    expect(model.graph!.initializer ?? []).toHaveLength(0);
    expect(model.graph!.node!.length).toBe(callModules(fixed).length);
  });

  it('are refused by importOnnx with an UnsupportedOnnxOpError naming the qtk domain', () => {
    const bytes = exportQuantizedOnnxBytes(fixed, example);
    let error: unknown;
    try {
      importOnnx(bytes);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UnsupportedOnnxOpError);
    const nodes = (error as UnsupportedOnnxOpError).nodes;
    expect(nodes).toHaveLength(callModules(fixed).length);
    expect(nodes.every((n) => n.domain === QTK_VISUAL_DOMAIN)).toBe(true);
    expect((error as Error).message).toContain('qtk::FixedConv');
    expect((error as Error).message).toContain('exportQuantizedOnnx');
  });
});

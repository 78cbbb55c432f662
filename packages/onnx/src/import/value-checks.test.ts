import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx, OnnxAttributeError, OnnxError } from '../index.js';
import { AttrType } from '../onnx-schema.js';
import { floatInitializer, handMadeModel } from '../testing/hand-made-model.js';

const identity4 = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];

/** x [N, 4] → Gemm(x, w [4, 4], b [4]) → y, with the given alpha and weights. */
function gemmModel(alpha: number, w = identity4, b = [0, 0, 0, 0]): Uint8Array {
  return handMadeModel(
    [
      {
        op_type: 'Gemm',
        name: 'fc',
        input: ['x', 'w', 'b'],
        output: ['y'],
        attribute: [{ name: 'alpha', type: AttrType.FLOAT, f: alpha }],
      },
    ],
    { initializer: [floatInitializer('w', [4, 4], w), floatInitializer('b', [4], b)] },
  );
}

describe('non-finite attributes are refused at import', () => {
  it('Gemm alpha = NaN: an OnnxAttributeError naming the node and the attribute', () => {
    let err: unknown;
    try {
      importOnnx(gemmModel(Number.NaN), { onWarning: () => {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OnnxAttributeError);
    expect(OnnxError.isInstance(err)).toBe(true);
    expect(err).toMatchObject({ code: 'E_ONNX_ATTRIBUTE', node: 'fc', opType: 'Gemm', attribute: 'alpha' });
    expect((err as Error).message).toBe(
      "importOnnx: node 'fc' (Gemm): attribute 'alpha' is NaN, which no Gemm can compute with; fix the exporter or the file (every float attribute must be a finite number)",
    );
    expect(() => importOnnx(gemmModel(Number.POSITIVE_INFINITY))).toThrow("attribute 'alpha' is +Infinity");
  });

  it('Clip (opset 6) may bound with ±Infinity: imported, and computes as no bound', () => {
    const bytes = handMadeModel(
      [
        {
          op_type: 'Clip',
          name: 'clip',
          input: ['x'],
          output: ['y'],
          attribute: [
            { name: 'min', type: AttrType.FLOAT, f: Number.NEGATIVE_INFINITY },
            { name: 'max', type: AttrType.FLOAT, f: 6 },
          ],
        },
      ],
      {},
      6,
    );
    const gm = importOnnx(bytes);
    const x = new Tensor({ data: Float32Array.from([-1e30, 0, 5, 7]), shape: [1, 4], dtype: 'float32' });
    expect([...((gm.call(x) as Tensor).values() as Float32Array)]).toEqual([Math.fround(-1e30), 0, 5, 6]);
  });
});

describe('initializers that make the float forward pass NaN give a warning at import', () => {
  it('weights near float32 maximum: a warning naming the initializer (and the outputs do overflow)', () => {
    const warnings: string[] = [];
    const huge = identity4.map(() => 3e38);
    const gm = importOnnx(gemmModel(1, huge), { onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      "importOnnx: initializer 'w' holds values up to 3.00e+38 in magnitude (1e+30 or more): the float forward pass will likely overflow float32 (max 3.4e+38) to ±Infinity and give NaN outputs; check the file or its exporter",
    ]);
    const x = new Tensor({ data: Float32Array.from([1, 1, 1, 1]), shape: [1, 4], dtype: 'float32' });
    const y = (gm.call(x) as Tensor).values() as Float32Array;
    expect([...y].every((v) => !Number.isFinite(v))).toBe(true);
  });

  it('NaN and ±Infinity in a constant initializer: a warning counting them; ordinary weights: none', () => {
    const warnings: string[] = [];
    const bytes = handMadeModel([{ op_type: 'Add', name: 'add', input: ['x', 'c'], output: ['y'] }], {
      initializer: [floatInitializer('c', [4], [Number.NaN, 0, Number.POSITIVE_INFINITY, 0])],
    });
    importOnnx(bytes, { onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      "importOnnx: initializer 'c' holds 2 non-finite value(s) (NaN or ±Infinity) of 4: outputs computed from it may be NaN; check the file or its exporter",
    ]);
    const none: string[] = [];
    importOnnx(
      gemmModel(
        1,
        identity4.map((v) => v * 1e6),
      ),
      { onWarning: (m) => none.push(m) },
    );
    expect(none).toEqual([]);
  });
});

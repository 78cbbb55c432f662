import { describe, expect, it } from 'vitest';
import { DataType } from '@qtk/onnx';
import { linearGemm, valueInfo } from './onnx-graph-parts.js';

describe('ONNX graph parts of the CLI tests', () => {
  it('valueInfo: numbers are fixed dims, strings free ones', () => {
    expect(valueInfo('x', ['N', 3, 8])).toEqual({
      name: 'x',
      type: {
        tensor_type: {
          elem_type: DataType.FLOAT,
          shape: { dim: [{ dim_param: 'N' }, { dim_value: 3 }, { dim_value: 8 }] },
        },
      },
    });
  });

  it('linearGemm: a Gemm with transB = 1', () => {
    expect(linearGemm('/fc/Gemm', ['f', 'w', 'b'], 'y')).toEqual({
      op_type: 'Gemm',
      name: '/fc/Gemm',
      input: ['f', 'w', 'b'],
      output: ['y'],
      attribute: [{ name: 'transB', i: 1, type: 2 }],
    });
  });
});

// bayes runs @qtk/testkit's march conformance suite: every op of its table converted alone, at int8 and
// int16, against the fake-quant model within the documented bounds; determinism; model-file round trip.
import { describeMarchConformance } from '@qtk/testkit';
import { bayes } from './index.js';

const NO_FLOAT_OP =
  '@qtk/tensor has no float op for it, so no model can contain it (march-numerics.md, "Tables in conversion")';

describeMarchConformance(bayes, {
  skip: {
    TopK: NO_FLOAT_OP,
    Tile: 'only ONNX imports produce it (onnx.tile, @qtk/onnx): packages/onnx-deploy/src/convert-imported-ops.test.ts converts one',
  },
});

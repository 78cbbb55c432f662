// The third-party march fixture (qtk-march-toy: Conv, Gemm and Relu, written only against @qtk/spec and the
// peer packages) runs the march conformance suite the way its own package would.
import { toyMarch } from 'qtk-march-toy';
import { describeMarchConformance } from './index.js';

describeMarchConformance(toyMarch);

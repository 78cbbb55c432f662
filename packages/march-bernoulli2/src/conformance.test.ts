// bernoulli2 runs @qtk/testkit's march conformance suite: every op of its table converted alone at int8,
// within the documented bounds of the fake-quant model; qint16 activations refused at prepare.
import { describeMarchConformance } from '@qtk/testkit';
import { bernoulli2 } from './index.js';

describeMarchConformance(bernoulli2);

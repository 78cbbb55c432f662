// The third-party observer fixture (qtk-observer-mean-std, written only against @qtk/spec) runs the
// observer conformance suite the way its own package would.
import { meanStdObserver } from 'qtk-observer-mean-std';
import { describeObserverConformance } from './index.js';

describeObserverConformance(meanStdObserver, {
  // it sums x and x² in float64, so NaN poisons the sums; computeQparams then refuses the NaN range
  nan: 'rejected',
});

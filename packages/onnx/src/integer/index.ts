// Integer export rules of @qtk/fixed-point's modules, registered on import.
import './stub-rules.js';
import './value-op-rule.js';
import './exact-float-rules.js';
import './table-op-rule.js';
import './softmax-rule.js';
import './layer-norm-rule.js';
import './resize-rule.js';
import './add-rule.js';
import './mul-rule.js';
import './cat-rule.js';
import './reduce-rule.js';
import './min-max-rule.js';
import './compare-rule.js';
import './clamp-rule.js';
import './fixed-conv-rule.js';
import './fixed-matmul-rule.js';
import './fixed-avg-pool-rule.js';

// Integer export rules of @qtk/fixed-point's modules, registered on import.
import './stub-rules.js';
import './value-op-rule.js';
import './exact-float-rules.js';
import './table-op-rule.js';
import './softmax-rule.js';
import './layer-norm-rule.js';
import './resize-rule.js';

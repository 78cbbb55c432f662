// Integer export rules of @qtk/fixed-point's modules, registered on import.
import './stub-rules.js';
import './value-op-rule.js';
import './fixed-conv-rule.js';
import './fixed-matmul-rule.js';
import './fixed-avg-pool-rule.js';

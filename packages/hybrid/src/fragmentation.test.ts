import { describe, expect, it } from 'vitest';
import type { DeployDeviceReport, DeployedNode } from './check-deploy-device.js';
import { FRAGMENTED_TRANSITIONS, fragmentationWarning } from './fragmentation.js';

const node = (name: string, type: string, device: 'BPU' | 'CPU'): DeployedNode => ({
  name,
  kind: 'module',
  type,
  device,
  reason: device === 'BPU' ? 'supported' : 'op not in table',
  detail: null,
  fusedFrom: [],
});

/** conv, then `k` times (CPU op, conv): 2k transitions. */
function alternating(k: number): DeployDeviceReport {
  const nodes = [node('c0', 'Conv2d', 'BPU')];
  for (let i = 0; i < k; i++)
    nodes.push(node(`h${i}`, i % 3 === 2 ? 'Hardsigmoid' : 'Hardswish', 'CPU'), node(`c${i + 1}`, 'Conv2d', 'BPU'));
  const segments = nodes.map((n) => ({ device: n.device, nodes: [n.name] }));
  return {
    nodes,
    counts: { BPU: k + 1, CPU: k },
    transitions: 2 * k,
    segments,
    mismatches: [],
  };
}

describe('fragmentationWarning', () => {
  it(`is silent up to ${FRAGMENTED_TRANSITIONS} transitions`, () => {
    expect(fragmentationWarning(alternating(4), ['bayes'])).toBeNull();
  });

  it('past the threshold names the counts, the CPU op types by frequency and the marches that run them', () => {
    expect(fragmentationWarning(alternating(6), ['bayes'])).toBe(
      'the partition is fragmented: 6 CPU op(s), 12 CPU↔BPU transitions in 13 segments (more than 8 transitions; ' +
        'each is a dequantize, a quantize and a device switch). The CPU ops: Hardswish ×4, Hardsigmoid ×2. ' +
        'Replace these ops in the model with ones the march runs, or choose a march that runs them (bayes)',
    );
    expect(fragmentationWarning(alternating(6))).toMatch(/with ones the march runs$/);
  });
});

import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Parameter } from '../parameter.js';
import { Adam, AdamW } from './adam.js';
import { CosineAnnealingLR, LinearWarmup, StepLR } from './lr-scheduler.js';
import { optimizerStateFromStateDict, optimizerStateToStateDict, type Optimizer, type BaseHyper } from './optimizer.js';
import { SGD } from './sgd.js';
import { deserializeStateDict, serializeStateDict } from '../state-dict-file.js';

// Three steps from w = [1, -2, 0.5] with these gradients; expected values are PyTorch's update
// equations evaluated by hand (double precision) for each configuration.
const W0 = [1, -2, 0.5];
const GRADS = [
  [0.1, -0.2, 0.3],
  [0.05, 0.1, -0.1],
  [-0.3, 0.2, 0.0],
];
const EXPECTED: Record<string, number[][]> = {
  sgd: [
    [0.989, -1.978, 0.4695],
    [0.983011, -1.986022, 0.4790305],
    [1.012027989, -2.004035978, 0.4785514695],
  ],
  sgdMomentum: [
    [0.989, -1.978, 0.4695],
    [0.9737099, -1.9654198, 0.45062745],
    [0.9860724711, -1.9703287422, 0.4332365903],
  ],
  sgdNesterov: [
    [0.981, -1.962, 0.443],
    [0.9634, -1.9648, 0.4377],
    [1.00906, -1.99632, 0.42393],
  ],
  adam: [
    [0.9900000005, -1.9900000003, 0.4900000003],
    [0.9801804937, -1.981707222, 0.4844430175],
    [0.9783061521, -1.9753253294, 0.4793195588],
  ],
  adamw: [
    [0.989000001, -1.9880000005, 0.4895000003],
    [0.9786892058, -1.9833486303, 0.4850083148],
    [0.9811827515, -1.9840922494, 0.4814296055],
  ],
  amsgrad: [
    [0.990000001, -1.9900000005, 0.4900000003],
    [0.9806782058, -1.9873366303, 0.4859978148],
    [0.9841504407, -1.990063598, 0.482905661],
  ],
};

const makers: Record<string, (p: Parameter[]) => Optimizer<BaseHyper>> = {
  sgd: (p) => new SGD(p, { lr: 0.1, weightDecay: 0.01 }),
  sgdMomentum: (p) => new SGD(p, { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }),
  sgdNesterov: (p) => new SGD(p, { lr: 0.1, momentum: 0.9, nesterov: true }),
  adam: (p) => new Adam(p, { lr: 0.01, weightDecay: 0.1 }),
  adamw: (p) => new AdamW(p, { lr: 0.01, weightDecay: 0.1 }),
  amsgrad: (p) => new Adam(p, { lr: 0.01, amsgrad: true }),
};

describe('optimizers follow PyTorch update equations', () => {
  for (const [name, make] of Object.entries(makers)) {
    it(name, () => {
      const p = new Parameter(tensor(W0));
      const opt = make([p]);
      GRADS.forEach((g, k) => {
        p.grad = tensor(g);
        opt.step();
        const got = p.toArray();
        EXPECTED[name]![k]!.forEach((e, i) => {
          expect(got[i]).toBeCloseTo(e, 6);
        });
      });
    });
  }

  it('skips parameters without gradients; zeroGrad clears them; groups override defaults', () => {
    const a = new Parameter(tensor([1, 1]));
    const b = new Parameter(tensor([1, 1]));
    const opt = new SGD([{ params: [a] }, { params: [b], lr: 1 }], { lr: 0.1 });
    a.grad = tensor([1, 2]);
    opt.step();
    expect(a.toArray().map((v) => +v.toFixed(6))).toEqual([0.9, 0.8]);
    expect(b.toArray()).toEqual([1, 1]);
    b.grad = tensor([1, 1]);
    opt.zeroGrad();
    expect(a.grad).toBeNull();
    expect(b.grad).toBeNull();
    expect(opt.paramGroups.map((g) => g.lr)).toEqual([0.1, 1]);
  });

  it('validates options and parameters at the boundary', () => {
    const p = new Parameter(tensor([1]));
    expect(() => new SGD([p], { lr: -1 })).toThrow(/SGD: invalid options: lr/);
    expect(() => new SGD([p], { momentum: 0, nesterov: true })).toThrow(/nesterov needs momentum > 0/);
    expect(() => new Adam([p], { betas: [0.9, 1] })).toThrow(/Adam: invalid options: betas\.1/);
    expect(() => new SGD([], {})).toThrow(/empty parameter list/);
    expect(() => new SGD([p.mul(2)])).toThrow(/not a leaf/);
    expect(() => new SGD([{ params: [p] }, { params: [p] }])).toThrow(/more than one parameter group/);
  });

  it('state dict round trip resumes identically (also through the file format)', () => {
    const run = (resume: boolean) => {
      const p = new Parameter(tensor(W0));
      let opt = new Adam([p], { lr: 0.01 });
      p.grad = tensor(GRADS[0]!);
      opt.step();
      if (resume) {
        const sd = optimizerStateFromStateDict(
          deserializeStateDict(serializeStateDict(optimizerStateToStateDict(opt.stateDict()))),
        );
        opt = new Adam([p], { lr: 0.5 });
        opt.loadStateDict(sd);
        expect(opt.paramGroups[0]!.lr).toBe(0.01);
      }
      for (const g of GRADS.slice(1)) {
        p.grad = tensor(g);
        opt.step();
      }
      return p.toArray();
    };
    expect(run(true)).toEqual(run(false));
    const opt = new SGD([new Parameter(tensor([1]))], { lr: 0.1 });
    expect(() => opt.loadStateDict({ version: 1, state: {}, paramGroups: [] })).toThrow(
      /0 parameter groups, optimizer has 1/,
    );
  });
});

describe('LR schedulers', () => {
  const optWith = (lr: number) => new SGD([new Parameter(tensor([0]))], { lr });
  const trace = (s: { getLastLr(): number[]; step(): void }, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      out.push(s.getLastLr()[0]!);
      s.step();
    }
    return out;
  };

  it('StepLR decays by gamma every stepSize steps', () => {
    const opt = optWith(1);
    const s = new StepLR(opt, { stepSize: 2, gamma: 0.5 });
    expect(trace(s, 6)).toEqual([1, 1, 0.5, 0.5, 0.25, 0.25]);
    expect(opt.paramGroups[0]!.lr).toBe(0.125);
  });

  it('CosineAnnealingLR follows the closed form', () => {
    const s = new CosineAnnealingLR(optWith(0.1), { tMax: 4, etaMin: 0.01 });
    const expected = [0.1, 0.0868198052, 0.055, 0.0231801948, 0.01];
    trace(s, 5).forEach((v, i) => {
      expect(v).toBeCloseTo(expected[i]!, 9);
    });
    expect(s.lrAt(2)[0]).toBeCloseTo(0.055, 12);
  });

  it('LinearWarmup ramps then hands over to the wrapped schedule', () => {
    const opt = optWith(0.1);
    const cosine = new CosineAnnealingLR(opt, { tMax: 4 });
    const s = new LinearWarmup(opt, { warmupSteps: 2, after: cosine });
    const expected = [0, 0.05, 0.1, 0.0853553391, 0.05, 0.0146446609, 0];
    trace(s, 7).forEach((v, i) => {
      expect(v).toBeCloseTo(expected[i]!, 9);
    });
    const plain = new LinearWarmup(optWith(1), { warmupSteps: 4, startFactor: 0.2 });
    expect(trace(plain, 6).map((v) => +v.toFixed(9))).toEqual([0.2, 0.4, 0.6, 0.8, 1, 1]);
  });

  it('scheduler state dict restores the position', () => {
    const opt = optWith(1);
    const s = new StepLR(opt, { stepSize: 1, gamma: 0.5 });
    s.step();
    s.step();
    const sd = s.stateDict();
    const opt2 = optWith(1);
    const s2 = new StepLR(opt2, { stepSize: 1, gamma: 0.5 });
    s2.loadStateDict(sd);
    expect(s2.getLastLr()).toEqual([0.25]);
    expect(opt2.paramGroups[0]!.lr).toBe(0.25);
  });
});

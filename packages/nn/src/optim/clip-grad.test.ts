import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Parameter } from '../parameter.js';
import { clipGradNorm, clipGradValue, NonfiniteGradientError } from './clip-grad.js';
import { SGD } from './sgd.js';

// Gradients and results printed by packages/nn/scripts/clip-grad-reference.py (PyTorch 1.13,
// torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on float32 gradients). The third parameter has
// no gradient. Non-finite numbers are the strings 'inf' / 'nan'.
const GRADS: (number[] | null)[] = [[0.5, -1.25, 2.0, 0.75, -0.125, 3.5], [-4.0, 0.25, 1.5, -0.0625], null, [2.25]];
const SHAPES = [[2, 3], [4], [2], [1]];
type Num = number | string;
const NORM: { name: string; maxNorm: number; normType: Num; total: number; grads: (number[] | null)[] }[] = [
  {
    name: 'l2 clips',
    maxNorm: 1.0,
    normType: 2.0,
    total: 6.482247352600098,
    grads: [
      [
        0.07713373005390167, -0.19283431768417358, 0.3085349202156067, 0.11570059508085251, -0.019283432513475418,
        0.5399361252784729,
      ],
      [-0.6170698404312134, 0.038566865026950836, 0.23140119016170502, -0.009641716256737709],
      null,
      [0.34710177779197693],
    ],
  },
  {
    name: 'l2 below the limit',
    maxNorm: 100.0,
    normType: 2.0,
    total: 6.482247352600098,
    grads: [[0.5, -1.25, 2.0, 0.75, -0.125, 3.5], [-4.0, 0.25, 1.5, -0.0625], null, [2.25]],
  },
  {
    name: 'inf norm',
    maxNorm: 0.5,
    normType: 'inf',
    total: 4.0,
    grads: [
      [
        0.062499985098838806, -0.1562499701976776, 0.24999994039535522, 0.09374997764825821, -0.015624996274709702,
        0.43749988079071045,
      ],
      [-0.49999988079071045, 0.031249992549419403, 0.18749995529651642, -0.007812498137354851],
      null,
      [0.2812499403953552],
    ],
  },
  {
    name: 'l1',
    maxNorm: 2.0,
    normType: 1.0,
    total: 16.1875,
    grads: [
      [
        0.061776053160429, -0.15444013476371765, 0.247104212641716, 0.09266407787799835, -0.01544401329010725,
        0.4324323832988739,
      ],
      [-0.494208425283432, 0.0308880265802145, 0.1853281557559967, -0.007722006645053625],
      null,
      [0.27799224853515625],
    ],
  },
  {
    name: 'p = 3',
    maxNorm: 0.7,
    normType: 3.0,
    total: 5.093680381774902,
    grads: [
      [
        0.06871258467435837, -0.17178146541118622, 0.27485033869743347, 0.10306887328624725, -0.017178146168589592,
        0.480988085269928,
      ],
      [-0.5497006773948669, 0.034356292337179184, 0.2061377465724945, -0.008589073084294796],
      null,
      [0.30920663475990295],
    ],
  },
  {
    name: 'p = 0.5',
    maxNorm: 10.0,
    normType: 0.5,
    total: 139.34637451171875,
    grads: [
      [
        0.03588180989027023, -0.08970452845096588, 0.14352723956108093, 0.05382271483540535, -0.008970452472567558,
        0.25117266178131104,
      ],
      [-0.28705447912216187, 0.017940904945135117, 0.1076454296708107, -0.004485226236283779],
      null,
      [0.16146814823150635],
    ],
  },
];
const VALUE: { clipValue: number; grads: (number[] | null)[] }[] = [
  {
    clipValue: 0.3,
    grads: [
      [
        0.30000001192092896, -0.30000001192092896, 0.30000001192092896, 0.30000001192092896, -0.125,
        0.30000001192092896,
      ],
      [-0.30000001192092896, 0.25, 0.30000001192092896, -0.0625],
      null,
      [0.30000001192092896],
    ],
  },
  { clipValue: 1.0, grads: [[0.5, -1.0, 1.0, 0.75, -0.125, 1.0], [-1.0, 0.25, 1.0, -0.0625], null, [1.0]] },
  { clipValue: 5.0, grads: [[0.5, -1.25, 2.0, 0.75, -0.125, 3.5], [-4.0, 0.25, 1.5, -0.0625], null, [2.25]] },
];
const NONFINITE: { bad: Num; total: Num; grads: Num[][]; raises: boolean }[] = [
  { bad: 'inf', total: 'inf', grads: [[0.0, 'nan', -0.0], [0.0]], raises: true },
  { bad: 'nan', total: 'nan', grads: [['nan', 'nan', 'nan'], ['nan']], raises: true },
];

const num = (v: Num): number => (typeof v === 'number' ? v : v === 'inf' ? Infinity : v === '-inf' ? -Infinity : NaN);

function makeParams(): Parameter[] {
  return GRADS.map((g, i) => {
    const p = new Parameter(tensor(new Float32Array(SHAPES[i]!.reduce((a, b) => a * b, 1)), SHAPES[i]!));
    if (g) p.grad = tensor(g, SHAPES[i]!);
    return p;
  });
}

function expectGrads(ps: Parameter[], want: (Num[] | null)[]): void {
  ps.forEach((p, i) => {
    const w = want[i];
    if (w === null) {
      expect(p.grad).toBeNull();
      return;
    }
    const got = Array.from(p.grad!.values() as ArrayLike<number>);
    expect(p.grad!.shape).toEqual(SHAPES[i]);
    w!.forEach((e, j) => {
      const x = num(e);
      if (Number.isNaN(x)) expect(got[j]).toBeNaN();
      else expect(Math.abs(got[j]! - x)).toBeLessThanOrEqual(2e-7 * Math.max(1, Math.abs(x)));
    });
  });
}

/** The total norm computed directly: all gradient entries in one vector. */
function directNorm(grads: number[][], p: number): number {
  const all = grads.flat().map(Math.abs);
  if (p === Infinity) return Math.max(...all);
  return all.reduce((a, v) => a + v ** p, 0) ** (1 / p);
}

describe('clipGradNorm', () => {
  for (const c of NORM) {
    it(`matches PyTorch: ${c.name}`, () => {
      const ps = makeParams();
      const total = clipGradNorm(ps, c.maxNorm, num(c.normType));
      expect(Math.abs(total - c.total)).toBeLessThanOrEqual(1e-6 * c.total);
      expectGrads(ps, c.grads);
    });
  }

  it('returns the direct norm and leaves the clipped gradients at maxNorm (random gradients, several p)', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed / 2 ** 31) * 2 - 1;
    };
    for (const p of [1, 2, 3, 0.5, Infinity]) {
      const raw = [12, 5, 30].map((n) => Array.from({ length: n }, () => Math.fround(rand() * 3)));
      const ps = raw.map((g) => {
        const t = new Parameter(tensor(new Float32Array(g.length)));
        t.grad = tensor(g);
        return t;
      });
      const want = directNorm(raw, p);
      const maxNorm = want / 4;
      expect(clipGradNorm(ps, maxNorm, p)).toBeCloseTo(want, 9);
      const after = directNorm(
        ps.map((t) => Array.from(t.grad!.values() as ArrayLike<number>)),
        p,
      );
      expect(Math.abs(after - maxNorm)).toBeLessThan(1e-5 * maxNorm);
    }
  });

  it('accepts one tensor and returns 0 when no parameter has a gradient', () => {
    const p = new Parameter(tensor([3, 4]));
    expect(clipGradNorm([p, new Parameter(tensor([1]))], 1)).toBe(0);
    p.grad = tensor([3, 4]);
    expect(clipGradNorm(p, 1)).toBeCloseTo(5, 12);
    expect(Array.from(p.grad.values())).toEqual([Math.fround(3 / (5 + 1e-6)), Math.fround(4 / (5 + 1e-6))]);
  });

  it('scales a gradient shared by two parameters once for each (the gradient is replaced, not written in place)', () => {
    const g = tensor([3, 4]);
    const a = new Parameter(tensor([0, 0]));
    const b = new Parameter(tensor([0, 0]));
    a.grad = g;
    b.grad = g;
    expect(clipGradNorm([a, b], 1)).toBeCloseTo(Math.sqrt(50), 12);
    const k = 1 / (Math.sqrt(50) + 1e-6);
    expect(a.grad!.values()[0]).toBeCloseTo(3 * k, 6);
    expect(b.grad!.values()[0]).toBeCloseTo(3 * k, 6);
    expect(Array.from(g.values())).toEqual([3, 4]);
  });

  for (const c of NONFINITE) {
    it(`a ${c.bad} gradient: scales like PyTorch, or throws NonfiniteGradientError with errorIfNonfinite`, () => {
      const make = () => {
        const p = new Parameter(tensor([0, 0, 0]));
        p.grad = tensor([1, num(c.bad), -2]);
        const q = new Parameter(tensor([0]));
        q.grad = tensor([3]);
        return [p, q];
      };
      const ps = make();
      const total = clipGradNorm(ps, 1);
      if (Number.isNaN(num(c.total))) expect(total).toBeNaN();
      else expect(total).toBe(num(c.total));
      ps.forEach((p, i) => {
        c.grads[i]!.forEach((e, j) => {
          const x = num(e);
          if (Number.isNaN(x)) expect(p.grad!.values()[j]).toBeNaN();
          else expect(p.grad!.values()[j]).toBe(x);
        });
      });
      expect(c.raises).toBe(true);
      const fresh = make();
      let err: unknown;
      try {
        clipGradNorm(fresh, 1, 2, { errorIfNonfinite: true });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(NonfiniteGradientError);
      expect((err as NonfiniteGradientError).parameters).toEqual([0]);
      expect((err as Error).message).toMatch(/non-finite values in the gradients of parameters 0/);
      expect(Array.from(fresh[1]!.grad!.values())).toEqual([3]);
    });
  }

  it('rejects bad arguments with typed errors', () => {
    const p = new Parameter(tensor([1]));
    p.grad = tensor([1]);
    expect(() => clipGradNorm([p], -1)).toThrow(/maxNorm must be a number >= 0/);
    expect(() => clipGradNorm([p], 1, 0)).toThrow(/normType must be a positive number or Infinity/);
    expect(() => clipGradNorm([p], 1, 2, { errorIfNonFinite: true } as never)).toThrow(/invalid options/);
    p.grad = tensor([1, 2]);
    expect(() => clipGradNorm([p], 1)).toThrow(/gradient of parameters\[0\] is \[2\], the parameter \[1\]/);
  });

  it('keeps an SGD step bounded: the update has norm lr·maxNorm', () => {
    const p = new Parameter(tensor([0, 0, 0]));
    p.grad = tensor([300, -400, 1200]);
    const opt = new SGD([p], { lr: 0.1 });
    clipGradNorm([p], 2);
    opt.step();
    expect(Math.hypot(...(p.toArray() as number[]))).toBeCloseTo(0.2, 6);
  });
});

describe('clipGradValue', () => {
  for (const c of VALUE) {
    it(`matches PyTorch: clipValue ${c.clipValue}`, () => {
      const ps = makeParams();
      clipGradValue(ps, c.clipValue);
      expectGrads(ps, c.grads);
    });
  }

  it('rejects a negative clipValue', () => {
    expect(() => clipGradValue([], -0.5)).toThrow(/clipValue must be a number >= 0/);
  });
});

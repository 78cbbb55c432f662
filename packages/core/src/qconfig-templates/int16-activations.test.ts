import { namedFakeQuants } from '@qtk/fake-quant';
import { marches, QConfigError } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import {
  activationFakeQuantOf,
  defaultQconfigSetter,
  int16ActivationSetter,
  prepareQatFx,
  type QatModule,
} from '../index.js';
import { ResidualSigmoidNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };

describe('int16ActivationSetter', () => {
  it('on bayes every activation fake-quant is int16, weights stay int8, the high-precision output stays', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), int16ActivationSetter()],
      ...quiet,
    });
    const fqs = namedFakeQuants(gm);
    const weights = fqs.filter(([name]) => name.endsWith('weightFakeQuant'));
    const activations = fqs.filter(([name]) => !name.endsWith('weightFakeQuant'));
    expect(weights.map(([n]) => n).sort()).toEqual([
      '_generated_add_0.weightFakeQuant',
      'conv2.weightFakeQuant',
      'fc.weightFakeQuant',
      'relu0.weightFakeQuant',
    ]);
    expect(weights.every(([, f]) => f.calculateQparams().dtype === 'qint8')).toBe(true);
    // quant, relu0, add, conv2, act, pool
    expect(activations).toHaveLength(6);
    expect(activations.map(([n, f]) => [n, f.calculateQparams().dtype, f.calculateQparams().quantMax])).toEqual(
      activations.map(([n]) => [n, 'qint16', 32767]),
    );
    expect(activationFakeQuantOf(gm, 'fc')).toBeNull();
    expect((gm.getSubmodule('fc') as QatModule).weightFakeQuant).not.toBeNull();
  });

  it('alone (over the base qconfigDict) the fc is int16 too: the template changes dtypes, not which outputs are high precision', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [int16ActivationSetter()],
      ...quiet,
    });
    expect(activationFakeQuantOf(gm, 'fc')?.dtype).toBe('qint16');
  });

  it('on bernoulli2 (int8 only) it is a QConfigError naming the template and the march', () => {
    let error: unknown;
    try {
      prepareQatFx(new ResidualSigmoidNet().eval(), {
        march: 'bernoulli2',
        qconfigSetter: [int16ActivationSetter()],
        ...quiet,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(QConfigError);
    expect((error as Error).message).toMatch(/int16ActivationSetter: march 'bernoulli2' has no qint16 activations/);
  });

  it('an op the march limits to int8 keeps int8, with a warning naming it', () => {
    const bayes = marches.get('bayes');
    const ops = bayes.capabilities.ops.map((o) => (o.op === 'Sigmoid' ? { ...o, dtypes: ['qint8'] as ['qint8'] } : o));
    const march = { ...bayes, id: 'bayes-int8-sigmoid', capabilities: { ...bayes.capabilities, ops } };
    const warnings: string[] = [];
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march,
      qconfigSetter: [defaultQconfigSetter(), int16ActivationSetter()],
      onWarning: (m) => warnings.push(m),
    });
    expect(activationFakeQuantOf(gm, 'act')?.dtype).toBe('qint8');
    expect(activationFakeQuantOf(gm, 'conv2')?.dtype).toBe('qint16');
    expect(warnings).toContain(
      "int16ActivationSetter: march 'bayes-int8-sigmoid' runs these ops at other dtypes only, they keep theirs: act (Sigmoid: qint8)",
    );
  });
});

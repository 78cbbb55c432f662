import { QConfigError } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import {
  activationFakeQuantOf,
  checkSensitivityTable,
  defaultQconfigSetter,
  prepareQatFx,
  SensitivityTableError,
  type SensitivityTableV1,
  sensitivitySetter,
} from '../index.js';
import { ResidualSigmoidNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };
const QUANTIZED = ['quant', 'relu0', '_generated_add_0', 'conv2', 'act', 'pool'];

// most sensitive first, as `qtk sensitivity` writes it
const table: SensitivityTableV1 = {
  version: 1,
  metric: 'cosine',
  march: 'bayes',
  nodes: [
    { name: 'act', sensitivity: 0.31, op: 'Sigmoid' },
    { name: '_generated_add_0', sensitivity: 0.12, op: 'Conv' },
    { name: 'pool', sensitivity: 0.05, op: 'AdaptiveAveragePool' },
    { name: 'relu0', sensitivity: 0.01, op: 'Conv' },
    { name: 'conv2', sensitivity: null, op: 'Conv' },
  ],
};

const dtypes = (gm: ReturnType<typeof prepareQatFx>) =>
  Object.fromEntries(QUANTIZED.map((n) => [n, activationFakeQuantOf(gm, n)?.dtype ?? null]));

describe('sensitivitySetter', () => {
  it('gives the top-k nodes int16 activations and leaves the others int8', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(table, { topK: 2 })],
      ...quiet,
    });
    expect(dtypes(gm)).toEqual({
      quant: 'qint8',
      relu0: 'qint8',
      _generated_add_0: 'qint16',
      conv2: 'qint8',
      act: 'qint16',
      pool: 'qint8',
    });
    expect(activationFakeQuantOf(gm, 'fc')).toBeNull();
  });

  it('picks by sensitivity value, not table order, and never a node that was not measured', () => {
    const shuffled: SensitivityTableV1 = { version: 1, nodes: [...table.nodes].reverse() };
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(shuffled, { topK: 5 })],
      ...quiet,
    });
    // four measured nodes, conv2 (null) stays int8
    expect(dtypes(gm)).toEqual({
      quant: 'qint8',
      relu0: 'qint16',
      _generated_add_0: 'qint16',
      conv2: 'qint8',
      act: 'qint16',
      pool: 'qint16',
    });
    const none = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(table, { topK: 0 })],
      ...quiet,
    });
    expect(Object.values(dtypes(none)).every((d) => d === 'qint8')).toBe(true);
  });

  it('a table naming nodes the model does not have is an error listing them', () => {
    const stale: SensitivityTableV1 = {
      version: 1,
      nodes: [
        { name: 'act', sensitivity: 0.3 },
        { name: 'layer4_conv', sensitivity: 0.2 },
        { name: 'head', sensitivity: 0.1 },
      ],
    };
    let error: unknown;
    try {
      prepareQatFx(new ResidualSigmoidNet().eval(), {
        march: 'bayes',
        qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(stale, { topK: 1 })],
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SensitivityTableError);
    expect(error).toBeInstanceOf(QConfigError);
    expect((error as SensitivityTableError).unknownNodes).toEqual(['layer4_conv', 'head']);
    expect((error as Error).message).toMatch(
      /names nodes the model does not have: layer4_conv, head; the model's nodes are quant, relu0/,
    );
  });

  it('rejects malformed tables and a bad topK when the setter is made', () => {
    expect(() => checkSensitivityTable({ version: 2, nodes: [] })).toThrow(SensitivityTableError);
    expect(() => checkSensitivityTable({ version: 1, nodes: [{ name: 'act', sensitivity: Number.NaN }] })).toThrow(
      /nodes\.0\.sensitivity/,
    );
    expect(() => checkSensitivityTable({ version: 1, nodes: [{ name: 'act' }] })).toThrow(
      /nodes\.0\.sensitivity: Required/,
    );
    expect(() =>
      checkSensitivityTable({
        version: 1,
        nodes: [
          { name: 'act', sensitivity: 1 },
          { name: 'act', sensitivity: 0 },
        ],
      }),
    ).toThrow(/'act' is listed twice/);
    // JSON round trip: what a file holds is accepted as is, with fields a writer added
    expect(checkSensitivityTable(JSON.parse(JSON.stringify(table)))).toEqual(table);
    const extended = { ...table, budget: 2, nodes: table.nodes.map((n) => ({ ...n, int16Sensitivity: 0.01 })) };
    expect(checkSensitivityTable(extended)).toEqual(extended);
    expect(() => sensitivitySetter(table, { topK: 1.5 })).toThrow(InvalidArgumentError);
    expect(() => sensitivitySetter(table, { topK: -1 })).toThrow(InvalidArgumentError);
  });

  it('asking int16 on bernoulli2 is a QConfigError naming the template', () => {
    expect(() =>
      prepareQatFx(new ResidualSigmoidNet().eval(), {
        march: 'bernoulli2',
        qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(table, { topK: 2 })],
      }),
    ).toThrow(/sensitivitySetter: march 'bernoulli2' has no qint16 activations/);
  });
});

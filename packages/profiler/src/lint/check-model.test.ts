import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { Conv3d } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { checkModel } from './check-model.js';
import type { Finding } from './lint-findings.js';
import {
  CpuEndsNet,
  NestedSeluNet,
  NoDeQuantNet,
  SeluNet,
  SharedConvNet,
  SharedNormNet,
  TinyResNet,
  UnfusedNet,
} from '@qtk/test-models';

const FUSE = { kind: 'fuse', hint: 'nothing to do: prepareQatFx fuses this chain' };
const brief = (findings: readonly Finding[]) => findings.map((f) => [f.code, f.severity, f.node, f.fix]);
/** The brief of the finding that the output layer `node` is not high precision, and its qconfig fix. */
const outputNotHighPrecision = (node: string) => [
  'output-not-high-precision',
  'warning',
  node,
  { kind: 'qconfig', qconfigDict: { moduleName: { [node]: 'high-precision-output' } } },
];

describe('checkModel', () => {
  it('finds the chains prepare fuses and the output layer that is not high precision', () => {
    const result = checkModel(new UnfusedNet(), { march: 'bayes' });
    expect(brief(result.findings)).toEqual([
      outputNotHighPrecision('fc'),
      ['unfused-pattern', 'info', 'relu0', FUSE],
      ['unfused-pattern', 'info', '_generated_add_0', FUSE],
    ]);
    expect(result.counts).toEqual({ error: 0, warning: 1, info: 2 });
    expect(result.findings[1]!.message).toBe(
      "conv0 → bn0 → relu0 matches 'conv2d_bn_relu'; prepareQatFx fuses it into 'relu0'",
    );
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('names a shared conv and the chains it keeps unfused (the BatchNorm left alone runs on the BPU as a depthwise conv)', () => {
    const result = checkModel(new SharedConvNet(), { march: 'bayes' });
    const ownConv = { kind: 'code', hint: "give each call of 'conv' its own Conv2d so the chain can fuse" };
    expect(brief(result.findings)).toEqual([
      ['fusion-blocked', 'warning', 'conv', ownConv],
      ['fusion-blocked', 'warning', 'conv', ownConv],
      [
        'shared-module',
        'warning',
        'conv',
        { kind: 'code', hint: "give each call of 'conv' its own Conv2d (same weights if it must be shared)" },
      ],
    ]);
    expect(result.findings[2]!.message).toContain("'conv' (Conv2d) is called 2 times (nodes conv, conv_1)");
  });

  it('warns when a shared BatchNorm breaks both conv-bn patterns (the unfused BatchNorm itself converts)', () => {
    const result = checkModel(new SharedNormNet(), { march: 'bayes' });
    expect(result.findings.map((f) => [f.code, f.node])).toEqual([
      ['fusion-blocked', 'bn'],
      ['fusion-blocked', 'bn'],
      ['shared-module', 'bn'],
    ]);
    expect(result.findings[0]!.message).toBe(
      "conv0 → bn ('conv2d_bn') is not fused: the BatchNorm 'bn' is also called outside this chain, so it cannot be folded into 'conv0'",
    );
  });

  it('finds a missing DeQuantStub', () => {
    const result = checkModel(new NoDeQuantNet(), { march: 'bayes' });
    expect(brief(result.findings)).toEqual([
      [
        'missing-dequant-stub',
        'warning',
        'conv1',
        { kind: 'code', hint: 'add a DeQuantStub to the model and return dequant(conv1(...))' },
      ],
      outputNotHighPrecision('conv1'),
      ['unfused-pattern', 'info', 'relu', FUSE],
    ]);
  });

  it("the verdict is the march converter's: bernoulli2 converts a global pool it lists no AdaptiveAveragePool for", () => {
    // bernoulli2's table lists no AdaptiveAveragePool; its conversion takes TinyResNet's global pool as an
    // AveragePool (windows checked against that op's limit of 7 when it runs), so the check finds nothing there
    const small = rand([2, 3, 4, 4], { low: -1, high: 1, generator: new Generator(1) });
    for (const exampleInputs of [undefined, small]) {
      const findings = checkModel(new TinyResNet(), {
        march: 'bernoulli2',
        ...(exampleInputs ? { exampleInputs } : {}),
      }).findings;
      expect(findings.filter((f) => f.node === 'pool')).toEqual([]);
      expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
    }
    // an op the conversion cannot take stays an error
    const selu = checkModel(new SeluNet(), { march: 'bernoulli2', exampleInputs: small }).findings[0]!;
    expect([selu.code, selu.severity, selu.node]).toEqual(['unsupported-op', 'error', 'selu']);
  });

  it('finds the SELU bernoulli2 cannot run, an error unless hybrid mode puts it on the CPU', () => {
    const selu = ['unsupported-op', 'error', 'selu', { kind: 'hybrid', hybridDict: { moduleName: ['selu'] } }];
    expect(brief(checkModel(new SeluNet(), { march: 'bernoulli2' }).findings)[0]).toEqual(selu);
    expect(checkModel(new SeluNet(), { march: 'bernoulli2' }).findings[0]!.message).toBe(
      "'selu' (SELU) cannot run on march 'bernoulli2': op 'Selu' is not in the capability table; keep it on the CPU with prepareQatFx's hybrid mode",
    );
    expect(checkModel(new SeluNet(), { march: 'bernoulli2', hybrid: true }).findings[0]!.severity).toBe('info');
    // a hybridDict entry that already keeps it on the CPU settles it
    const covered = checkModel(new SeluNet(), {
      march: 'bernoulli2',
      hybrid: true,
      hybridDict: { moduleName: ['selu'] },
    });
    expect(covered.findings.map((f) => f.code)).toEqual(['output-not-high-precision']);
  });

  it('finds a missing QuantStub and the ops at both ends of a model without stubs', () => {
    const result = checkModel(new CpuEndsNet(29), { march: 'bernoulli2' });
    expect(brief(result.findings)).toEqual([
      ['missing-quant-stub', 'error', 'x', { kind: 'prepare-option', option: { inputQuantStubs: true } }],
      [
        'missing-dequant-stub',
        'warning',
        'hswish',
        { kind: 'code', hint: 'add a DeQuantStub to the model and return dequant(hswish(...))' },
      ],
      ['unsupported-op', 'error', 'selu', { kind: 'hybrid', hybridDict: { moduleName: ['selu'] } }],
      ['unsupported-op', 'error', 'hswish', { kind: 'hybrid', hybridDict: { moduleName: ['hswish'] } }],
      ['unfused-pattern', 'info', 'relu', FUSE],
      ['unfused-pattern', 'info', '_generated_add_0', FUSE],
    ]);
  });

  it('finds qconfig names and types that match no module, suggesting the close name', () => {
    const result = checkModel(new TinyResNet(), {
      march: 'bayes',
      qconfigDict: {
        global: defaultQatQconfig,
        moduleName: { fc1: defaultQatOutQconfig },
        moduleType: [[Conv3d, null]],
      },
    });
    expect(brief(result.findings).slice(0, 3)).toEqual([
      [
        'unknown-qconfig-name',
        'error',
        'fc1',
        { kind: 'qconfig', qconfigDict: { moduleName: { fc: { renamedFrom: 'fc1' } } } },
      ],
      ['unused-qconfig-type', 'info', 'Conv3d', { kind: 'qconfig', qconfigDict: { moduleType: { Conv3d: 'remove' } } }],
      // the typo left fc with the global qconfig
      outputNotHighPrecision('fc'),
    ]);
    expect(result.findings[0]!.message).toContain("did you mean 'fc'?");
    const far = checkModel(new TinyResNet(), { march: 'bayes', qconfigDict: { moduleName: { backbone: null } } });
    expect(far.findings[0]!.fix).toEqual({ kind: 'qconfig', qconfigDict: { moduleName: { backbone: 'remove' } } });
  });

  it('names modules inside submodules by path, and sends a functional op to the CPU with hybrid mode', () => {
    const options = {
      march: 'bernoulli2',
      qconfigDict: { global: defaultQatQconfig, moduleName: { 'block.conv': null } },
    };
    const result = checkModel(new NestedSeluNet(), options);
    expect(brief(result.findings)).toEqual([
      ['unsupported-op', 'error', 'selu', { kind: 'prepare-option', option: { hybrid: true } }],
      outputNotHighPrecision('fc'),
      ['unfused-pattern', 'info', 'block.relu', FUSE],
    ]);
    expect(result.findings[0]!.message).toBe(
      "'selu' (selu) cannot run on march 'bernoulli2': op 'Selu' is not in the capability table; prepareQatFx's hybrid mode runs it on the CPU",
    );
    expect(checkModel(new NestedSeluNet(), { ...options, hybrid: true }).findings.map((f) => f.code)).toEqual([
      'output-not-high-precision',
      'unfused-pattern',
    ]);
  });
});

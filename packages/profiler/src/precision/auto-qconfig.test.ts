import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { calibrate, prepareQatFx, type QatModule, setFakeQuantize } from '@qtk/core';
import { checkDeployDevice, hybridPartitioner } from '@qtk/hybrid';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { autoQconfig } from './auto-qconfig.js';
import { outputScorer } from './output-score.js';
import { TinyResNet } from '@qtk/test-models';
import { calib, evalSet, saturatedAddDict } from '../testing/saturated-add.js';

describe('autoQconfig', () => {
  it('bayes: one int16 node (the saturating layer) recovers most of the loss; the returned dict reproduces the score', () => {
    const model = new TinyResNet();
    const r = autoQconfig(model, { march: 'bayes', calib, eval: evalSet, budget: 1, qconfigDict: saturatedAddDict });
    expect(r.mode).toBe('int16');
    expect(r.chosen.map((c) => c.name)).toEqual(['_generated_add_0']);
    expect(r.budget).toEqual({ nodes: 1, transitions: null });
    const { float, int8, measured } = r.scores;
    expect(measured!).toBeGreaterThan(int8!);
    expect(measured! - int8!).toBeGreaterThan(0.5 * (float! - int8!)); // at least half the loss back
    expect(r.scores.predicted).toBeCloseTo(int8! + r.chosen[0]!.gain, 12);

    // the user's path: prepare with the returned dict, calibrate, score
    const prepared = prepareQatFx(model, r.qconfigDict, { march: 'bayes', onWarning: () => {} });
    const raised = prepared.getSubmodule('_generated_add_0') as QatModule;
    expect(raised.activationPostProcess!.dtype).toBe('qint16');
    expect((prepared.getSubmodule('relu0') as QatModule).activationPostProcess!.dtype).toBe('qint8');
    calibrate(prepared, calib);
    setFakeQuantize(prepared, 'VALIDATION');
    expect(outputScorer(model, evalSet, 'cosine').score(prepared)).toBe(measured);
    const json = JSON.parse(JSON.stringify({ ...r, qconfigDict: undefined }));
    expect(json.chosen[0].name).toBe('_generated_add_0');
  });

  it('respects a larger node budget and stops raising nodes that do not help', () => {
    const r = autoQconfig(new TinyResNet(), {
      march: 'bayes',
      calib,
      eval: evalSet,
      budget: 3,
      qconfigDict: saturatedAddDict,
    });
    expect(r.chosen.length).toBeLessThanOrEqual(3);
    expect(r.chosen[0]!.name).toBe('_generated_add_0');
    for (let i = 1; i < r.chosen.length; i++)
      expect(r.chosen[i]!.scoreAfter!).toBeGreaterThan(r.chosen[i - 1]!.scoreAfter!);
    expect(r.quantizableNodes).toBe(6);
  });

  it('bernoulli2 hybrid: sends the saturating layer to the CPU through hybridDict within a transition budget', () => {
    const model = new TinyResNet();
    const prepare = { hybrid: true, partitioner: hybridPartitioner };
    const r = autoQconfig(model, {
      march: 'bernoulli2',
      calib,
      eval: evalSet,
      prepare,
      budget: { nodes: 2, transitions: 2 },
      qconfigDict: saturatedAddDict,
    });
    expect(r.mode).toBe('cpu');
    expect(r.chosen[0]!.name).toBe('_generated_add_0');
    expect(r.hybridDict!.moduleName).toEqual(r.chosen.map((c) => c.name));
    expect(r.scores.measured! - r.scores.int8!).toBeGreaterThan(0.5 * (r.scores.float! - r.scores.int8!));
    const prepared = prepareQatFx(model, r.qconfigDict, {
      march: 'bernoulli2',
      hybrid: true,
      partitioner: hybridPartitioner,
      hybridDict: r.hybridDict!,
      onWarning: () => {},
    });
    const report = checkDeployDevice(prepared);
    for (const c of r.chosen) expect(report.nodes.find((n) => n.name === c.name)?.device).toBe('CPU');
    expect(report.transitions).toBe(r.transitions.final);
    expect(report.transitions - r.transitions.int8!).toBeLessThanOrEqual(2);
  });

  it('a transition budget of 0 keeps every choice that would add a CPU↔BPU transition out', () => {
    const r = autoQconfig(new TinyResNet(), {
      march: 'bernoulli2',
      calib,
      eval: evalSet,
      prepare: { hybrid: true, partitioner: hybridPartitioner },
      budget: { transitions: 0 },
      qconfigDict: saturatedAddDict,
    });
    expect(r.transitions.final).toBeLessThanOrEqual(r.transitions.int8!);
    expect(r.rejected.some((x) => /added transitions > budget 0/.test(x.reason))).toBe(true);
  });

  it('says what is wrong with a budget or a mode', () => {
    expect(() => autoQconfig(new TinyResNet(), { march: 'bayes', calib, budget: {} })).toThrow(/give a budget/);
    expect(() => autoQconfig(new TinyResNet(), { march: 'bayes', calib, budget: -1 })).toThrow(InvalidArgumentError);
    expect(() => autoQconfig(new TinyResNet(), { march: 'bernoulli2', calib, budget: 1, mode: 'int16' })).toThrow(
      /no int16 activations; use mode 'cpu'.*\(bayes\)/,
    );
  });
});

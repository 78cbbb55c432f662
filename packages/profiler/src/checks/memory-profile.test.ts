import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import type { FixedConv } from '@qtk/fixed-point';
import { subAt } from '@qtk/ir';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { memoryProfile } from './memory-profile.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

// TinyResNet on [1, 3, 8, 8]: 8-channel maps hold 512 values, conv2's 16-channel map 1024.
const shape = [1, 3, 8, 8];
const bytesOf = (r: ReturnType<typeof memoryProfile>, name: string) => r.nodes.find((n) => n.name === name)!;

describe('memoryProfile', () => {
  const { float, calibrated, fixed } = stagesOf(new TinyResNet(), 'bayes');

  it('float: float32 outputs, the residual keeps relu0 alive, the peak is relu0 + conv1 + bn1 while bn1 runs', () => {
    const r = memoryProfile(float, shape);
    expect(r.version).toBe(1);
    expect(bytesOf(r, 'x').activationBytes).toBe(3 * 64 * 4);
    expect(bytesOf(r, 'conv0').activationBytes).toBe(512 * 4);
    expect(bytesOf(r, 'conv2').activationBytes).toBe(1024 * 4);
    // QuantStub in float returns its input: no new storage
    expect(bytesOf(r, 'quant').activationBytes).toBe(0);
    expect(bytesOf(r, 'conv1').liveBytes).toBe(2 * 2048); // relu0 (read again by add) + conv1
    expect(bytesOf(r, 'bn1').liveBytes).toBe(3 * 2048);
    expect(bytesOf(r, 'relu1').liveBytes).toBe(2 * 2048); // relu0 freed after add
    expect(r.peakActivationBytes).toBe(6144);
    expect(r.peakNode).toBe('bn1');
    // conv0: 8·3·3·3 weights + 8 biases; BN: weight, bias, running mean, running var (8 each) + int32 counter
    expect(bytesOf(r, 'conv0').paramBytes).toBe((216 + 8) * 4);
    expect(bytesOf(r, 'bn0').paramBytes).toBe(4 * 8 * 4 + 4);
    const convs = (216 + 8 + 576 + 8 + 128 + 16 + 64 + 4) * 4;
    expect(r.totalParamBytes).toBe(convs + 2 * 132);
    expect(r.totalConstantBytes).toBe(0);
  });

  it('fake quant: the same float32 outputs, fused nodes, and the fake-quant scales among the parameters', () => {
    const r = memoryProfile(calibrated, shape);
    expect(bytesOf(r, 'quant').activationBytes).toBe(768); // the fake-quant's output is a new tensor
    expect(bytesOf(r, 'relu0').activationBytes).toBe(2048);
    expect(r.peakActivationBytes).toBe(2048 + 4096); // _generated_add_0 still alive while conv2 runs
    expect(r.peakNode).toBe('conv2');
    // folded conv weight + bias, 8 weight scales, one activation scale, two `initialized` flags
    expect(bytesOf(r, 'relu0').paramBytes).toBe((216 + 8) * 4 + 8 * 4 + 4 + 2 * 4);
  });

  it('fixed point: int8 outputs take a quarter of the float bytes, the int32 output of fc as many', () => {
    const f = memoryProfile(float, shape);
    const q = memoryProfile(fixed, shape);
    expect(bytesOf(q, 'conv2').activationBytes).toBe(bytesOf(f, 'conv2').activationBytes / 4);
    expect(bytesOf(q, 'relu0').activationBytes).toBe(512);
    expect(bytesOf(q, 'quant').activationBytes).toBe(192);
    expect(bytesOf(q, 'quant').dtype).toBe('qint8');
    expect(bytesOf(q, 'fc').dtype).toBe('qint32');
    expect(bytesOf(q, 'fc').activationBytes).toBe(16);
    expect(q.peakActivationBytes).toBe(512 + 1024);
    expect(q.peakNode).toBe('conv2');
    expect(bytesOf(q, 'relu0').paramBytes).toBe(216); // int8 weight
    const cfg = (subAt(fixed, 'relu0') as FixedConv).config;
    const plan = cfg.requant!;
    expect(bytesOf(q, 'relu0').constantBytes).toBe(
      cfg.bias!.byteLength + plan.pre.byteLength + plan.m.byteLength + plan.n.byteLength + cfg.outScale.byteLength,
    );
    expect(q.totalParamBytes).toBe(216 + 576 + 128 + 64);
    expect(JSON.parse(JSON.stringify(q))).toEqual(q);
  });

  it('given inputs of batch 2 double every activation; the model and its fake-quant states are left as they were', () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const fq = (subAt(s.calibrated, 'conv2') as QatModule).activationPostProcess!;
    fq.setFakeQuantState('CALIBRATION');
    const before = Array.from(fq.scale.values());
    const one = memoryProfile(s.calibrated, shape);
    const two = memoryProfile(s.calibrated, [], { inputs: randomInputs(5, 2) });
    expect(two.nodes.map((n) => n.activationBytes)).toEqual(one.nodes.map((n) => 2 * n.activationBytes));
    expect(two.peakActivationBytes).toBe(2 * one.peakActivationBytes);
    expect(fq.fakeQuantState).toBe('CALIBRATION');
    expect(Array.from(fq.scale.values())).toEqual(before);
  });

  it('rejects a shape that is not a list of non-negative integers', () => {
    expect(() => memoryProfile(float, [1, 3, 8.5, 8])).toThrow(InvalidArgumentError);
  });
});

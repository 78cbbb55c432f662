import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Generator, InvalidArgumentError, type Tensor, tensor, zeros } from '@qtk/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { DataFormatError, StateDictError } from './errors.js';
import { Conv2d } from './layers/conv.js';
import { ModuleDict, ModuleList, Sequential } from './layers/container.js';
import { Linear } from './layers/linear.js';
import { ReLU } from './layers/activation.js';
import { Module } from './module.js';
import { Parameter } from './parameter.js';
import { loadStateDictFile, loadStateDictFileSync, saveStateDict, saveStateDictSync } from './node/state-dict-files.js';
import { deserializeStateDict, serializeStateDict } from './state-dict-file.js';

class WithBuffers extends Module {
  scale = new Parameter(tensor([1, 2, 3]));
  running: Tensor;
  scratch: Tensor;
  count: Tensor;
  constructor() {
    super();
    this.running = this.registerBuffer('running', zeros([3]));
    this.scratch = this.registerBuffer('scratch', zeros([2]), false);
    this.count = this.registerBuffer('count', zeros([], { dtype: 'int32' }));
  }
  forward(x: Tensor): Tensor {
    return x.mul(this.scale);
  }
}

class Block extends Module {
  conv1: Conv2d;
  act = new ReLU();
  extra: WithBuffers;
  constructor(g: Generator) {
    super();
    this.conv1 = new Conv2d(2, 3, 3, { padding: 1, generator: g });
    this.extra = this.registerModule('extra', new WithBuffers());
  }
  forward(x: Tensor): Tensor {
    return this.act.call(this.conv1.call(x));
  }
}

class Net extends Module {
  layer1: Block;
  head: Sequential;
  constructor(seed = 1) {
    super();
    const g = new Generator(seed);
    this.layer1 = new Block(g);
    this.head = new Sequential(
      new Linear(4, 5, { generator: g }),
      new ReLU(),
      new Linear(5, 2, { bias: false, generator: g }),
    );
  }
  forward(x: Tensor): Tensor {
    return this.head.call(x);
  }
}

const tmp = mkdtempSync(join(tmpdir(), 'qtk-nn-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('Module structure', () => {
  it('finds children, qualified module names, parameters and buffers in field order', () => {
    const net = new Net();
    expect(net.namedChildren().map(([n]) => n)).toEqual(['layer1', 'head']);
    expect(net.namedModules().map(([n]) => n)).toEqual([
      '',
      'layer1',
      'layer1.conv1',
      'layer1.act',
      'layer1.extra',
      'head',
      'head.0',
      'head.1',
      'head.2',
    ]);
    expect(net.namedParameters().map(([n]) => n)).toEqual([
      'layer1.conv1.weight',
      'layer1.conv1.bias',
      'layer1.extra.scale',
      'head.0.weight',
      'head.0.bias',
      'head.2.weight',
    ]);
    expect(net.namedBuffers().map(([n]) => n)).toEqual([
      'layer1.extra.running',
      'layer1.extra.scratch',
      'layer1.extra.count',
    ]);
    expect(net.parameters(false)).toEqual([]);
    expect(net.getSubmodule('layer1.conv1')).toBe(net.layer1.conv1);
    expect(net.getSubmodule('head.2')).toBe(net.head.at(-1));
    expect(net.getTensor('head.0.bias')).toBe((net.head.at(0) as Linear).bias);
    expect(() => net.getSubmodule('layer1.nope')).toThrow(
      /layer1 \(Block\) has no child 'nope'; children: conv1, act, extra/,
    );
  });

  it('setSubmodule swaps modules, including inside containers', () => {
    const net = new Net();
    const lin = new Linear(4, 5);
    net.setSubmodule('head.0', lin);
    expect(net.head.at(0)).toBe(lin);
    const r = new ReLU();
    net.setSubmodule('layer1.act', r);
    expect(net.layer1.act).toBe(r);
  });

  it('deduplicates shared parameters and modules', () => {
    const shared = new Linear(2, 2);
    const seq = new Sequential(shared, shared);
    expect(seq.parameters().length).toBe(2);
    expect(seq.namedModules().length).toBe(2);
  });

  it('train/eval propagate, zeroGrad clears, apply visits children first', () => {
    const net = new Net();
    net.eval();
    expect(net.modules().every((m) => !m.training)).toBe(true);
    net.train();
    expect(net.modules().every((m) => m.training)).toBe(true);
    for (const p of net.parameters()) p.grad = zeros(p.shape);
    net.zeroGrad();
    expect(net.parameters().every((p) => p.grad === null)).toBe(true);
    const order: string[] = [];
    net.head.apply((m) => order.push(m.constructor.name));
    expect(order).toEqual(['Linear', 'ReLU', 'Linear', 'Sequential']);
  });

  it('validates registration', () => {
    const m = new WithBuffers();
    expect(() => m.registerBuffer('a.b', zeros([1]))).toThrow(InvalidArgumentError);
    expect(() => m.registerParameter('p', zeros([1]) as Parameter)).toThrow(/expected a Parameter/);
    expect(() => m.registerParameter('running', new Parameter(zeros([1])))).toThrow(/already a buffer/);
  });

  it('containers: ModuleList insert/remove renumber, ModuleDict keeps keys', () => {
    const a = new ReLU();
    const b = new ReLU();
    const c = new ReLU();
    const list = new ModuleList([a, b]);
    list.insert(1, c);
    expect(list.namedChildren()).toEqual([
      ['0', a],
      ['1', c],
      ['2', b],
    ]);
    list.removeAt(0);
    expect(list.namedChildren()).toEqual([
      ['0', c],
      ['1', b],
    ]);
    expect([...list]).toEqual([c, b]);
    const dict = new ModuleDict({ training: a, fc: new Linear(1, 1) });
    expect(dict.keys()).toEqual(['training', 'fc']);
    expect(dict.namedParameters().map(([n]) => n)).toEqual(['fc.weight', 'fc.bias']);
    expect(dict.training).toBe(true);
    expect(() => dict.call()).toThrow(/no forward/);
  });
});

describe('hooks', () => {
  it('runs pre-hooks, forward, hooks in order; replaces args and output; handles remove', () => {
    const log: string[] = [];
    class Rec extends Module {
      forward(x: number): number {
        log.push(`forward(${x})`);
        return x * 10;
      }
    }
    const m = new Rec();
    const h1 = m.registerForwardPreHook((_m, args) => {
      log.push(`pre1(${args[0]})`);
      return [(args[0] as number) + 1];
    });
    m.registerForwardPreHook((_m, args) => void log.push(`pre2(${args[0]})`));
    m.registerForwardHook((_m, args, out) => {
      log.push(`post1(${args[0]}, ${out})`);
      return (out as number) + 5;
    });
    const h4 = m.registerForwardHook((_m, _a, out) => void log.push(`post2(${out})`));
    expect(m.call(1)).toBe(25);
    expect(log).toEqual(['pre1(1)', 'pre2(2)', 'forward(2)', 'post1(2, 20)', 'post2(25)']);
    h1.remove();
    h4.remove();
    log.length = 0;
    expect(m.call(1)).toBe(15);
    expect(log).toEqual(['pre2(1)', 'forward(1)', 'post1(1, 10)']);
  });
});

describe('state dict', () => {
  it('holds parameters and persistent buffers, versioned, and round-trips in place', () => {
    const a = new Net(1);
    const b = new Net(2);
    const sd = a.stateDict();
    expect(sd.version).toBe(1);
    expect(Object.keys(sd.tensors)).toEqual([
      'layer1.conv1.weight',
      'layer1.conv1.bias',
      'layer1.extra.scale',
      'layer1.extra.running',
      'layer1.extra.count',
      'head.0.weight',
      'head.0.bias',
      'head.2.weight',
    ]);
    const wBefore = b.layer1.conv1.weight;
    expect(b.layer1.conv1.weight.toArray()).not.toEqual(a.layer1.conv1.weight.toArray());
    const res = b.loadStateDict(sd);
    expect(res).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect(b.layer1.conv1.weight).toBe(wBefore); // same object, values copied in
    for (const [k, t] of Object.entries(sd.tensors)) expect(b.getTensor(k).toArray()).toEqual(t.toArray());
  });

  it('shares storage by default and snapshots with clone', () => {
    const a = new Linear(2, 2);
    const shared = a.stateDict();
    const snap = a.stateDict({ clone: true });
    a.weight.data[0] = 42;
    expect(shared.tensors.weight!.at(0, 0)).toBe(42);
    expect(snap.tensors.weight!.at(0, 0)).not.toBe(42);
  });

  it('strict load lists every missing and unexpected key and shape mismatch', () => {
    const net = new Net();
    const sd = net.stateDict({ clone: true });
    delete sd.tensors['head.0.bias'];
    delete sd.tensors['layer1.extra.count'];
    sd.tensors['head.9.weight'] = zeros([1]);
    sd.tensors['head.2.weight'] = zeros([3, 5]);
    let err: StateDictError | undefined;
    try {
      net.loadStateDict(sd);
    } catch (e) {
      err = e as StateDictError;
    }
    expect(err).toBeInstanceOf(StateDictError);
    expect(err!.missingKeys).toEqual(['layer1.extra.count', 'head.0.bias']);
    expect(err!.unexpectedKeys).toEqual(['head.9.weight']);
    expect(err!.shapeMismatches).toEqual([{ key: 'head.2.weight', expected: [2, 5], got: [3, 5] }]);
    expect(err!.message).toMatch(/missing keys: layer1\.extra\.count, head\.0\.bias/);
    expect(err!.message).toMatch(/head\.2\.weight \(module \[2, 5\], state dict \[3, 5\]\)/);
  });

  it('non-strict load returns missing/unexpected and loads the rest; shape mismatch still throws', () => {
    const net = new Net(1);
    const other = new Net(3);
    const sd = other.stateDict({ clone: true });
    delete sd.tensors['head.0.bias'];
    sd.tensors.bogus = zeros([1]);
    const res = net.loadStateDict(sd, { strict: false });
    expect(res).toEqual({ missingKeys: ['head.0.bias'], unexpectedKeys: ['bogus'] });
    expect(net.layer1.conv1.weight.toArray()).toEqual(other.layer1.conv1.weight.toArray());
    sd.tensors['head.0.weight'] = zeros([1, 1]);
    expect(() => net.loadStateDict(sd, { strict: false })).toThrow(StateDictError);
  });

  it('rejects an unknown version', () => {
    const net = new Linear(1, 1);
    expect(() => net.loadStateDict({ version: 2, tensors: {} } as never)).toThrow(/unsupported state dict version 2/);
  });

  it('saves and loads files atomically (binary, versioned)', async () => {
    const net = new Net(5);
    const sd = { ...net.stateDict(), metadata: { epoch: 3 } };
    const path = join(tmp, 'net.qtk');
    await saveStateDict(sd, path);
    expect(readdirSync(tmp).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const back = await loadStateDictFile(path);
    expect(back.metadata).toEqual({ epoch: 3 });
    expect(back.tensors['layer1.extra.count']!.dtype).toBe('int32');
    const fresh = new Net(6);
    fresh.loadStateDict(back);
    for (const [k, t] of Object.entries(sd.tensors)) expect(fresh.getTensor(k).toArray()).toEqual(t.toArray());
    saveStateDictSync(sd, path);
    expect(Object.keys(loadStateDictFileSync(path).tensors)).toEqual(Object.keys(sd.tensors));
  });

  it('reports corrupt files clearly', () => {
    const bytes = serializeStateDict(new Linear(3, 2).stateDict());
    expect(() => deserializeStateDict(bytes.subarray(0, bytes.length - 4), 'x.qtk')).toThrow(
      /x\.qtk: corrupted or truncated: the checksum does not match/,
    );
    const bad = join(tmp, 'bad.qtk');
    writeFileSync(bad, 'hello world, not a state dict');
    expect(() => loadStateDictFileSync(bad)).toThrow(DataFormatError);
    const v4 = bytes.slice();
    v4[8] = 4;
    expect(() => deserializeStateDict(v4)).toThrow(
      /unsupported state dict file version 4 \(this build reads versions 1 to 3\); it was written by a newer QTK/,
    );
  });
});

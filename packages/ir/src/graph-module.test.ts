import { FloatFunctional, Identity, Module, ReLU, Sigmoid } from '@qtk/nn';
import { InvalidArgumentError, tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { GraphModule, SubmoduleContainer } from './graph-module.js';
import { symbolicTrace } from './symbolic-trace.js';

class Small extends Module {
  readonly act = new ReLU();
  forward(x: Tensor): Tensor {
    return this.act.call(x).mul(2);
  }
}

const vals = (t: unknown) => Array.from((t as Tensor).values());

describe('GraphModule', () => {
  it('recompiles after graph edits on its next call; module swaps apply without recompiling', () => {
    const gm = symbolicTrace(new Small());
    const x = tensor([-1, 3]);
    expect(vals(gm.call(x))).toEqual([0, 6]);
    gm.setSubmodule('act', new Sigmoid());
    expect(vals(gm.call(tensor([0])))).toEqual([1]);
    gm.setSubmodule('act', new ReLU());
    const mul = gm.graph.node('mul')!;
    mul.updateArg(1, 10);
    expect(vals(gm.call(x))).toEqual([0, 30]);
    gm.graph.insertingAfter(mul, () => {
      const n = gm.graph.callFunction('neg', [mul]);
      mul.replaceAllUsesWith(n);
    });
    expect(vals(gm.call(x))).toEqual([-0, -30]);
  });

  it('adds submodules at new paths, generated names, and deletes them', () => {
    const gm = symbolicTrace(new Small());
    gm.addSubmodule('extra.deep.relu', new ReLU());
    expect(gm.getSubmodule('extra')).toBeInstanceOf(SubmoduleContainer);
    expect(gm.getSubmodule('extra.deep.relu')).toBeInstanceOf(ReLU);
    expect(gm.addGeneratedSubmodule('add', new FloatFunctional())).toBe('_generated_add_0');
    expect(gm.addGeneratedSubmodule('add', new FloatFunctional())).toBe('_generated_add_1');
    const g = gm.graph;
    g.insertingBefore(g.outputNode!, () => {
      const n = g.callModule('_generated_add_1', [g.node('mul')!, g.node('mul')!], {}, { method: 'add' });
      g.outputNode!.args = [n];
    });
    expect(vals(gm.call(tensor([1, -2])))).toEqual([4, 0]);
    expect(gm.deleteSubmodule('extra.deep.relu')).toBe(true);
    expect(gm.deleteSubmodule('extra.deep.relu')).toBe(false);
    expect(gm.deleteSubmodule('nowhere.at.all')).toBe(false);
    expect(() => gm.getSubmodule('extra.deep.relu')).toThrow(/has no child 'relu'/);
  });

  it('adds buffers at new dotted paths beside existing children, making the missing owners', () => {
    const gm = symbolicTrace(new Small());
    gm.addBuffer('consts.table', tensor([1, 2, 3]));
    gm.addBuffer('act.offset', tensor([7]));
    expect(gm.getSubmodule('consts')).toBeInstanceOf(SubmoduleContainer);
    expect(vals((gm.getSubmodule('consts') as unknown as Record<string, unknown>).table)).toEqual([1, 2, 3]);
    expect(gm.getSubmodule('act')).toBeInstanceOf(ReLU);
    expect(vals((gm.getSubmodule('act') as unknown as Record<string, unknown>).offset)).toEqual([7]);
    expect(Object.keys(gm.stateDict().tensors).sort()).toEqual(['act.offset', 'consts.table']);
  });

  it('names the failing node when a step throws, and rejects a wrong number of inputs', () => {
    const gm = symbolicTrace(new Small());
    gm.setSubmodule('act', new Identity());
    gm.graph.node('mul')!.target = 'matmul';
    expect(() => gm.call(tensor([1, 2]))).toThrow(/\[while running graph node 'mul' \(call_method matmul\)\]/);
    expect(() => gm.call()).toThrow(InvalidArgumentError);
  });

  it('reports missing submodules and refuses children whose names it uses itself', () => {
    const g = new Graph();
    g.output(g.callModule('missing', [g.placeholder('x')]));
    const gm = new GraphModule(new SubmoduleContainer(), g);
    expect(() => gm.call(tensor([1]))).toThrow(/no submodule 'missing'/);
    class Clash extends Module {
      readonly graph = new ReLU();
      forward(x: Tensor) {
        return x;
      }
    }
    expect(() => new GraphModule(new Clash(), new Graph())).toThrow(/a child named 'graph'/);
  });

  it('prints its module tree and table', () => {
    const text = symbolicTrace(new Small()).toString();
    expect(text).toBe(
      [
        'GraphModule<Small>(',
        '  (act): ReLU()',
        ')',
        '',
        'opcode       name    target  args      kwargs',
        '-----------  ------  ------  --------  ------',
        'placeholder  x       x       ()        {}',
        'call_module  act     act     (x,)      {}',
        'call_method  mul     mul     (act, 2)  {}',
        'output       output  output  (mul,)    {}',
      ].join('\n'),
    );
  });
});

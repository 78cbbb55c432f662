import { describe, expect, it } from 'vitest';
import { GraphError, GraphValidationError } from './errors.js';
import { Graph } from './graph.js';
import { Node } from './node.js';

/** x → relu → add(relu, x) → output */
function small() {
  const g = new Graph();
  const x = g.placeholder('x');
  const r = g.callFunction('relu', [x]);
  const a = g.callFunction('add', [r, x]);
  const out = g.output(a);
  return { g, x, r, a, out };
}

describe('Graph', () => {
  it('creates nodes in order with unique names derived from targets', () => {
    const g = new Graph();
    const x = g.placeholder('x');
    const c = g.callModule('layer1.conv1', [x]);
    const a1 = g.callFunction('add', [c, x]);
    const a2 = g.callFunction('add', [a1, x]);
    const a3 = g.callMethod('add', [a2, 1]);
    const m = g.callModule('skip', [a3, a3], {}, { method: 'add' });
    const w = g.getAttr('layer1.conv1.weight');
    const r = g.callModule('', [w], {}, { method: 'postProcess' });
    g.output([m, r]);
    expect(g.nodes.map((n) => n.name)).toEqual([
      'x',
      'layer1_conv1',
      'add',
      'add_1',
      'add_2',
      'skip_add',
      'layer1_conv1_weight',
      'postProcess',
      'output',
    ]);
    expect(g.length).toBe(9);
    expect(g.node('add_1')).toBe(a2);
    expect(g.uniqueName('add')).toBe('add_3');
    expect(g.uniqueName('add_1')).toBe('add_3');
    expect(g.uniqueName('9lives.x')).toBe('_9lives_x');
  });

  it('tracks users through args, kwargs and nested structures', () => {
    const { x, r, a, out } = small();
    expect(x.users).toEqual([r, a]);
    expect(r.users).toEqual([a]);
    expect(a.users).toEqual([out]);
    expect(a.inputNodes).toEqual([r, x]);
    a.args = [r, { y: [r, 2] }];
    expect(x.users).toEqual([r]);
    expect(r.users).toEqual([a]);
    a.kwargs = { other: x };
    expect(x.users).toEqual([r, a]);
    expect(a.inputNodes).toEqual([r, x]);
  });

  it('inserts before and after a node, keeping creation order', () => {
    const { g, r } = small();
    const [n1, n2] = g.insertingAfter(r, () => [g.callFunction('neg', [r]), g.callFunction('exp', [r])]);
    const n0 = g.insertingBefore(r, () => g.callFunction('abs', [g.placeholders[0]!]));
    expect(g.nodes.map((n) => n.name)).toEqual(['x', 'abs', 'relu', 'neg', 'exp', 'add', 'output']);
    expect([n0, n1, n2].every((n) => n instanceof Node)).toBe(true);
    g.validate();
    const tail = g.callFunction('sigmoid', [r]);
    expect(g.last).toBe(tail);
  });

  it('replaceAllUsesWith skips the replacement itself, so a node inserted after can keep reading the old one', () => {
    const { g, r, a } = small();
    const n = g.insertingAfter(r, () => g.callFunction('neg', [r]));
    const changed = r.replaceAllUsesWith(n);
    expect(changed).toEqual([a]);
    expect(n.args).toEqual([r]);
    expect(a.args[0]).toBe(n);
    expect(r.users).toEqual([n]);
    g.validate();
  });

  it('erase refuses while a node is used; dead-code elimination removes unused pure chains', () => {
    const { g, x, r, a, out } = small();
    expect(() => g.eraseNode(r)).toThrow(GraphError);
    expect(() => g.eraseNode(r)).toThrow(/still used by add/);
    const dead1 = g.insertingBefore(out, () => g.callFunction('exp', [x]));
    g.insertingBefore(out, () => g.callFunction('neg', [dead1]));
    const impure = g.insertingBefore(out, () => g.callFunction('randn', [[2]]));
    expect(g.eliminateDeadCode()).toBe(true);
    expect(g.nodes.map((n) => n.name)).toEqual(['x', 'relu', 'add', 'randn', 'output']);
    expect(impure.erased).toBe(false);
    expect(dead1.erased).toBe(true);
    expect(g.eliminateDeadCode()).toBe(false);
    out.args = [x];
    g.eliminateDeadCode();
    expect(g.nodes.map((n) => n.name)).toEqual(['x', 'randn', 'output']);
    expect(a.erased && r.erased).toBe(true);
    expect(() => (a.args = [])).not.toThrow();
  });

  it('validate reports every broken invariant', () => {
    const { g, x, a, out } = small();
    g.validate();
    x.append(a); // add now comes before relu, which it reads
    expect(() => g.validate()).toThrow(GraphValidationError);
    try {
      g.validate();
    } catch (e) {
      expect((e as GraphValidationError).problems).toEqual([
        'add reads relu, which comes later (not topological order)',
      ]);
    }
    out.prepend(a);
    g.validate();
    const other = new Graph().placeholder('z');
    expect(() => (a.args = [other])).toThrow(/another graph/);
    expect(() => g.output(x)).toThrow(/already has an output/);
    expect(() => g.callFunction('noSuchFunction', [x])).toThrow(/no traceable function named 'noSuchFunction'/);
  });

  it('renames nodes keeping names unique', () => {
    const { g, r } = small();
    r.name = 'activation';
    expect(g.node('activation')).toBe(r);
    expect(g.node('relu')).toBeUndefined();
    expect(() => (r.name = 'add')).toThrow(/taken/);
    expect(() => (r.name = 'not valid')).toThrow(/identifier/);
  });

  it('prints the FX table and node format', () => {
    const { g, a } = small();
    a.kwargs = { alpha: 0.5, mode: 'fast', list: [1, null, undefined] };
    expect(g.printTabular()).toBe(
      [
        'opcode         name    target  args       kwargs',
        '-------------  ------  ------  ---------  ------------------------------------------------------------',
        'placeholder    x       x       ()         {}',
        'call_function  relu    relu    (x,)       {}',
        "call_function  add     add     (relu, x)  {'alpha': 0.5, 'mode': 'fast', 'list': [1, null, undefined]}",
        'output         output  output  (add,)     {}',
      ].join('\n'),
    );
    expect(a.format()).toBe(
      "%add : [#users=1] = call_function[target=add](args = (%relu, %x), kwargs = {alpha: 0.5, mode: 'fast', list: (1, null, undefined)})",
    );
  });

  it('clones with the same names and independent nodes', () => {
    const { g } = small();
    const { graph, map } = g.clone();
    expect(graph.printTabular()).toBe(g.printTabular());
    const [, r2] = graph.nodes;
    expect(map.get(g.nodes[1]!)).toBe(r2);
    r2!.name = 'changed';
    expect(g.node('relu')).toBeDefined();
    graph.validate();
  });

  it('bumps the version on every edit', () => {
    const { g, r, a } = small();
    const v0 = g.version;
    a.args = [r, r];
    const v1 = g.version;
    expect(v1).toBeGreaterThan(v0);
    r.target = 'neg';
    expect(g.version).toBeGreaterThan(v1);
  });
});

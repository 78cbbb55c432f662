import { deepCopy, Linear, Module, Parameter, ReLU, F } from '@qtk/nn';
import { add, Generator, InvalidArgumentError, linear, ones, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { TraceError } from './errors.js';
import { GraphModule } from './graph-module.js';
import { symbolicTrace } from './symbolic-trace.js';
import { HybridModel, ModelForFusion, TestFuseNet, _SeluModule } from './testing/seed-models.js';

const table = (...lines: string[]) => lines.join('\n');

function expectSame(a: Tensor, b: Tensor) {
  expect(b.shape).toEqual(a.shape);
  expect(Array.from(b.values())).toEqual(Array.from(a.values()));
}

describe('symbolicTrace: horizon_plugin_pytorch models', () => {
  it('ModelForFusion (conv, bn, functional add, relu) traces to the FX table and runs like the eager model', () => {
    const g = new Generator(0);
    const model = new ModelForFusion(g);
    const eager = deepCopy(model);
    const gm = symbolicTrace(model);
    expect(gm.printTabular()).toBe(
      table(
        'opcode         name     target   args          kwargs',
        '-------------  -------  -------  ------------  ------',
        'placeholder    x        x        ()            {}',
        'placeholder    y        y        ()            {}',
        'call_module    quantx   quantx   (x,)          {}',
        'call_module    quanty   quanty   (y,)          {}',
        'call_module    conv     conv     (quantx,)     {}',
        'call_module    bn       bn       (conv,)       {}',
        'call_function  add      add      (bn, quanty)  {}',
        'call_module    relu     relu     (add,)        {}',
        'call_module    dequant  dequant  (relu,)       {}',
        'output         output   output   (dequant,)    {}',
      ),
    );
    const x = randn([2, 3, 6, 6], { generator: g });
    const y = randn([2, 3, 4, 4], { generator: g });
    expectSame(eager.call(x, y), gm.call(x, y)); // training mode: batch statistics, running stats updated
    expectSame(eager.bn.runningMean!, model.bn.runningMean!);
    eager.eval();
    gm.eval();
    expectSame(eager.call(x, y), gm.call(x, y));
    expect(gm.inputNames).toEqual(['x', 'y']);
    expect(Object.keys(gm.stateDict().tensors)).toEqual(Object.keys(model.stateDict().tensors));
  });

  it('TestFuseNet: FloatFunctional ops become call_module nodes with a method; a shared conv appears twice', () => {
    const g = new Generator(1);
    const model = new TestFuseNet(3, g).eval();
    const gm = symbolicTrace(model);
    expect(gm.printTabular()).toBe(
      table(
        'opcode       name              target            args                                kwargs',
        '-----------  ----------------  ----------------  ----------------------------------  ------',
        'placeholder  x                 x                 ()                                  {}',
        'placeholder  y                 y                 ()                                  {}',
        'call_module  quantx            quantx            (x,)                                {}',
        'call_module  quanty            quanty            (y,)                                {}',
        'call_module  convmod1_conv2d   convmod1.conv2d   (quantx,)                           {}',
        'call_module  convmod1_bnMod    convmod1.bnMod    (convmod1_conv2d,)                  {}',
        'call_module  convmod1_add_add  convmod1.add.add  (convmod1_bnMod, quanty)            {}',
        'call_module  convmod1_reluMod  convmod1.reluMod  (convmod1_add_add,)                 {}',
        'call_module  convmod2_conv2d   convmod2.conv2d   (quanty,)                           {}',
        'call_module  convmod2_bnMod    convmod2.bnMod    (convmod2_conv2d,)                  {}',
        'call_module  convmod2_add_add  convmod2.add.add  (convmod2_bnMod, convmod1_reluMod)  {}',
        'call_module  convmod2_reluMod  convmod2.reluMod  (convmod2_add_add,)                 {}',
        'call_module  convmod3_conv2d   convmod3.conv2d   (convmod2_reluMod,)                 {}',
        'call_module  convmod3_bnMod    convmod3.bnMod    (convmod3_conv2d,)                  {}',
        'call_module  convmod3_add_add  convmod3.add.add  (convmod3_bnMod, quanty)            {}',
        'call_module  convmod3_reluMod  convmod3.reluMod  (convmod3_add_add,)                 {}',
        'call_module  sharedConv        sharedConv        (convmod3_reluMod,)                 {}',
        'call_module  bn1               bn1               (sharedConv,)                       {}',
        'call_module  sharedConv_1      sharedConv        (quanty,)                           {}',
        'call_module  bn2               bn2               (sharedConv_1,)                     {}',
        'call_module  sub_sub           sub.sub           (bn1, bn2)                          {}',
        'call_module  relu              relu              (sub_sub,)                          {}',
        'call_module  dequant           dequant           (relu,)                             {}',
        'output       output            output            (dequant,)                          {}',
      ),
    );
    const addNode = gm.graph.node('convmod1_add_add')!;
    expect([addNode.op, addNode.target, addNode.method, addNode.scope]).toEqual([
      'call_module',
      'convmod1.add',
      'add',
      'convmod1',
    ]);
    const x = randn([1, 3, 4, 4], { generator: g });
    const y = randn([1, 3, 4, 4], { generator: g });
    expectSame(model.call(x, y), gm.call(x, y));
    // the FloatFunctional instances are untouched by tracing and count their calls at run time
    expect(Object.getOwnPropertyNames(model.sub)).not.toContain('sub');
    expect(model.convmod1.add.opsUsed).toEqual(['add']);
  });

  it('HybridModel: _SeluModule is traced through by default, or kept as a leaf; nodes remember their module scope', () => {
    const g = new Generator(2);
    const model = new HybridModel(3, g);
    const gm = symbolicTrace(model);
    expect(gm.printTabular()).toBe(
      table(
        'opcode         name         target       args            kwargs',
        '-------------  -----------  -----------  --------------  ------',
        'placeholder    input        input        ()              {}',
        'call_module    quant        quant        (input,)        {}',
        'call_module    conv0        conv0        (quant,)        {}',
        'call_module    identity     identity     (conv0,)        {}',
        'call_module    prelu        prelu        (identity,)     {}',
        'call_function  selu         selu         (prelu,)        {}',
        'call_module    conv1_conv   conv1.conv   (selu,)         {}',
        'call_module    conv1_prelu  conv1.prelu  (conv1_conv,)   {}',
        'call_function  selu_1       selu         (conv1_prelu,)  {}',
        'call_module    conv2        conv2        (selu_1,)       {}',
        'call_module    conv3        conv3        (conv2,)        {}',
        'call_module    identity_1   identity     (conv3,)        {}',
        'call_module    conv4        conv4        (identity_1,)   {}',
        'call_function  selu_2       selu         (conv4,)        {}',
        'call_module    dequant      dequant      (selu_2,)       {}',
        'output         output       output       (dequant,)      {}',
      ),
    );
    expect(['selu', 'selu_1', 'selu_2'].map((n) => gm.graph.node(n)!.scope)).toEqual(['', 'conv1', 'selu']);
    expect(gm.getSubmodule(gm.graph.node('selu_2')!.scope)).toBeInstanceOf(_SeluModule);

    const leafy = symbolicTrace(model, { leafModules: [_SeluModule] });
    const selu = leafy.graph.node('selu_2')!;
    expect([selu.op, selu.target, selu.args[0]]).toEqual(['call_module', 'selu', leafy.graph.node('conv4')]);
    const byPath = symbolicTrace(model, { leafModules: ['conv1'] });
    expect(byPath.graph.findNodes({ op: 'call_module', target: 'conv1' })).toHaveLength(1);

    const x = randn([2, 3, 5, 5], { generator: g });
    const want = model.call(x);
    for (const m of [gm, leafy, byPath]) expectSame(want, m.call(x));
  });
});

class Inner extends Module {
  readonly relu = new ReLU();
  forward(x: Tensor): Tensor {
    const y = this.relu.call(x);
    if (y.sum().item() > 0) return y; // data-dependent branch
    return x;
  }
}

class Branchy extends Module {
  readonly block = new Inner();
  forward(x: Tensor): Tensor {
    return this.block.call(x);
  }
}

describe('symbolicTrace: what it refuses', () => {
  it('a branch on a traced value throws a TraceError naming the module path, the source line and fxWrap', () => {
    let err: unknown;
    try {
      symbolicTrace(new Branchy());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TraceError);
    const te = err as TraceError;
    expect(te.modulePath).toBe('block');
    expect(te.moduleType).toBe('Inner');
    expect(te.location).toMatch(/trace\.test\.ts:\d+:\d+$/);
    expect(te.message).toContain("symbolic trace of module 'block' (Inner) at ");
    expect(te.message).toContain('used as a number');
    expect(te.message).toContain("node 'item'");
    expect(te.message).toContain('fxWrap');
  });

  it('template strings, Number(), JS operators, `in` and key enumeration throw too', () => {
    const cases: ((x: Tensor) => unknown)[] = [
      (x) => `${x}`,
      (x) => Number(x),
      (x) => (x as unknown as number) + 1,
      (x) => 'shape' in x,
      (x) => Object.keys(x),
      (x) => [...(x as unknown as number[])],
    ];
    const messages = cases.map((f) => {
      class M extends Module {
        forward(x: Tensor) {
          return f(x) as Tensor;
        }
      }
      try {
        symbolicTrace(new M());
        return 'no error';
      } catch (e) {
        expect(e).toBeInstanceOf(TraceError);
        return (e as Error).message;
      }
    });
    expect(messages[0]).toContain('turned into a string');
    expect(messages[1]).toContain('used as a number');
    expect(messages[2]).toContain('JS operator');
    expect(messages[2]).toContain('a.add(b)');
    expect(messages[3]).toContain("'shape' in x");
    expect(messages[4]).toContain('enumerating the keys');
    expect(messages[5]).toContain('iterated past 1024 items');
  });

  it('other errors thrown by forward come back as a TraceError naming the module, with the error as cause', () => {
    class Picky extends Module {
      forward(x: Tensor): Tensor {
        if (typeof x.dtype !== 'string') throw new RangeError('dtype unknown here');
        return x;
      }
    }
    class Outer extends Module {
      readonly inner = new Picky();
      forward(x: Tensor) {
        return this.inner.call(x);
      }
    }
    let err: unknown;
    try {
      symbolicTrace(new Outer());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TraceError);
    expect((err as TraceError).modulePath).toBe('inner');
    expect((err as Error).message).toContain(
      "module 'inner' (Picky): forward threw while tracing (RangeError: dtype unknown here)",
    );
    expect((err as Error).cause).toBeInstanceOf(RangeError);
  });

  it('a leaf module that is not part of the model is refused', () => {
    const stray = new ReLU();
    class M extends Module {
      forward(x: Tensor) {
        return stray.call(x);
      }
    }
    expect(() => symbolicTrace(new M())).toThrow(/not a submodule of the traced model/);
  });
});

describe('symbolicTrace: inputs, outputs and values', () => {
  it('concreteArgs fix a parameter (its branch is resolved at trace time); defaults apply; the input count is checked', () => {
    class M extends Module {
      readonly relu = new ReLU();
      forward(x: Tensor, mode: 'relu' | 'neg', scale = 2): Tensor {
        const y = mode === 'relu' ? this.relu.call(x) : x.neg();
        return y.mul(scale);
      }
    }
    const m = new M();
    const gm = symbolicTrace(m, { concreteArgs: { mode: 'neg' } });
    expect(gm.graph.nodes.map((n) => `${n.op}:${n.target}`)).toEqual([
      'placeholder:x',
      'call_method:neg',
      'call_method:mul',
      'output:output',
    ]);
    expect(gm.graph.node('mul')!.args[1]).toBe(2);
    const input = randn([3], { generator: new Generator(3) });
    expectSame(m.call(input, 'neg'), gm.call(input));
    expect(() => gm.call(input, 'relu')).toThrow(InvalidArgumentError);
    expect(() => gm.call(input, 'relu')).toThrow(/expected 1 input \(x\), got 2/);
    expect(() => symbolicTrace(m, { concreteArgs: { nope: 1 } })).toThrow(/concreteArgs has 'nope'/);
  });

  it('dict and array inputs and outputs; attribute reads such as x.shape[0] stay symbolic', () => {
    class M extends Module {
      readonly fc = new Linear(4, 2, { generator: new Generator(4) });
      forward(data: { img: Tensor; extra: Tensor[] }): { logits: Tensor; pair: [Tensor, Tensor] } {
        const flat = data.img.reshape([data.img.shape[0]!, -1]);
        const [first] = data.extra;
        return { logits: this.fc.call(flat), pair: [add(first!, 1), data.extra[1]!] };
      }
    }
    const m = new M();
    const gm = symbolicTrace(m);
    expect(gm.printTabular()).toBe(
      table(
        'opcode         name       target   args                                         kwargs',
        '-------------  ---------  -------  -------------------------------------------  ------',
        'placeholder    data       data     ()                                           {}',
        "call_function  getattr    getattr  (data, 'img')                                {}",
        "call_function  getattr_1  getattr  (data, 'img')                                {}",
        "call_function  getattr_2  getattr  (getattr_1, 'shape')                         {}",
        'call_function  getitem    getitem  (getattr_2, 0)                               {}',
        'call_method    reshape    reshape  (getattr, [getitem, -1])                     {}',
        "call_function  getattr_3  getattr  (data, 'extra')                              {}",
        'call_function  getitem_1  getitem  (getattr_3, 0)                               {}',
        'call_module    fc         fc       (reshape,)                                   {}',
        'call_function  add        add      (getitem_1, 1)                               {}',
        "call_function  getattr_4  getattr  (data, 'extra')                              {}",
        'call_function  getitem_2  getitem  (getattr_4, 1)                               {}',
        "output         output     output   ({'logits': fc, 'pair': [add, getitem_2]},)  {}",
      ),
    );
    const g = new Generator(5);
    for (const batch of [2, 5]) {
      const data = {
        img: randn([batch, 2, 2], { generator: g }),
        extra: [randn([3], { generator: g }), randn([1], { generator: g })],
      };
      const want = m.call(data);
      const got = gm.call(data);
      expect(Object.keys(got)).toEqual(['logits', 'pair']);
      expectSame(want.logits, got.logits);
      expectSame(want.pair[0], got.pair[0]);
      expect(got.pair[1]).toBe(data.extra[1]);
    }
  });

  it('tensors made during the trace become constants; parameters read directly become get_attr nodes; gradients reach them', () => {
    class M extends Module {
      readonly weight = new Parameter(randn([2, 3], { generator: new Generator(6) }));
      forward(x: Tensor): Tensor {
        return F.relu(linear(x, this.weight).add(ones([2])));
      }
    }
    const m = new M();
    const gm = symbolicTrace(m);
    expect(gm.graph.nodes.map((n) => `${n.op}:${n.target}`)).toEqual([
      'placeholder:x',
      'get_attr:weight',
      'call_function:linear',
      'get_attr:_tensor_constant0',
      'call_method:add',
      'call_function:relu',
      'output:output',
    ]);
    expect(Object.keys(gm.stateDict().tensors)).toEqual(['weight', '_tensor_constant0']);
    const input = randn([4, 3], { generator: new Generator(7) });
    gm.call(input).sum().backward();
    const gGraph = Array.from(m.weight.grad!.values());
    m.zeroGrad();
    m.call(input).sum().backward();
    expect(gGraph).toEqual(Array.from(m.weight.grad!.values()));
  });

  it('a GraphModule traces again to the same graph', () => {
    const model = new HybridModel(3, new Generator(8));
    const gm = symbolicTrace(model);
    const again = symbolicTrace(gm);
    expect(again).toBeInstanceOf(GraphModule);
    expect(again.printTabular()).toBe(gm.printTabular().replace(/\binput\b/g, 'input'));
    expect(again.className).toBe('HybridModel');
  });
});

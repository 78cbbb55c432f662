// Cross-layer equalization (data-free quantization): for a layer A whose output goes through ReLU (or nothing) into
// a layer B alone, scaling A's output channel i by 1/s_i and B's input channel i by s_i leaves the float model's
// output unchanged (ReLU(x / s) = ReLU(x) / s for s > 0), and s_i = sqrt(r1_i / r2_i), with r1_i the largest |w|
// of A's output channel i and r2_i that of B's input channel i, makes both ranges sqrt(r1_i · r2_i): channels with
// tiny weights next to channels with large ones (common after BatchNorm folding, and in depthwise convolutions)
// stop wasting a per-tensor weight scale. ReLU6 pairs are left out (its clip at 6 does not commute with the
// scaling), as are layers fused with an add (the added value is not scaled).
import { Conv1d, Conv2d, Conv3d, deepCopy, Linear, type Module, ReLU } from '@qtk/nn';
import { FusedConvBase, fuseFx } from '@qtk/fusion';
import { type GraphModule, type Node, subAt } from '@qtk/ir';
import type { Tensor } from '@qtk/tensor';

type Layer = (Conv1d | Conv2d | Conv3d | Linear) & { weight: Tensor; bias: Tensor | null };

export interface EqualizedPair {
  /** The graph nodes of the two layers. */
  readonly first: string;
  readonly second: string;
}

export interface CrossLayerEqualizationResult {
  /** The fused, equalized copy of the model (BatchNorm folded): prepare it as any float model. */
  readonly model: GraphModule;
  readonly pairs: readonly EqualizedPair[];
  /** How many passes over the pairs ran before the scales settled (a chain A → B → C needs several). */
  readonly rounds: number;
}

export interface CrossLayerEqualizationOptions {
  /** The march whose fusions to apply first (fuseFx's `march`); default setMarch's. */
  readonly march?: string;
  /** At most this many passes over the pairs; default 20. */
  readonly maxRounds?: number;
}

/** The conv or linear layer a node runs and the activation after it (in the fused module), or null. */
function layerOf(gm: GraphModule, n: Node): { layer: Layer; activation: string | null; withAdd: boolean } | null {
  if (n.op !== 'call_module' || n.method !== undefined) return null;
  const m = subAt(gm, n.target);
  if (m instanceof FusedConvBase) {
    const conv = m.conv as Module;
    return isLayer(conv) ? { layer: conv, activation: m.activation, withAdd: m.withAdd } : null;
  }
  return m && isLayer(m) ? { layer: m, activation: null, withAdd: false } : null;
}

function isLayer(m: Module): m is Layer {
  return m instanceof Conv1d || m instanceof Conv2d || m instanceof Conv3d || m instanceof Linear;
}

const isRelu = (gm: GraphModule, n: Node) =>
  n.op === 'call_module' && n.method === undefined && subAt(gm, n.target) instanceof ReLU;

/** The (A, B) pairs: A's output reaches only B's layer input, through at most a ReLU. */
function pairsOf(gm: GraphModule): [Node, Node, Layer, Layer][] {
  const pairs: [Node, Node, Layer, Layer][] = [];
  for (const a of gm.graph.nodes) {
    const first = layerOf(gm, a);
    if (!first || first.withAdd || first.activation === 'relu6') continue;
    let out = a;
    let users = [...out.users];
    if (users.length === 1 && first.activation === null && isRelu(gm, users[0]!)) {
      out = users[0]!;
      users = [...out.users];
    }
    if (users.length !== 1) continue;
    const b = users[0]!;
    const second = layerOf(gm, b);
    if (!second || b.args[0] !== out || b.args.slice(1).includes(out)) continue;
    const channels = first.layer.weight.shape[0]!;
    const groups = (second.layer as { groups?: number }).groups ?? 1;
    if (second.layer.weight.shape[1]! * groups !== channels) continue;
    pairs.push([a, b, first.layer, second.layer]);
  }
  return pairs;
}

/** Calls `visit(channel, from, to)` for each kernel of B: the input channel it reads, its weights' index range. */
function forEachKernel(b: Layer, channels: number, visit: (channel: number, from: number, to: number) => void): void {
  const [cout, cinG] = [b.weight.shape[0]!, b.weight.shape[1]!];
  const kvol = b.weight.size / (cout * cinG);
  const coutG = cout / (channels / cinG);
  for (let o = 0; o < cout; o++) {
    const first = Math.floor(o / coutG) * cinG;
    for (let c = 0; c < cinG; c++) visit(first + c, (o * cinG + c) * kvol, (o * cinG + c + 1) * kvol);
  }
}

/** Largest |w| per output channel of A (over its fan-in) and per input channel of B (over its outputs). */
function ranges(a: Layer, b: Layer): { r1: Float64Array; r2: Float64Array } {
  const wa = a.weight.values();
  const channels = a.weight.shape[0]!;
  const perA = wa.length / channels;
  const r1 = new Float64Array(channels);
  for (let i = 0; i < channels; i++)
    for (let j = i * perA; j < (i + 1) * perA; j++) r1[i] = Math.max(r1[i]!, Math.abs(wa[j]!));
  const wb = b.weight.values();
  const r2 = new Float64Array(channels);
  forEachKernel(b, channels, (ch, from, to) => {
    for (let k = from; k < to; k++) r2[ch] = Math.max(r2[ch]!, Math.abs(wb[k]!));
  });
  return { r1, r2 };
}

/** Scales A's output channel i by 1/s_i (weight and bias) and B's input channel i by s_i; the largest |log s|. */
function equalize(a: Layer, b: Layer): number {
  const { r1, r2 } = ranges(a, b);
  const s = r1.map((x, i) => (x > 0 && r2[i]! > 0 ? Math.sqrt(x / r2[i]!) : 1));
  const wa = a.weight.values();
  const perA = wa.length / s.length;
  for (let i = 0; i < s.length; i++) for (let j = i * perA; j < (i + 1) * perA; j++) wa[j] = wa[j]! / s[i]!;
  const ba = a.bias?.values();
  if (ba) for (let i = 0; i < s.length; i++) ba[i] = ba[i]! / s[i]!;
  const wb = b.weight.values();
  forEachKernel(b, s.length, (ch, from, to) => {
    for (let k = from; k < to; k++) wb[k] = wb[k]! * s[ch]!;
  });
  return s.reduce((m, v) => Math.max(m, Math.abs(Math.log(v))), 0);
}

/**
 * Cross-layer equalization of a float model: fuses a copy (BatchNorm folded into the conv before it, as prepare
 * does), then equalizes the weight ranges of every conv / linear pair joined by a ReLU or nothing, repeating over
 * chains until the scales settle. The float model given is not changed; the result computes the same outputs up to
 * float rounding. Its use is per-tensor weight quantization (per-channel weights, QTK's default, gain little).
 */
export function equalizeCrossLayer(
  model: Module,
  options: CrossLayerEqualizationOptions = {},
): CrossLayerEqualizationResult {
  const gm = fuseFx(deepCopy(model).eval(), options.march ? { march: options.march } : {});
  const pairs = pairsOf(gm);
  const maxRounds = options.maxRounds ?? 20;
  let rounds = 0;
  while (rounds < maxRounds) {
    rounds++;
    let moved = 0;
    for (const [, , a, b] of pairs) moved = Math.max(moved, equalize(a, b));
    if (moved < 1e-3) break;
  }
  return { model: gm, pairs: pairs.map(([a, b]) => ({ first: a.name, second: b.name })), rounds };
}

// A fixed-point image model made to take the centered YUV444 bytes a camera pipeline delivers (the
// RGB888 deployment of horizon_plugin_pytorch): the Quantize of the RGB input becomes a
// YuvInputQuantize, which converts, normalizes and quantizes in integer arithmetic.
import { planYuvInput, Quantize, YuvInputQuantize } from '@qtk/fixed-point';
import { GraphModule, type Node } from '@qtk/ir';
import { deepCopy } from '@qtk/nn';
import { parseOptions } from '@qtk/spec';
import { type ColorOrder, InvalidArgumentError, type YuvSwing } from '@qtk/tensor';
import { z } from 'zod';
import { modelInfoOf } from './model-info.js';

export interface InsertYuvInputOptions {
  /** The YUV the deployed model receives: 'full' swing for a BPU's image pyramid, or 'studio'. */
  swing: YuvSwing;
  /**
   * The normalization the model was trained with, per channel in the model's channel order or one for
   * all: its input was `((pixel / 255) − mean) / std` (pixel in 0..255).
   */
  mean: number | readonly number[];
  std: number | readonly number[];
  /** The channel order the model was trained on (default 'rgb'). */
  order?: ColorOrder;
  /** Which input to replace, by placeholder name or Quantize module path (default: the only quantized input). */
  input?: string;
}

const perChannel = z.union([z.number().finite(), z.array(z.number().finite()).min(1).max(3)]);
const optionsSchema = z
  .object({
    swing: z.enum(['studio', 'full']),
    mean: perChannel,
    std: perChannel,
    order: z.enum(['rgb', 'bgr']).optional(),
    input: z.string().optional(),
  })
  .strict();

interface InputQuantize {
  node: Node;
  placeholder: Node;
  module: Quantize;
}

function inputQuantizes(gm: GraphModule): InputQuantize[] {
  const found: InputQuantize[] = [];
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module' || node.method) continue;
    const m = gm.getSubmodule(node.target);
    const src = node.args[0] as Node | undefined;
    if (m instanceof Quantize && src && (src as object).constructor?.name === 'Node' && src.op === 'placeholder')
      found.push({ node, placeholder: src, module: m });
  }
  return found;
}

function pick(gm: GraphModule, input: string | undefined): InputQuantize {
  const all = inputQuantizes(gm);
  const describe = all.map((q) => `'${q.placeholder.name}' (${q.node.target})`).join(', ');
  if (input === undefined) {
    if (all.length === 1) return all[0]!;
    throw new InvalidArgumentError(
      all.length === 0
        ? 'insertYuvInput: no Quantize takes a model input directly; the model must be a fixed-point model (convertFx) whose image input goes into a QuantStub'
        : `insertYuvInput: the model has ${all.length} quantized inputs, ${describe}; name one with { input }`,
    );
  }
  const chosen = all.find((q) => q.placeholder.name === input || q.node.target === input);
  if (!chosen)
    throw new InvalidArgumentError(
      `insertYuvInput: no quantized input '${input}'; the inputs going into a Quantize are ${describe || 'none'}`,
    );
  return chosen;
}

/**
 * A copy of a fixed-point model (convertFx's output) that takes centered YUV444 bytes instead of the
 * normalized RGB image: the Quantize of that input becomes a YuvInputQuantize with the same scale,
 * dtype and rounding. The new input is a qint8 QTensor of scale 1 holding YUV byte − 128 (NCHW, 3
 * channels); `centeredYuvInput(rgb2CenteredYuv(rgb, swing))` makes one from an RGB image. The
 * original model is left as it was.
 */
export function insertYuvInput(fixedModel: GraphModule, options: InsertYuvInputOptions): GraphModule {
  if (!(fixedModel instanceof GraphModule))
    throw new InvalidArgumentError('insertYuvInput: expected a fixed-point GraphModule (the output of convertFx)');
  parseOptions(optionsSchema, options, 'insertYuvInput');
  const kind = modelInfoOf(fixedModel).kind;
  if (kind !== null && kind !== 'fixed-point')
    throw new InvalidArgumentError(
      `insertYuvInput: the model is a ${kind} model; convert it first (convertFx), then insert the YUV input`,
    );
  const gm = deepCopy(fixedModel);
  const { node, placeholder, module } = pick(gm, options.input);
  const others = gm.graph.nodes.filter((n) => n !== node && n.op === 'call_module' && n.target === node.target);
  if (others.length > 0)
    throw new InvalidArgumentError(
      `insertYuvInput: the Quantize '${node.target}' is also called by ${others.map((n) => `'${n.name}'`).join(', ')}; give the image input a Quantize of its own`,
    );
  const users = placeholder.users.filter((n) => n !== node);
  if (users.length > 0)
    throw new InvalidArgumentError(
      `insertYuvInput: the input '${placeholder.name}' also feeds ${users.map((n) => `'${n.name}'`).join(', ')}, which would receive YUV bytes instead of the image; only its Quantize may use it`,
    );
  const plan = planYuvInput({
    swing: options.swing,
    order: options.order,
    mean: options.mean,
    std: options.std,
    scale: module.scale,
    dtype: module.dtype,
    rounding: module.rounding,
  });
  gm.addSubmodule(node.target, new YuvInputQuantize(plan));
  gm.meta = { ...gm.meta, yuvInput: { input: placeholder.name, swing: options.swing, order: options.order ?? 'rgb' } };
  return gm;
}

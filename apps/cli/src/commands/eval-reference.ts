// qtk eval MODEL --data DIR --reference FLOAT.onnx: how far MODEL's outputs are from a float reference's on the same
// samples, output by output, for models of any task (detection, segmentation, OCR: several outputs of any rank).
import { inputBatches } from '../batches.js';
import { loadInputData } from '../data/eval-data.js';
import type { ParsedArgs } from '../args.js';
import { CliError, type CliIo, usageError } from '../io.js';
import { inputShapeOption, requireFile } from '../model-input.js';
import { isOnnxPath } from '../model-source.js';
import { type Engine, type NamedOutput, openInOrt, openModel, type RunnableModel } from '../model-runner.js';
import { readOnnxFile } from '../onnx-file.js';
import { type AgreementResult, OutputAgreement } from '../output-agreement.js';
import { preprocessFrom } from '../preprocess-options.js';
import { stepProgress } from '../progress.js';
import type { SampleInput } from '../sample-inputs.js';
import { formatTable } from '../table.js';

export async function runEvalReference(args: ParsedArgs, io: CliIo): Promise<number> {
  const t0 = performance.now();
  const o = args.options;
  const path = args.positionals[0]!;
  const referencePath = String(o.reference);
  if (o.labels !== undefined)
    throw usageError('eval', '--labels has no use with --reference: the reference model is the truth compared with');
  if (!isOnnxPath(referencePath))
    throw usageError('eval', `--reference must be an .onnx file (the float model), got '${referencePath}'`);
  requireFile(referencePath, 'reference model');
  const inputShape = inputShapeOption(o);
  const model = await openModel(path, {
    engine: String(o.engine) as Engine,
    ...(inputShape ? { inputShape } : {}),
    maxElements: o['max-elements'],
  });
  let reference: RunnableModel | undefined;
  try {
    reference =
      o['reference-runtime'] === 'qtk'
        ? await openModel(referencePath, {
            engine: 'qtk',
            ...(inputShape ? { inputShape } : {}),
            maxElements: o['max-elements'],
          })
        : await openInOrt(readOnnxFile(referencePath), inputShape);
    const ref = reference;
    const data = loadInputData(String(o.data), {
      split: String(o.split) as 'test' | 'train',
      inputs: inputsOfEither(model, ref),
      preprocess: preprocessFrom(o, model.savedPreprocess ?? ref.savedPreprocess),
      ...(o.limit !== undefined ? { limit: Number(o.limit) } : {}),
    });
    const batch = Number(o.batch);
    const n = data.inputs[0]!.shape[0]!;
    const progress = stepProgress(io);
    let totals: OutputAgreement[] = [];
    let b = 0;
    for (const xs of inputBatches(data.inputs, batch)) {
      const ys = await model.run(xs);
      const rs = await ref.run(xs);
      if (b === 0) totals = pairOutputs(path, ys, referencePath, rs);
      for (const [i, t] of totals.entries()) {
        checkSameShape(ys[i]!, rs[i]!, path, referencePath);
        t.add(ys[i]!.data, rs[i]!.data, xs[0]!.shape[0]!);
      }
      progress.step(b++, Math.ceil(n / batch), `${Math.min(b * batch, n)}/${n} samples`);
    }
    progress.end();
    const results = totals.map((t) => t.result());
    const what = {
      model: { path, kind: model.label, runtime: model.runtime },
      reference: { path: referencePath, kind: ref.label, runtime: ref.runtime },
      data: data.source,
      samples: n,
    };
    if (o.json === true) io.out(`${JSON.stringify({ ...what, outputs: results.map(jsonOf) }, null, 2)}\n`);
    else report(io, what, results, t0);
    const bad = results.filter((r) => r.nonFinite > 0);
    for (const r of bad)
      io.err(
        `qtk: warning: output '${r.name}': ${r.nonFinite} value(s) are NaN or ±Infinity in the model or the reference; the figures leave them out\n`,
      );
    return bad.length > 0 ? 1 : 0;
  } finally {
    await model.release();
    await reference?.release();
  }
}

/**
 * The model's inputs (the reference's are paired with them in order), each input's sample shape the reference's
 * where the model does not record one; a model and a reference of different input counts are refused.
 */
function inputsOfEither(model: RunnableModel, reference: RunnableModel): SampleInput[] {
  const names = (m: RunnableModel) => m.inputs.map((i) => i.name);
  if (model.inputs.length !== reference.inputs.length)
    throw new CliError(
      `${model.path} takes ${model.inputs.length} input(s) (${names(model).join(', ')}) and the reference ${reference.path} ${reference.inputs.length} (${names(reference).join(', ')}); ` +
        'give the float model MODEL was quantized from',
    );
  return model.inputs.map((input, i) => ({
    name: input.name,
    sampleShape: () => {
      try {
        return input.sampleShape();
      } catch {
        return reference.inputs[i]!.sampleShape();
      }
    },
  }));
}

/** One OutputAgreement per output, the outputs paired in order; a clear error when the counts differ. */
function pairOutputs(
  path: string,
  ys: readonly NamedOutput[],
  referencePath: string,
  rs: readonly NamedOutput[],
): OutputAgreement[] {
  if (ys.length !== rs.length) {
    const names = (v: readonly NamedOutput[]) => v.map((y) => `'${y.name}'`).join(', ');
    throw new CliError(
      `${path} has ${ys.length} output(s) (${names(ys)}) and the reference ${referencePath} ${rs.length} (${names(rs)}); ` +
        'outputs are compared in order, so give the float model MODEL was quantized from',
    );
  }
  return ys.map((y, i) => new OutputAgreement(y.name, rs[i]!.name, rs[i]!.dims));
}

function checkSameShape(y: NamedOutput, r: NamedOutput, path: string, referencePath: string): void {
  if (y.dims.length === r.dims.length && y.dims.every((d, i) => d === r.dims[i])) return;
  throw new CliError(
    `output '${y.name}' of ${path} has shape [${y.dims.join(', ')}], the reference's '${r.name}' of ${referencePath} [${r.dims.join(', ')}]; ` +
      'outputs are compared in order, so give the float model MODEL was quantized from',
  );
}

/** JSON cannot hold Infinity: an identical output's SQNR is written as null with `identical: true`. */
function jsonOf(r: AgreementResult): Record<string, unknown> {
  return { ...r, sqnrDb: Number.isFinite(r.sqnrDb) ? r.sqnrDb : null, identical: r.sqnrDb === Infinity };
}

const sqnrText = (v: number) => (v === Infinity ? 'inf (identical)' : Number.isNaN(v) ? '-' : v.toFixed(2));

function report(
  io: CliIo,
  what: {
    model: { path: string; kind: string; runtime: string };
    reference: { path: string; kind: string; runtime: string };
    data: string;
    samples: number;
  },
  results: readonly AgreementResult[],
  t0: number,
): void {
  io.out(`model:      ${what.model.path} (${what.model.kind}, ${what.model.runtime})\n`);
  io.out(`reference:  ${what.reference.path} (${what.reference.kind}, ${what.reference.runtime})\n`);
  io.out(`data:       ${what.data}, ${what.samples} sample(s)\n\n`);
  const rows = results.map((r) => [
    r.name === r.referenceName ? r.name : `${r.name} / ${r.referenceName}`,
    `[${r.shape.join(', ')}]`,
    sqnrText(r.sqnrDb),
    r.cosine.toFixed(6),
    r.maxAbsError.toPrecision(4),
    r.top1Agreement === undefined ? '-' : `${(100 * r.top1Agreement).toFixed(2)}%`,
  ]);
  io.out(formatTable(['output', 'shape', 'SQNR dB', 'cosine', 'max abs err', 'top-1 agree'], rows));
  io.out(`\ntime:       ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
}

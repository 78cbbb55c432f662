// QTK's single-file model format: a float, QAT (prepared) or fixed-point GraphModule with its
// weights, as bytes (saveModelFile in @qtk/core/node writes them atomically). Layout (little-endian):
//   0   8 bytes  magic "QTKMODEL"
//   8   u32      container version (MODEL_FILE_VERSION)
//   12  u32      header length H
//   16  u32      graph length G
//   20  u32      CRC-32 of every byte from offset 32 to the end
//   24  u64      state dict length S
//   32  H bytes  header, UTF-8 JSON: { format, version, kind, march, className, modes, meta }
//   ..  G bytes  graph, UTF-8 JSON of @qtk/ir's serializeGraphModule (modules with codec configs)
//   ..  S bytes  state dict in @qtk/nn's binary format (parameters and buffers: weights, scales)
// The file ends exactly there; anything shorter or longer is refused.
import { Dequantize, Quantize, registerFixedPointCodecs } from '@qtk/fixed-point';
import { FakeQuantize } from '@qtk/fake-quant';
import { deserializeGraphModule, GraphModule, moduleCodecs, SerializationError, serializeGraphModule } from '@qtk/ir';
import { crc32, deserializeStateDict, type Module, type StateDict, serializeStateDict } from '@qtk/nn';
import { compareVersions, QTK_VERSION, StateVersionError } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { z } from 'zod';
import { MODEL_KINDS, modelInfoOf, recordModelInfo, type ModelKind } from './model-info.js';
import { isPreserveQatMode, setPreserveQatMode } from './preserve-qat-mode.js';
import { QatModule } from './qat-module.js';
import { registerQatCodecs } from './qat-codecs.js';

export const MODEL_FILE_FORMAT = 'qtk.model';
export const MODEL_FILE_VERSION = 1;
const MAGIC = 'QTKMODEL';
const PREFIX = 32;

export { MODEL_KINDS, type ModelKind };

export interface ModelFileHeader {
  format: typeof MODEL_FILE_FORMAT;
  version: number;
  kind: ModelKind;
  /** The march a fixed-point model was converted for; null for float and QAT models. */
  march: string | null;
  className: string;
  /** Training flags: the root's, and the paths of modules whose flag differs from it. */
  modes: { training: boolean; differing: string[] };
  /** QAT models: modules marked with setPreserveQatMode. */
  preserveQatMode?: string[];
  /** Free JSON: input shape, class names, accuracy, ... */
  meta: Record<string, unknown>;
  /** The QTK version that wrote the file (absent in files written before 0.2.0). */
  writer?: { qtk: string };
}

export interface SaveModelOptions {
  /** Default: the kind the model records (convertFx, prepareQatFx, a loaded file), else inferred (inferModelKind). */
  kind?: ModelKind;
  /**
   * The march id the model was made for; default: the one it records
   * (convertFx, prepareQatFx, a loaded file). A fixed-point model needs one.
   */
  march?: string;
  /** Free JSON-serializable metadata kept in the header (input shape, class names, ...). */
  meta?: Record<string, unknown>;
}

export interface LoadedModel {
  model: GraphModule;
  kind: ModelKind;
  march: string | null;
  meta: Record<string, unknown>;
  header: ModelFileHeader;
}

/** A model file that cannot be written or read: foreign, truncated, corrupted or inconsistent. */
export class ModelFileError extends SerializationError {
  static override readonly code: string = 'E_MODEL_FILE';
  readonly path: string | undefined;
  constructor(message: string, path?: string, options?: { cause?: unknown }) {
    super(path ? `${path}: ${message}` : message, options);
    this.path = path;
  }
}

const headerSchema = z.object({
  format: z.literal(MODEL_FILE_FORMAT),
  version: z.number().int().positive(),
  kind: z.enum(MODEL_KINDS),
  march: z.string().min(1).nullable(),
  className: z.string(),
  modes: z.object({ training: z.boolean(), differing: z.array(z.string()) }),
  preserveQatMode: z.array(z.string()).optional(),
  meta: z.record(z.unknown()),
  writer: z.object({ qtk: z.string().max(64) }).optional(),
});

// ---- writing ----------------------------------------------------------------------------------

function ensureCodecs(): void {
  registerQatCodecs();
  registerFixedPointCodecs();
}

/**
 * The kind the model records (convertFx: 'fixed-point', prepareQatFx: 'qat', a loaded file: its
 * header's). A model that records none: 'fixed-point' when it holds the quantize / dequantize
 * modules of a converted model, else 'qat' when it holds fake-quants or QAT modules, else 'float'.
 */
export function inferModelKind(gm: Module): ModelKind {
  const recorded = modelInfoOf(gm).kind;
  if (recorded !== null) return recorded;
  const modules = gm.modules();
  if (modules.some((m) => m instanceof Quantize || m instanceof Dequantize)) return 'fixed-point';
  return modules.some((m) => m instanceof FakeQuantize || m instanceof QatModule) ? 'qat' : 'float';
}

function checkMeta(meta: unknown): Record<string, unknown> {
  if (meta === undefined) return {};
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta))
    throw new InvalidArgumentError('saveModelFile: meta must be a plain object of JSON values');
  try {
    const back = JSON.parse(JSON.stringify(meta)) as Record<string, unknown>;
    return back;
  } catch (e) {
    throw new InvalidArgumentError(`saveModelFile: meta is not JSON-serializable: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/** Every module the graph calls must have a codec, or the file could not be loaded without the model's code. */
function checkLoadable(gm: GraphModule): void {
  const missing: string[] = [];
  for (const n of gm.graph.nodes) {
    if (n.op !== 'call_module') continue;
    if (n.target === '') {
      throw new SerializationError(
        `saveModelFile: the graph calls methods of the root model (${gm.className}), which run its own code; a model file holds only modules with codecs`,
      );
    }
    for (const [p, m] of gm.getSubmodule(n.target).namedModules(n.target)) {
      if (!moduleCodecs.forModule(m) && !missing.some((s) => s.startsWith(`'${p}'`)))
        missing.push(`'${p}' (${m.constructor.name})`);
    }
  }
  if (missing.length) {
    const types = [...new Set(missing.map((s) => s.slice(s.lastIndexOf('(') + 1, -1)))];
    throw new SerializationError(
      `saveModelFile: the graph calls modules without a serialization codec: ${missing.join(', ')}; register one per class with moduleCodecs.register({ cls: ${types[0]}, config, create }) from @qtk/ir`,
    );
  }
}

/** Every stored config passes its codec's schema, or the file would be refused at load: refuse it now. */
function checkConfigs(graphJson: string): void {
  for (const e of (JSON.parse(graphJson) as { modules: { path: string; type: string; config?: unknown }[] }).modules) {
    if (e.config === undefined || !moduleCodecs.has(e.type)) continue;
    const r = moduleCodecs.get(e.type).schema.safeParse(e.config);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new SerializationError(
        `saveModelFile: module '${e.path}' (${e.type}) has settings its codec refuses at load (field '${issue.path.join('.') || '(config)'}': ${issue.message}); the file could not be loaded back`,
      );
    }
  }
}

/** The file's bytes for `gm` (see the layout above). Throws SerializationError for modules without a codec. */
export function modelToBytes(gm: GraphModule, options: SaveModelOptions = {}): Uint8Array {
  if (!(gm instanceof GraphModule))
    throw new InvalidArgumentError(
      'saveModelFile: expected a GraphModule (symbolicTrace, prepareQatFx or convertFx output)',
    );
  ensureCodecs();
  const recorded = modelInfoOf(gm);
  const kind = options.kind ?? inferModelKind(gm);
  const march = options.march ?? recorded.march;
  if (!MODEL_KINDS.includes(kind))
    throw new InvalidArgumentError(
      `saveModelFile: unknown kind '${String(kind)}'; use one of ${MODEL_KINDS.join(', ')}`,
    );
  if (kind === 'fixed-point' && !march) {
    throw new InvalidArgumentError(
      'saveModelFile: this fixed-point model records no march (convertFx records it); pass the march it was converted for: { march: id }',
    );
  }
  checkLoadable(gm);
  const graphJson = JSON.stringify(serializeGraphModule(gm));
  checkConfigs(graphJson);
  const graph = new TextEncoder().encode(graphJson);
  const modules = gm.namedModules();
  const header: ModelFileHeader = {
    format: MODEL_FILE_FORMAT,
    version: MODEL_FILE_VERSION,
    kind,
    march: march ?? null,
    className: gm.className,
    modes: {
      training: gm.training,
      differing: modules.filter(([p, m]) => p !== '' && m.training !== gm.training).map(([p]) => p),
    },
    meta: checkMeta(options.meta),
    writer: { qtk: QTK_VERSION },
  };
  const preserved = modules.filter(([p, m]) => p !== '' && isPreserveQatMode(m)).map(([p]) => p);
  if (preserved.length) header.preserveQatMode = preserved;
  const head = new TextEncoder().encode(JSON.stringify(header));
  const state = serializeStateDict(gm.stateDict());
  const out = new Uint8Array(PREFIX + head.byteLength + graph.byteLength + state.byteLength);
  out.set(new TextEncoder().encode(MAGIC), 0);
  out.set(head, PREFIX);
  out.set(graph, PREFIX + head.byteLength);
  out.set(state, PREFIX + head.byteLength + graph.byteLength);
  const dv = new DataView(out.buffer);
  dv.setUint32(8, MODEL_FILE_VERSION, true);
  dv.setUint32(12, head.byteLength, true);
  dv.setUint32(16, graph.byteLength, true);
  dv.setUint32(20, crc32(out.subarray(PREFIX)), true);
  dv.setBigUint64(24, BigInt(state.byteLength), true);
  return out;
}

// ---- reading ----------------------------------------------------------------------------------

interface Sections {
  header: ModelFileHeader;
  graph: Uint8Array;
  state: Uint8Array;
}

/** ", written by QTK x.y.z" from a parsed header, or nothing when it records no writer. */
function writerOf(raw: unknown): string {
  const qtk = (raw as { writer?: { qtk?: unknown } } | null)?.writer?.qtk;
  return typeof qtk === 'string' && qtk.length <= 64 ? ` (written by QTK ${qtk})` : '';
}

/** writerOf for a file whose container this QTK does not read: the header is read when it is whole JSON. */
function writtenBy(bytes: Uint8Array, dv: DataView): string {
  const h = dv.getUint32(12, true);
  if (PREFIX + h > bytes.byteLength || h > 1 << 24) return '';
  try {
    return writerOf(JSON.parse(new TextDecoder().decode(bytes.subarray(PREFIX, PREFIX + h))));
  } catch {
    return '';
  }
}

function sections(bytes: Uint8Array, source: string | undefined): Sections {
  const fail = (msg: string, cause?: unknown): never => {
    throw new ModelFileError(msg, source, cause === undefined ? undefined : { cause });
  };
  const name = source ?? 'the data';
  if (bytes.byteLength < 8 || new TextDecoder().decode(bytes.subarray(0, 8)) !== MAGIC) {
    fail(
      `not a QTK model file (it does not start with "${MAGIC}"); pass a file written by saveModelFile (qtk quantize --out, the demo's output folder)`,
    );
  }
  if (bytes.byteLength < PREFIX)
    fail(
      `truncated: ${bytes.byteLength} bytes, shorter than the ${PREFIX}-byte prefix; the file was cut short (an interrupted copy or download); copy or save it again`,
    );
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint32(8, true);
  if (version !== MODEL_FILE_VERSION) {
    throw new StateVersionError(
      version > MODEL_FILE_VERSION
        ? `${name}: model file version ${version}${writtenBy(bytes, dv)} is newer than this QTK (${QTK_VERSION}) reads (${MODEL_FILE_VERSION}); upgrade @qtk/core (or the qtk CLI) to load it`
        : `${name}: unknown model file version ${version} (this QTK reads version ${MODEL_FILE_VERSION}); re-save the model with this QTK`,
    );
  }
  const h = dv.getUint32(12, true);
  const g = dv.getUint32(16, true);
  const s = Number(dv.getBigUint64(24, true));
  const expected = PREFIX + h + g + s;
  if (bytes.byteLength < expected)
    fail(
      `truncated: the file has ${bytes.byteLength} bytes, its sections need ${expected}; it was cut short (an interrupted copy or save); copy or save it again`,
    );
  if (bytes.byteLength > expected)
    fail(
      `${bytes.byteLength - expected} unexpected bytes after the end of the model (${expected} bytes); the file is damaged or two files were joined`,
    );
  const crc = crc32(bytes.subarray(PREFIX));
  if (crc !== dv.getUint32(20, true))
    fail('corrupted: the checksum does not match the contents; copy or save the model again');
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(bytes.subarray(PREFIX, PREFIX + h)));
  } catch (e) {
    fail('the header is not valid JSON', e);
  }
  const hv = (raw as { version?: unknown })?.version;
  if (typeof hv === 'number' && hv !== MODEL_FILE_VERSION) {
    throw new StateVersionError(
      `${name}: model header version ${hv}${writerOf(raw)} is not the one this QTK (${QTK_VERSION}) reads (${MODEL_FILE_VERSION}); ${hv > MODEL_FILE_VERSION ? 'upgrade @qtk/core' : 're-save the model with this QTK'}`,
    );
  }
  const parsed = headerSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    fail(`malformed header: ${issues.join('; ')}`, parsed.error);
  }
  return {
    header: parsed.data as ModelFileHeader,
    graph: bytes.subarray(PREFIX + h, PREFIX + h + g),
    state: bytes.subarray(PREFIX + h + g, expected),
  };
}

/** The header of a model file's bytes (kind, march, meta) without building the model. */
export function modelHeaderFromBytes(bytes: Uint8Array, source?: string): ModelFileHeader {
  return sections(bytes, source).header;
}

/** Rebuilds the model from modelToBytes output; `source` names the file in errors. */
export function modelFromBytes(bytes: Uint8Array, source?: string): LoadedModel {
  ensureCodecs();
  const { header, graph, state } = sections(bytes, source);
  let sd: StateDict;
  try {
    sd = deserializeStateDict(state, source);
  } catch (e) {
    throw new ModelFileError(`the weights section is unreadable: ${(e as Error).message}`, source, { cause: e });
  }
  let model: GraphModule;
  try {
    model = deserializeGraphModule(new TextDecoder().decode(graph), { stateDict: sd });
  } catch (e) {
    if (e instanceof StateVersionError) throw e;
    const writer = header.writer?.qtk;
    const newer =
      writer !== undefined && compareVersions(writer, QTK_VERSION) > 0
        ? `; the file was written by QTK ${writer}, newer than this QTK (${QTK_VERSION}): upgrade @qtk/core (or the qtk CLI) to ${writer} or later`
        : '';
    const hint =
      newer ||
      (e instanceof SerializationError ? '' : `; the registered module codecs are: ${moduleCodecs.list().join(', ')}`);
    throw new ModelFileError(
      `the ${header.kind} model (${header.className}) cannot be rebuilt: ${(e as Error).message}${hint}`,
      source,
      { cause: e },
    );
  }
  model.train(header.modes.training);
  for (const p of header.modes.differing) model.getSubmodule(p).training = !header.modes.training;
  if (header.preserveQatMode?.length) setPreserveQatMode(model, header.preserveQatMode);
  // the header is the record of files written before models carried it in their meta
  recordModelInfo(model, { kind: header.kind, march: header.march });
  return { model, kind: header.kind, march: header.march, meta: header.meta, header };
}

// Serialization codec of FakeQuantize (see @qtk/ir's moduleCodecs): its options with the current
// state (CALIBRATION / QAT / VALIDATION). The scale and the `initialized` flag are buffers (the
// scale a Parameter under LSQ) and the observer's statistics its extra state, so the state dict
// carries them; model files written before that kept the statistics here, and still load.
import { moduleCodecs, SerializationError, type JsonValue } from '@qtk/ir';
import { FAKE_QUANT_STATES, observerStateSchema, type FakeQuantState, type ObserverState } from '@qtk/spec';
import { z } from 'zod';
import { FakeQuantize, fakeQuantizeOptionsSchema, type FakeQuantizeOptions } from './fake-quantize.js';

interface FakeQuantizeConfig {
  /** The constructor options as given (their `state` is the initial one). */
  options: FakeQuantizeOptions;
  /** The state when saved. */
  state: FakeQuantState;
  /** The observer's statistics, in files written before the state dict carried them. */
  observer?: ObserverState;
}

/** Plain data as JSON, non-finite numbers as { $number: 'Infinity' | '-Infinity' | 'NaN' } (histogram ranges may hold them). */
function encode(v: unknown, where: string): JsonValue {
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $number: String(v) };
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (Array.isArray(v) || ArrayBuffer.isView(v))
    return Array.from(v as ArrayLike<unknown>, (x, i) => encode(x, `${where}[${i}]`));
  if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) {
    const o: Record<string, JsonValue> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) o[k] = encode(x, `${where}.${k}`);
    return o;
  }
  throw new SerializationError(
    `FakeQuantize: cannot serialize ${where}: it is ${typeof v === 'object' ? `a ${v?.constructor?.name}` : typeof v}`,
  );
}

function decode(v: JsonValue): unknown {
  if (Array.isArray(v)) return v.map(decode);
  if (v === null || typeof v !== 'object') return v;
  if (Object.keys(v).length === 1 && typeof v.$number === 'string') return Number(v.$number);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decode(x)]));
}

/**
 * A stored config: the options must pass FakeQuantize's own schema (they are kept as given, so the
 * schema checks them without replacing them by the parsed, defaulted form) and a per-channel range
 * must be ordered.
 */
const configSchema = z.preprocess(
  (v) => decode(v as JsonValue),
  z
    .object({
      options: z.custom<FakeQuantizeOptions>().superRefine((o, ctx) => {
        const r = fakeQuantizeOptionsSchema.safeParse(o);
        if (!r.success)
          for (const i of r.error.issues)
            ctx.addIssue({ ...i, code: z.ZodIssueCode.custom, path: i.path, message: i.message });
        else if (r.data.quantMin !== null && r.data.quantMax !== null && r.data.quantMin >= r.data.quantMax) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['quantMax'],
            message: `must be above quantMin (${r.data.quantMin})`,
          });
        }
      }),
      state: z.enum(FAKE_QUANT_STATES),
      observer: observerStateSchema.optional(),
    })
    .strict(),
);

let registered = false;

/** Registers FakeQuantize's codec with @qtk/ir's moduleCodecs (idempotent). */
export function registerFakeQuantCodecs(): void {
  if (registered) return;
  registered = true;
  moduleCodecs.register<FakeQuantize>({
    cls: FakeQuantize,
    config: (m) => {
      const c: FakeQuantizeConfig = { options: m.options, state: m.fakeQuantState };
      return encode(c, 'config');
    },
    schema: configSchema,
    create: (c: FakeQuantizeConfig) => {
      const fq = new FakeQuantize(c.options);
      fq.setFakeQuantState(c.state);
      if (c.observer) fq.observer.load(c.observer);
      return fq;
    },
    tensors: (c: FakeQuantizeConfig) => {
      const o = fakeQuantizeOptionsSchema.parse(c.options);
      return [{ name: 'scale', shape: [o.chAxis >= 0 ? o.numChannels : 1], field: 'options.numChannels' }];
    },
  });
}

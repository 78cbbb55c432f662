import { tensor, zeros, type Tensor } from '@qtk/tensor';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32 } from './crc32.js';
import { DataFormatError, StateDictError } from './errors.js';
import { Linear } from './layers/linear.js';
import { Module } from './module.js';
import { loadStateDictFile, saveStateDict } from './node/state-dict-files.js';
import { deserializeStateDict, serializeStateDict, STATE_DICT_FILE_VERSION } from './state-dict-file.js';
import type { JsonValue, StateDict } from './state-dict.js';

/** A module with a buffer and JSON extra state (a running range, a count) that reads its buffer while loading. */
class Tracker extends Module {
  declare level: Tensor;
  range: [number, number] = [Infinity, -Infinity];
  count = 0;
  /** What `level` held when the extra state was loaded. */
  levelAtLoad: number | null = null;
  constructor() {
    super();
    this.registerBuffer('level', zeros([1]));
  }
  forward(x: Tensor): Tensor {
    return x;
  }
  override extraState(): JsonValue {
    return { version: 1, range: [...this.range], count: this.count };
  }
  override loadExtraState(state: JsonValue): void {
    const s = state as { version: number; range: [number, number]; count: number };
    if (s.version !== 1) throw new Error(`Tracker: extra state version ${s.version} is not supported`);
    this.range = [s.range[0], s.range[1]];
    this.count = s.count;
    this.levelAtLoad = this.level.values()[0]!;
  }
}

class Root extends Tracker {
  fc = new Linear(2, 2);
  inner = new Holder();
}

class Holder extends Module {
  a = new Tracker();
  b = new Tracker();
  forward(x: Tensor): Tensor {
    return x;
  }
}

function filled(): Root {
  const r = new Root();
  r.range = [-1, 2];
  r.count = 7;
  r.inner.a.range = [-3, 4];
  r.inner.a.count = 1;
  r.inner.a.level.values()[0] = 5;
  r.inner.b.count = 2; // untouched range: ±Infinity
  return r;
}

const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
};

const tmp = mkdtempSync(join(tmpdir(), 'qtk-extra-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('extra state in the state dict', () => {
  it('is collected by module path (root "") and loaded after the tensors', () => {
    const sd = filled().stateDict();
    expect(Object.keys(sd.extra!)).toEqual(['', 'inner.a', 'inner.b']);
    expect(sd.extra!['inner.a']).toEqual({ version: 1, range: [-3, 4], count: 1 });
    const back = new Root();
    expect(back.loadStateDict(sd)).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect([back.range, back.count]).toEqual([[-1, 2], 7]);
    expect([back.inner.a.range, back.inner.a.count]).toEqual([[-3, 4], 1]);
    expect(back.inner.b.range).toEqual([Infinity, -Infinity]);
    expect(back.inner.a.levelAtLoad).toBe(5); // its buffer was already loaded
  });

  it('is a snapshot even without clone', () => {
    const r = filled();
    const sd = r.stateDict();
    r.count = 99;
    expect((sd.extra![''] as { count: number }).count).toBe(7);
  });

  it('strict: missing and unexpected extra states are listed as <path>._extra_state', () => {
    const sd = filled().stateDict({ clone: true });
    delete sd.extra!['inner.b'];
    sd.extra!['inner.c'] = { version: 1 };
    const err = thrown(() => new Root().loadStateDict(sd)) as StateDictError;
    expect(err).toBeInstanceOf(StateDictError);
    expect(err.missingKeys).toEqual(['inner.b._extra_state']);
    expect(err.unexpectedKeys).toEqual(['inner.c._extra_state']);
    // a dict without any extra state for the root is missing the bare key
    const noRoot = filled().stateDict();
    delete noRoot.extra![''];
    expect((thrown(() => new Root().loadStateDict(noRoot)) as StateDictError).missingKeys).toEqual(['_extra_state']);
  });

  it('non-strict: loads what is there and returns the rest', () => {
    const sd = filled().stateDict({ clone: true });
    delete sd.extra!['inner.a'];
    sd.extra!.gone = 1;
    const back = new Root();
    expect(back.loadStateDict(sd, { strict: false })).toEqual({
      missingKeys: ['inner.a._extra_state'],
      unexpectedKeys: ['gone._extra_state'],
    });
    expect(back.count).toBe(7);
    expect(back.inner.a.count).toBe(0);
    expect(back.inner.a.level.values()[0]).toBe(5);
  });

  it('a dict with no extra record (made before extra states existed) loads its tensors and leaves extra states alone', () => {
    const sd: StateDict = { version: 1, tensors: filled().stateDict().tensors };
    const back = new Root();
    back.count = 3;
    expect(back.loadStateDict(sd)).toEqual({ missingKeys: [], unexpectedKeys: [] });
    expect(back.count).toBe(3);
    expect(back.inner.a.levelAtLoad).toBeNull();
    expect(back.inner.a.level.values()[0]).toBe(5);
  });

  it('an extra state the module rejects throws a StateDictError naming the module, with the cause', () => {
    const sd = filled().stateDict();
    sd.extra!['inner.b'] = { version: 2 };
    const err = thrown(() => new Root().loadStateDict(sd, { strict: false })) as StateDictError;
    expect(err).toBeInstanceOf(StateDictError);
    expect(err.message).toMatch(
      /the extra state of 'inner\.b' \(Tracker\) cannot be loaded: Tracker: extra state version 2 is not supported/,
    );
    expect((err.cause as Error).message).toMatch(/version 2/);
    // a module without extra state never gets one
    expect(thrown(() => new Linear(1, 1).loadExtraState({}))).toBeInstanceOf(StateDictError);
    expect(new Linear(1, 1).stateDict().extra).toEqual({});
  });

  it('a malformed extra record is refused', () => {
    const sd = { ...filled().stateDict(), extra: [1] } as unknown as StateDict;
    expect(() => new Root().loadStateDict(sd)).toThrow(/extra\?: \{\.\.\.\}/);
  });
});

describe('extra state in state dict files', () => {
  it('round-trips through a file exactly, non-finite numbers included', async () => {
    const sd = filled().stateDict();
    sd.extra!['inner.a'] = {
      version: 1,
      range: [NaN, -Infinity],
      count: 1,
      nested: [{ $number: 'kept' }, null, 'x', true],
    } as unknown as JsonValue;
    const path = join(tmp, 'extra.qtk');
    await saveStateDict(sd, path);
    const back = await loadStateDictFile(path);
    expect(STATE_DICT_FILE_VERSION).toBe(3);
    expect(new DataView(serializeStateDict(sd).buffer).getUint32(8, true)).toBe(3);
    expect(back.extra).toEqual(sd.extra);
    expect((back.extra!['inner.b'] as { range: number[] }).range).toEqual([Infinity, -Infinity]);
    expect(Object.is((back.extra!['inner.a'] as { range: number[] }).range[0], NaN)).toBe(true);
  });

  it('a dict without extra round-trips without it', () => {
    const sd: StateDict = { version: 1, tensors: { w: tensor([1, 2]) } };
    expect(deserializeStateDict(serializeStateDict(sd)).extra).toBeUndefined();
  });

  it('reads version-1 files (the layout before extra states): tensors and metadata, no extra', () => {
    // the version-1 writer's bytes, built by hand
    const header = new TextEncoder().encode(
      JSON.stringify({
        version: 1,
        metadata: { epoch: 2 },
        tensors: [{ name: 'w', dtype: 'float32', shape: [2], offset: 0, byteLength: 8 }],
      }),
    );
    const dataStart = (16 + header.byteLength + 7) & ~7;
    const bytes = new Uint8Array(dataStart + 8);
    bytes.set(new TextEncoder().encode('QTKSTATE'), 0);
    const dv = new DataView(bytes.buffer);
    dv.setUint32(8, 1, true);
    dv.setUint32(12, header.byteLength, true);
    bytes.set(header, 16);
    dv.setFloat32(dataStart, 1.5, true);
    dv.setFloat32(dataStart + 4, -2, true);
    const path = join(tmp, 'v1.qtk');
    writeFileSync(path, bytes);
    const sd = deserializeStateDict(bytes, path);
    expect(sd.extra).toBeUndefined();
    expect(sd.metadata).toEqual({ epoch: 2 });
    expect(sd.tensors.w!.toArray()).toEqual([1.5, -2]);
  });

  it('refuses a header whose extra is not an object', () => {
    const bytes = serializeStateDict({ version: 1, tensors: {}, extra: {} });
    const text = new TextDecoder().decode(bytes.subarray(24));
    const at = 24 + text.indexOf('"extra":{}');
    bytes.set(new TextEncoder().encode('"extra":[]'), at);
    new DataView(bytes.buffer).setUint32(16, crc32(bytes.subarray(24)), true); // so only the header check can catch it
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(DataFormatError);
    expect(() => deserializeStateDict(bytes, 'x.qtk')).toThrow(/x\.qtk: header field "extra" must be an object/);
  });
});

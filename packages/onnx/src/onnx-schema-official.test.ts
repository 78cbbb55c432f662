// The hand-written onnx.proto subset (onnx-schema.ts) against the official onnx.proto shipped by the
// onnx Python package: every message and field QTK declares must exist there with the same number,
// type and label, so a typo in the subset cannot silently misread or miswrite a model.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { expect, it } from 'vitest';
import { describeNeeding } from '../../../scripts/needs-system.js';
import { AttrType, DataType, ModelProtoType } from './onnx-schema.js';
import { findPythonWithOnnx } from './testing/python-onnx.js';

/** The onnx.proto of the onnx Python package; only called where python3-onnx is installed. */
function officialProtoPath(): string {
  const python = findPythonWithOnnx()!;
  const r = spawnSync(python, ['-c', 'import onnx, os; print(os.path.dirname(onnx.__file__))'], { encoding: 'utf8' });
  const path = join(r.stdout.trim(), 'onnx.proto');
  if (!existsSync(path)) throw new Error(`the onnx Python package has no ${path}`);
  return path;
}

function messages(ns: protobuf.NamespaceBase): protobuf.Type[] {
  const out: protobuf.Type[] = [];
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) out.push(nested);
    if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) out.push(...messages(nested));
  }
  return out;
}

/** A field's wire-level type: an enum is an int32 on the wire, so the subset may declare either. */
function wireType(field: protobuf.Field): string {
  field.resolve();
  if (field.resolvedType instanceof protobuf.Enum || field.type === 'int32') return 'int32 or enum';
  return field.type.replace(/^.*\./, '');
}

function label(field: protobuf.Field): string {
  return field.repeated ? 'repeated' : field.required ? 'required' : 'optional';
}

describeNeeding('python3-onnx', 'onnx.proto subset vs the official onnx.proto (python3-onnx)', () => {
  const official = protobuf.parse(readFileSync(officialProtoPath(), 'utf8'), { keepCase: true }).root;
  const subset = ModelProtoType.root;
  // Resolving sets each field's packing (protobufjs derives it from the options and the syntax).
  official.resolveAll();
  subset.resolveAll();
  const ours = messages(subset.lookup('onnx') as protobuf.Namespace);

  it('declares the messages QTK reads and writes', () => {
    expect(ours.map((t) => t.fullName).sort()).toContain('.onnx.ModelProto');
    expect(ours.length).toBeGreaterThanOrEqual(10);
  });

  it.each(ours.map((t) => [t.fullName, t] as const))(
    '%s: every field has the official number, type, label and packing',
    (name, type) => {
      const theirs = official.lookupType(name);
      for (const field of type.fieldsArray) {
        const o = theirs.fields[field.name];
        expect(o, `${name}.${field.name} is not in the official onnx.proto`).toBeDefined();
        expect([field.name, field.id, wireType(field), label(field), field.packed]).toEqual([
          o!.name,
          o!.id,
          wireType(o!),
          label(o!),
          o!.packed,
        ]);
      }
    },
  );

  it('the DataType and AttributeType numbers are the official ones', () => {
    const dataType = official.lookupEnum('onnx.TensorProto.DataType').values;
    for (const [k, v] of Object.entries(DataType)) expect([k, v]).toEqual([k, dataType[k]]);
    const attrType = official.lookupEnum('onnx.AttributeProto.AttributeType').values;
    for (const [k, v] of Object.entries(AttrType)) expect([k, v]).toEqual([k, attrType[k]]);
    const ourAttrType = subset.lookupEnum('onnx.AttributeProto.AttributeType').values;
    for (const [k, v] of Object.entries(ourAttrType)) expect([k, v]).toEqual([k, attrType[k]]);
  });
});

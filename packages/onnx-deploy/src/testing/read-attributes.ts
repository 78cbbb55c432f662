// Reads the attributes of nodes in a decoded ONNX model, for the visualisation export's tests.
import type { AttributeMsg, NodeMsg } from '@qtk/onnx';

const decoder = new TextDecoder();

export const attrsOf = (n: NodeMsg): Map<string, AttributeMsg> => new Map((n.attribute ?? []).map((a) => [a.name!, a]));
export const str = (a: AttributeMsg | undefined): string | undefined => (a?.s ? decoder.decode(a.s) : undefined);
export const strs = (a: AttributeMsg | undefined): string[] | undefined => a?.strings?.map((s) => decoder.decode(s));
/** The bits of a FLOATS attribute, to compare with a Float32Array bit for bit. */
export const floatBits = (a: AttributeMsg | undefined): number[] =>
  Array.from(new Uint32Array(Float32Array.from(a!.floats!).buffer));
/** The bits of float32 values. */
export const bits = (s: ArrayLike<number>): number[] => Array.from(new Uint32Array(Float32Array.from(s).buffer));
/** A copy of a decoded raw_data field in a buffer of its own (decoded bytes may view a larger buffer). */
export const rawBuffer = (raw: Uint8Array): ArrayBuffer => Uint8Array.from(raw).buffer;

import { InvalidArgumentError } from '../errors.js';

/** Expands a per-dimension argument given as a number or an array to `rank` integers, checking each. */
export function perDim(
  value: number | readonly number[],
  rank: number,
  op: string,
  name: string,
  min: number,
): number[] {
  const given = typeof value === 'number' ? [value] : [...value];
  const arr = given.length === 1 ? new Array<number>(rank).fill(given[0]!) : given;
  if (arr.length !== rank) {
    throw new InvalidArgumentError(`${op}: ${name} needs 1 or ${rank} values, got [${arr.join(', ')}]`);
  }
  for (const v of arr) {
    if (!Number.isInteger(v) || v < min) {
      throw new InvalidArgumentError(`${op}: ${name} must be integers ≥ ${min}, got ${JSON.stringify(value)}`);
    }
  }
  return arr;
}

/** Output length of a sliding window: floor((in + padBegin + padEnd − dilation·(k − 1) − 1) / stride) + 1. */
export function windowOutSize(
  size: number,
  k: number,
  stride: number,
  padBegin: number,
  padEnd: number,
  dilation: number,
): number {
  return Math.floor((size + padBegin + padEnd - dilation * (k - 1) - 1) / stride) + 1;
}

/**
 * Padding 'same' for stride 1: the total dilation·(k − 1) per dimension split in two, the odd leftover
 * after (PyTorch's rule), as [begin..., end...].
 */
export function samePadding(kernel: readonly number[], dilation: readonly number[]): number[] {
  const total = kernel.map((k, i) => dilation[i]! * (k - 1));
  return [...total.map((t) => Math.floor(t / 2)), ...total.map((t) => t - Math.floor(t / 2))];
}

export function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

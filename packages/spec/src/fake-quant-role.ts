// What a fake-quant node prepare inserted is for, recorded in node meta, so march passes find them
// by role rather than by the names prepare happens to generate.
import type { Node } from '@qtk/ir';

/** Node meta key of a fake-quant node's role (JSON, so saved model files keep it). */
export const FAKE_QUANT_ROLE = 'fakeQuantRole';

/**
 * 'activation': the output fake-quant prepare puts after an op that takes its own output scale (a
 * function, a tensor method or a FloatFunctional method, such as a cat).
 */
export type FakeQuantRole = 'activation';

/**
 * The fake-quant method a call_module node calls to quantize a value with another value's scale without
 * observing it (FakeQuantize's `applyWithoutObserving`: a cat's inputs tied to the cat's scale by a march's pass).
 * Such a node is an activation fake-quant too: conversion absorbs it into its producer with that scale.
 */
export const TIED_FAKE_QUANT_METHOD = 'applyWithoutObserving';

export function fakeQuantRoleOf(node: Node): FakeQuantRole | null {
  return node.meta[FAKE_QUANT_ROLE] === 'activation' ? 'activation' : null;
}

export function setFakeQuantRole(node: Node, role: FakeQuantRole): void {
  node.meta[FAKE_QUANT_ROLE] = role;
}

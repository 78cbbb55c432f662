import * as fixedPoint from '@qtk/fixed-point';
import { Module } from '@qtk/nn';
import { describe, expect, test } from 'vitest';
import './index.js'; // the integer rules only (the QDQ rules give the QAT composites theirs)
import { hasOwnModuleExport } from '@qtk/onnx';

// Module types of @qtk/fixed-point without an integer export rule (none of them appear in a converted model).
const WITHOUT_RULE = new Set([
  // QAT forms of the composites (a QAT model's modules, converted to FixedSoftmax / FixedLayerNorm): their export is the QDQ one
  'SoftmaxQat',
  'LayerNormQat',
]);

// biome-ignore lint/suspicious/noExplicitAny: module classes take any constructor arguments
type ModuleClass = abstract new (...args: any[]) => Module;

/** Whether the class or one of its base classes below Module has a registered export rule. */
function hasRule(cls: ModuleClass): boolean {
  for (let c: unknown = cls; c && c !== Module; c = Object.getPrototypeOf(c)) {
    if (hasOwnModuleExport(c as ModuleClass)) return true;
  }
  return false;
}

const moduleClasses = Object.entries(fixedPoint as Record<string, unknown>).filter(
  (e): e is [string, ModuleClass] => typeof e[1] === 'function' && e[1].prototype instanceof Module,
);

describe('integer export: every fixed-point module type has an export rule', () => {
  test('the package exports the module types this test walks', () => {
    expect(moduleClasses.map(([n]) => n)).toEqual(
      expect.arrayContaining([
        'Quantize',
        'Dequantize',
        'FixedValueOp',
        'FixedAdd',
        'FixedMul',
        'FixedCat',
        'FixedReduce',
        'FixedMinMax',
        'FixedCompare',
        'FixedClamp',
      ]),
    );
  });

  for (const [name, cls] of moduleClasses)
    test(`${name}`, () => {
      if (WITHOUT_RULE.has(name)) {
        // once its rule is registered, the entry must go: the list only names what is missing
        expect(hasRule(cls), `${name} has an export rule now; remove it from WITHOUT_RULE`).toBe(false);
        return;
      }
      expect(hasRule(cls), `${name} has no integer export rule; register one with registerModuleExport`).toBe(true);
    });
});

// Hybrid prepare for the hybrid tests. Not a test file itself and not part of the package build.
import { type HybridDict, type PrepareQatFxOptions, prepareQatFx, type QConfigDict } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { hybridPartitioner } from '../partition-pass.js';

/**
 * `model` prepared on `march` with the hybrid partition, warnings silenced: the default QAT qconfig unless
 * `qconfigDict` is given, and the `hybridDict` if one is.
 */
export function prepareHybrid(
  model: Module,
  march: PrepareQatFxOptions['march'],
  {
    qconfigDict = { global: defaultQatQconfig },
    hybridDict,
  }: { qconfigDict?: QConfigDict; hybridDict?: HybridDict } = {},
): GraphModule {
  return prepareQatFx(model, qconfigDict, {
    march,
    hybrid: true,
    partitioner: hybridPartitioner,
    ...(hybridDict ? { hybridDict } : {}),
    onWarning: () => {},
  });
}

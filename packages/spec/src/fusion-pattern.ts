import type { Match, Pattern, RewriteContext } from '@qtk/ir';
import type { Module } from '@qtk/nn';

/**
 * A fusion: a pattern in @qtk/ir's nested-array form, root (last op) first — e.g.
 * `[ReLU, [BatchNorm2d, Conv2d]]` — and a factory for the fused module that takes the root's place.
 * Fusion tables are lists of these, tried longest pattern first by @qtk/ir's rewrite engine.
 */
export interface FusionPatternV1 {
  readonly apiVersion: 1;
  /** Unique within the fusion registry ('conv2d_bn_relu', ...). */
  readonly name: string;
  readonly pattern: Pattern;
  /** Extra condition on a match (module settings, shapes); false leaves the nodes alone. */
  when?(match: Match, ctx: RewriteContext): boolean;
  /**
   * Builds the fused module from the matched nodes (`match.nodes`, root first; `ctx.module(node)`
   * gives a call_module node's module). It must share parameters with the originals where it
   * keeps them; the fusion pass puts it in place of the root node and turns absorbed modules into Identity.
   */
  createFused(match: Match, ctx: RewriteContext): Module;
  /**
   * The ops a match fuses, named as capability tables name them: the base op ('Conv', 'ConvTranspose',
   * 'Gemm') and the ops fused into it ('BatchNormalization', 'Add', 'Relu', 'Clip' for a ReLU6). fuseFx with a
   * march skips a match whose base op the march's table lacks, or which fuses an op the base's
   * `fusable` does not list (BatchNormalization excepted: absorbing a BN is a float rewrite the march
   * never sees). A pattern without it is applied on every march.
   */
  fusedOps?(match: Match, ctx: RewriteContext): FusedOps;
}

/** What one fusion match fuses (FusionPatternV1.fusedOps). */
export interface FusedOps {
  readonly base: string;
  readonly fused: readonly string[];
}

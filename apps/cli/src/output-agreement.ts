// How closely a model's outputs follow a reference model's on the same samples, output by output, accumulated
// batch by batch: SQNR, cosine similarity, max abs error, and top-1 agreement for class scores ([N, classes]).
import { PairSums, top1 } from '@qtk/nn';

/** The totals of one output over the batches seen. */
export class OutputAgreement {
  /** x: the model's values, y: the reference's, over the pairs where both are finite. */
  private readonly sums = new PairSums();
  private agreeing = 0;
  private samples = 0;
  private nonFinite = 0;
  /** Shape of one sample's output (without the batch axis). */
  readonly sampleDims: readonly number[];

  constructor(
    readonly name: string,
    readonly referenceName: string,
    dims: readonly number[],
  ) {
    this.sampleDims = dims.slice(1);
  }

  /** Whether the output is class scores: rank 2, [N, classes] with at least two classes. */
  get isClassScores(): boolean {
    return this.sampleDims.length === 1 && this.sampleDims[0]! > 1;
  }

  /** Adds one batch: the model's and the reference's values of this output, of the same [k, ...] shape. */
  add(model: Float32Array, reference: Float32Array, k: number): void {
    for (let i = 0; i < reference.length; i++) {
      const r = reference[i]!;
      const m = model[i]!;
      if (Number.isFinite(m - r)) this.sums.add(m, r);
      else this.nonFinite++;
    }
    if (this.isClassScores) {
      const [a, b] = [top1(model, k), top1(reference, k)];
      for (let s = 0; s < k; s++) if (a[s] === b[s]) this.agreeing++;
    }
    this.samples += k;
  }

  /**
   * The figures: sqnrDb = 10·log10(Σ ref² / Σ (model − ref)²) (Infinity when identical), cosine of the two as
   * vectors, max |model − ref| (all over the values where both are finite), and for class scores the share of samples whose arg-max agrees.
   */
  result(): AgreementResult {
    const { dot, xEnergy: modelEnergy, yEnergy: signal, squaredError: noise } = this.sums;
    const sqnrDb = noise === 0 ? (signal === 0 ? Number.NaN : Infinity) : 10 * Math.log10(signal / noise);
    const norms = Math.sqrt(signal * modelEnergy);
    return {
      name: this.name,
      referenceName: this.referenceName,
      shape: [...this.sampleDims],
      samples: this.samples,
      sqnrDb,
      cosine: norms === 0 ? (signal === modelEnergy ? 1 : 0) : dot / norms,
      maxAbsError: this.sums.maxAbsError,
      referenceMaxAbs: this.sums.yMaxAbs,
      nonFinite: this.nonFinite,
      ...(this.isClassScores ? { top1Agreement: this.agreeing / this.samples } : {}),
    };
  }
}

export interface AgreementResult {
  readonly name: string;
  readonly referenceName: string;
  /** One sample's output shape. */
  readonly shape: number[];
  readonly samples: number;
  readonly sqnrDb: number;
  readonly cosine: number;
  readonly maxAbsError: number;
  /** The largest |ref|: maxAbsError / referenceMaxAbs is the error relative to the output's range. */
  readonly referenceMaxAbs: number;
  /** Values where the model or the reference is NaN or ±Infinity: left out of the figures above. */
  readonly nonFinite: number;
  /** For class scores only: the share (0..1) of samples whose arg-max equals the reference's. */
  readonly top1Agreement?: number;
}

// The messages between the page and the quantization worker.
import type { WasmStatus } from '@qtk/tensor';
import type { JobProgress, QuantizeJobResult } from './quantize-job.js';
import type { Normalisation, SampleFile } from './user-inputs.js';

export interface JobOptions {
  readonly march: string;
  readonly observer: string;
  readonly hybrid: boolean;
  readonly inputScale: number;
}

/** The embedded demo, or the user's model and samples (with labels.txt's text when given). */
export type JobSource =
  | { readonly kind: 'demo' }
  | {
      readonly kind: 'files';
      readonly modelName: string;
      readonly onnx: Uint8Array;
      readonly samples: readonly SampleFile[];
      readonly labels: string | null;
      readonly normalisation: Normalisation;
    };

export type ToWorker = { readonly type: 'run'; readonly source: JobSource; readonly options: JobOptions };

export type FromWorker =
  | { readonly type: 'ready'; readonly wasm: WasmStatus; readonly marches: string[]; readonly observers: string[] }
  | {
      readonly type: 'progress';
      readonly progress: JobProgress | { readonly stage: 'load'; readonly done: number; readonly total: number };
    }
  | { readonly type: 'result'; readonly result: QuantizeJobResult }
  | { readonly type: 'error'; readonly message: string; readonly userError: boolean };

import { Tensor } from '@qtk/tensor';

/** Profiler tools take one input tensor or the list of a model's arguments. */
export type ModelInputs = Tensor | readonly unknown[];

export const argsOf = (inputs: ModelInputs): readonly unknown[] => (inputs instanceof Tensor ? [inputs] : inputs);

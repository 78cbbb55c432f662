export { InvalidArgumentError, ShapeError } from '@qtk/tensor';
export { StateVersionError, ObserverStateError } from '@qtk/spec';

// @qtk/nn/node: what touches the file system or zlib. The main entry is platform-neutral (bytes in,
// bytes out: serializeStateDict, parseIdx, parseNpy, fashionMnistFromIdx) and bundles for a browser.
export { writeFileAtomic, writeFileAtomicSync, checkWriteTarget, removeStaleTempFiles } from './node/atomic-write.js';
export { saveStateDict, saveStateDictSync, loadStateDictFile, loadStateDictFileSync } from './node/state-dict-files.js';
export { readIdx, inflateIdx, IDX_MAX_INFLATED_BYTES, type IdxOptions } from './node/read-idx.js';
export { readNpy } from './node/read-npy.js';
export { loadFashionMnist, type FashionMnistOptions } from './node/load-fashion-mnist.js';

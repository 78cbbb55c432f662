// @qtk/core/node: model files on disk. The main entry is platform-neutral: modelToBytes, modelFromBytes
// and modelHeaderFromBytes take and give the same bytes, wherever they are stored.
export {
  saveModelFile,
  saveModelFileSync,
  loadModelFile,
  loadModelFileSync,
  readModelFileHeader,
} from './node/model-file-io.js';

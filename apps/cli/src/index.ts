export { main, COMMANDS } from './main.js';
export { CliError, bufferIo, processIo, type CliIo } from './io.js';
export { parseArgs, formatHelp, type CommandSpec, type OptionSpec, type ParsedArgs } from './args.js';
export { checkMarch, type MarchReport, type NodeSupport } from './march-check.js';
export { nodeOp, type NodeOp } from './op-names.js';
export { decodeImage, imageToChw, type RgbaImage } from './data/image-decode.js';
export { listSampleFiles, loadSamples, readLabels, type Preprocess, type Samples } from './data/samples.js';

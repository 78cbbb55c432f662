// @qtk/profiler/node: the report written to disk, and onnxruntime-node in the first divergence. The main
// entry is platform-neutral: runModelProfiler returns the report and the tools' results, renderProfilerHtml
// the page as a string, and firstDivergence compares with a runtime only when given one.
export { writeProfilerReport, type WrittenReport } from './node/write-report.js';
export { modelProfiler, type ModelProfilerOptions, type ModelProfilerResult } from './node/model-profiler.js';
export { firstDivergence } from './node/first-divergence.js';

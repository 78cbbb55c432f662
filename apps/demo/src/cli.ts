// `pnpm demo [options]`: the whole toolkit end to end (see --help and apps/demo/README.md).
import { wasmStatus } from '@qtk/tensor';
import { DemoArgsError, HELP, parseDemoArgs } from './args.js';
import { writeArtifacts } from './artifacts.js';
import { checkDeployment, type DeploymentCheck } from './deployment.js';
import { type DemoResult, runDemo } from './pipeline.js';
import { type ProfileCheck, profileDemo } from './profiling.js';
import { formatSummary } from './summary.js';

async function main(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseDemoArgs>;
  try {
    options = parseDemoArgs(argv);
  } catch (e) {
    if (e instanceof DemoArgsError) {
      process.stderr.write(`error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (options === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const t0 = performance.now();
  const status = wasmStatus();
  const log = (line: string) =>
    process.stdout.write(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  log(`gemm backend: ${status.loaded ? 'wasm SIMD' : `cpu (${status.reason})`}`);
  let result: DemoResult;
  try {
    result = runDemo(options, log);
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n`);
    return 1;
  }
  let deployment: DeploymentCheck;
  try {
    deployment = await checkDeployment(result, options.out, options.progress);
  } catch (e) {
    process.stderr.write(`error: integer ONNX check: ${(e as Error).message}\n`);
    return 1;
  }
  log(
    `integer ONNX: ${deployment.path}, onnxruntime-node test accuracy ${(deployment.accuracy.onnxruntime * 100).toFixed(2)} %, ` +
      `${(deployment.identicalOutputs * 100).toFixed(2)} % of outputs bit-identical to QTK's; first batch: ${deployment.intermediates.summary}`,
  );
  let profile: ProfileCheck;
  try {
    profile = await profileDemo(result, options.out);
  } catch (e) {
    process.stderr.write(`error: profiler: ${(e as Error).message}\n`);
    return 1;
  }
  log(
    `profiler: ${profile.html} (${profile.nodes} nodes, ${profile.flagged.length} below cosine 0.99; ` +
      `largest error a node adds itself: ${profile.worstSameInput ? `${profile.worstSameInput.steps.toFixed(2)} steps at ${profile.worstSameInput.node}` : '-'})`,
  );
  const files = writeArtifacts(result, options.out, deployment, profile);
  log(`artifacts in ${options.out}: ${files.map((f) => f.slice(options.out.length + 1)).join(', ')}`);
  process.stdout.write(
    `\n${formatSummary(result, deployment, profile)}\n\ntotal ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );
  return 0;
}

process.exitCode = await main(process.argv.slice(2));

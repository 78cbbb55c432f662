// The demo's files, bundled with the app (Vite copies what `new URL(..., import.meta.url)` names).
import type { DemoFiles } from './job/demo-inputs.js';

const ASSETS = {
  weights: new URL('../../demo/assets/reference-net.qtk', import.meta.url),
  trainImages: new URL('../../../data/fashion-mnist-subset/train-images-idx3-ubyte.gz', import.meta.url),
  trainLabels: new URL('../../../data/fashion-mnist-subset/train-labels-idx1-ubyte.gz', import.meta.url),
  testImages: new URL('../../../data/fashion-mnist-subset/t10k-images-idx3-ubyte.gz', import.meta.url),
  testLabels: new URL('../../../data/fashion-mnist-subset/t10k-labels-idx1-ubyte.gz', import.meta.url),
};

async function fetchBytes(url: URL): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load ${url.pathname}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Fetches the demo's five files. */
export async function fetchDemoFiles(): Promise<DemoFiles> {
  const entries = await Promise.all(
    Object.entries(ASSETS).map(async ([k, url]) => [k, await fetchBytes(url)] as const),
  );
  return Object.fromEntries(entries) as unknown as DemoFiles;
}

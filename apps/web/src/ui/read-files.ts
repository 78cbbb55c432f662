// Files the user picked or dropped, read in the page: the ONNX model's bytes, images decoded by the
// browser to RGBA, .npy tensors as bytes, labels.txt as text. Samples are taken in file-name order.
import type { RgbaImage, SampleFile } from '../job/user-inputs.js';

/** The most pixels one image may have before it is decoded (8192 × 8192). */
const MAX_IMAGE_PIXELS = 2 ** 26;

export interface PickedFiles {
  readonly model: File | null;
  readonly samples: File[];
  readonly labels: File | null;
}

/** Sorts a set of files into the model, the samples and the labels. */
export function sortFiles(files: Iterable<File>, previous: PickedFiles): PickedFiles {
  let model = previous.model;
  let labels = previous.labels;
  const samples = [...previous.samples];
  for (const f of files) {
    const name = f.name.toLowerCase();
    if (name.endsWith('.onnx')) model = f;
    else if (name === 'labels.txt') labels = f;
    else if (/\.(png|jpe?g|npy)$/.test(name)) samples.push(f);
  }
  samples.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { model, samples, labels };
}

async function decodeImage(file: File): Promise<RgbaImage> {
  const bitmap = await createImageBitmap(file).catch(() => {
    throw new Error(`${file.name}: not an image this browser can decode`);
  });
  if (bitmap.width * bitmap.height > MAX_IMAGE_PIXELS) {
    throw new Error(
      `${file.name}: ${bitmap.width} × ${bitmap.height} pixels is more than the 8192 × 8192 an image may have`,
    );
  }
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext('2d')!;
  ctx.drawImage(bitmap, 0, 0);
  const { data } = ctx.getImageData(0, 0, bitmap.width, bitmap.height);
  bitmap.close();
  return { name: file.name, width: canvas.width, height: canvas.height, data };
}

export async function readSamples(files: readonly File[]): Promise<SampleFile[]> {
  const out: SampleFile[] = [];
  for (const f of files) {
    if (f.name.toLowerCase().endsWith('.npy'))
      out.push({ kind: 'npy', name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) });
    else out.push({ kind: 'image', image: await decodeImage(f) });
  }
  return out;
}

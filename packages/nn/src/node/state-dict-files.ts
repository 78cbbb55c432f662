import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { StateDict } from '../state-dict.js';
import { deserializeStateDict, serializeStateDict } from '../state-dict-file.js';
import { writeFileAtomic, writeFileAtomicSync } from './atomic-write.js';

/** Writes a state dict atomically: a temporary file in the same directory, flushed, then renamed over `path`. */
export async function saveStateDict(sd: StateDict, path: string): Promise<void> {
  await writeFileAtomic(path, serializeStateDict(sd));
}

export function saveStateDictSync(sd: StateDict, path: string): void {
  writeFileAtomicSync(path, serializeStateDict(sd));
}

export async function loadStateDictFile(path: string): Promise<StateDict> {
  return deserializeStateDict(await readFile(path), path);
}

export function loadStateDictFileSync(path: string): StateDict {
  return deserializeStateDict(readFileSync(path), path);
}

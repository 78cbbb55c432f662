import { type NpyArray, parseNpy } from '../data/npy.js';
import { readDataFile } from './read-data-file.js';

/** Reads a .npy file (see parseNpy for the formats it takes). */
export function readNpy(path: string): NpyArray {
  return parseNpy(readDataFile(path), path);
}

import { resolve } from 'node:path';

/**
 * A path quoted for a message; a relative one also resolved against the current directory
 * ("'calib' (/home/me/calib)"), so the user sees which file was meant.
 */
export function shownPath(path: string): string {
  const absolute = resolve(path);
  return absolute === path ? `'${path}'` : `'${path}' (${absolute})`;
}

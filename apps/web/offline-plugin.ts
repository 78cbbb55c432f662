import { createHash } from 'node:crypto';
import type { Plugin } from 'vite';

// After the first visit the app works without a network: the build emits sw.js, a service worker that
// caches every file of the build (page, scripts, worker, wasm, demo files) on install and answers from
// that cache first (ignoring Vary: a module script asks with an Origin header, the cache was filled without one). Cached responses keep their headers, so the page stays cross-origin isolated offline.
// The cache is named after a hash of the file list, so a new build replaces the old cache.

function serviceWorker(files: readonly string[]): string {
  const cache = `qtk-web-${createHash('sha256').update(files.join('\n')).digest('hex').slice(0, 16)}`;
  return `const CACHE = ${JSON.stringify(cache)};
const FILES = ${JSON.stringify(['./', 'index.html', ...files.filter((f) => f !== 'index.html')])};
self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(FILES)).then(() => self.skipWaiting()));
});
self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('qtk-web-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});
self.addEventListener('fetch', (event) => {
  if (event.request.method !== 'GET' || new URL(event.request.url).origin !== self.location.origin) return;
  event.respondWith(caches.match(event.request, { ignoreSearch: true, ignoreVary: true }).then((hit) => hit ?? fetch(event.request)));
});
`;
}

/** Emits sw.js listing every file of the build. */
export function offlinePlugin(): Plugin {
  return {
    name: 'qtk-offline',
    apply: 'build',
    generateBundle(_options, bundle) {
      const files = Object.keys(bundle).sort();
      this.emitFile({ type: 'asset', fileName: 'sw.js', source: serviceWorker(files) });
    },
  };
}

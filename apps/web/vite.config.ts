import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { offlinePlugin } from './offline-plugin.js';

// Cross-origin isolation (COOP + COEP) gives the page SharedArrayBuffer, so the quantization worker runs
// QTK's wasm kernels on two threads. The workspace packages resolve to their TypeScript sources.
const ISOLATION = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  resolve: {
    conditions: ['qtk-source', 'browser', 'module', 'import', 'default'],
    alias: [{ find: /^fs$/, replacement: fileURLToPath(new URL('./src/no-fs.ts', import.meta.url)) }],
  },
  plugins: [offlinePlugin()],
  worker: { format: 'es' },
  server: { headers: ISOLATION, port: 5173 },
  preview: { headers: ISOLATION, port: 4173 },
  build: { target: 'es2022', chunkSizeWarningLimit: 4096 },
  // QTK reads class names at run time (module types in graphs, model files and reports), so minification
  // must keep them
  esbuild: { keepNames: true },
});

#!/usr/bin/env node
import { processIo } from './io.js';
import { main } from './main.js';

// `qtk inspect MODEL | head`: once the reader has what it wants, the rest of the output has nowhere to go
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(0);
});
process.exitCode = await main(process.argv.slice(2), processIo);

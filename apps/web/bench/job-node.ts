// The web app's demo job in Node, as the page runs it by default; prints {"quantize": s, "total": s}
// (web-vs-node.ts runs it in a child process).
import { runQuantizeJob } from '../src/job/quantize-job.js';
import { defaultDemoJob } from '../testing/demo-from-disk.js';

console.log(JSON.stringify(runQuantizeJob(await defaultDemoJob()).seconds));

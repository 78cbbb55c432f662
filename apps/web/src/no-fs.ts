// What `fs` resolves to in the browser build: protobufjs probes `require('fs')` for `readFile` and falls back
// to fetch without it. An empty module answers that probe quietly, where Vite's stand-in for Node built-ins
// warns on every property read.
export default {};

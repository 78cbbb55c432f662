// A stand-in for fuzz-child.ts that misbehaves on purpose, so the harness's own test can check that a
// hang, a memory blow-up, a crash and a generic error are each caught and counted (case i of 0..5).
const [count, first] = [Number(process.argv[3]), Number(process.argv[4] ?? 0)];
const write = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
const hold: ArrayBuffer[] = [];
for (let i = first; i < count; i++) {
  write({ i, start: true });
  if (i === 1) for (;;); // hang
  if (i === 2) for (;;) hold.push(new Uint8Array(64 << 20).fill(1).buffer); // memory
  if (i === 3) process.exit(134); // crash
  write({
    i,
    outcome: i === 4 ? 'generic' : 'typed',
    ...(i === 4 ? { error: 'TypeError: x is undefined' } : {}),
    ms: 1,
  });
}

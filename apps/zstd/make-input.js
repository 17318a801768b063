// The zstd workload's input: 1 MiB of deterministic, text-like bytes with
// some binary runs (xorshift32 stream), written to the path given.
"use strict";
const fs = require("fs");
const out = process.argv[2];
const N = 1 << 20;
const buf = Buffer.alloc(N);
const words = ["wasm", "engine", "frame", "block", "literal", "match", "offset", "sequence", "huffman", "window", "the", "of", "and", "to"];
let x = 0x12345678 >>> 0;
function next() {
  x ^= x << 13; x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5; x >>>= 0;
  return x;
}
let i = 0;
while (i < N) {
  const r = next();
  if (r % 11 === 0) {
    // a short binary run
    const len = 8 + (r >>> 8) % 24;
    for (let k = 0; k < len && i < N; k++) buf[i++] = next() & 0xff;
  } else {
    const w = words[(r >>> 4) % words.length];
    for (let k = 0; k < w.length && i < N; k++) buf[i++] = w.charCodeAt(k);
    if (i < N) buf[i++] = (r >>> 12) % 9 === 0 ? 10 : 32;
  }
}
fs.writeFileSync(out, buf);

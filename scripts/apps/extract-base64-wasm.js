// Extract a base64-embedded wasm module from a JavaScript file of an npm
// package: node extract-base64-wasm.js FILE REGEX OUT
// REGEX must capture the base64 text in its first group. The module is
// checked (WebAssembly.Module) before it is written.
"use strict";
const fs = require("fs");
const [file, pattern, out] = process.argv.slice(2);
if (!file || !pattern || !out) {
  console.error("error: usage: node extract-base64-wasm.js FILE REGEX OUT");
  process.exit(2);
}
const text = fs.readFileSync(file, "utf8");
const m = text.match(new RegExp(pattern));
if (!m) {
  console.error(`error: no embedded module matching ${pattern} in ${file}`);
  process.exit(1);
}
const bytes = Buffer.from(m[1], "base64");
new WebAssembly.Module(bytes); // throws on a bad extraction
fs.writeFileSync(out + ".tmp", bytes);
fs.renameSync(out + ".tmp", out);

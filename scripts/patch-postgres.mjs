#!/usr/bin/env node
// Two fixes to the `postgres` client 3.4.9 (npm's newest), applied after every install (package.json
// "postinstall") until a release carries them. Both bite exactly when Doorman must keep going: PostgreSQL going
// away under load.
// 1. nextWrite() can run after the connection closed and dereference a null socket: an uncaught TypeError that
//    kills the process (porsager/postgres#1154, #1208; the guard of PR #1209, settling the queries instead of
//    dropping them so no caller waits for ever).
// 2. terminate() and closed() cancel the pending write timer without forgetting it: the connection, once
//    reconnected, never flushes a small write again, and its queries hang (LanternOps/breeze#3225).
// The text to replace must be found exactly; otherwise this fails loudly (a new version: check the upstream fix).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');
const MARK = '/* doorman: patched, see scripts/patch-postgres.mjs */';
const replacements = [
  [
    'function nextWrite(fn) {\n',
    `function nextWrite(fn) {\n    ${MARK}\n    if (!socket) {\n      chunk = nextWriteTimer = null\n` +
      "      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n",
  ],
  [
    '    clearImmediate(nextWriteTimer)\n',
    '    clearImmediate(nextWriteTimer), chunk = nextWriteTimer = null\n',
    2,
  ],
];

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (version !== '3.4.9') {
  console.error(
    `patch-postgres: postgres ${version} is not 3.4.9: check whether it fixes nextWrite, then update this script`,
  );
  process.exit(1);
}
for (const file of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const path = join(root, file);
  let text = readFileSync(path, 'utf8');
  if (text.includes(MARK)) continue;
  for (const [from, to, times = 1] of replacements) {
    const found = text.split(from).length - 1;
    if (found !== times) {
      console.error(`patch-postgres: ${file}: expected ${times} of ${JSON.stringify(from)}, found ${found}`);
      process.exit(1);
    }
    text = text.replaceAll(from, to);
  }
  writeFileSync(path, text);
}

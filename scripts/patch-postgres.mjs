#!/usr/bin/env node
// Three fixes to the `postgres` client 3.4.9 (npm's newest), applied after every install (package.json
// "postinstall") until a release carries them. All bite exactly when Doorman must keep going: PostgreSQL going
// away under load.
// 1. nextWrite() can run after the connection closed and dereference a null socket: an uncaught TypeError that
//    kills the process (porsager/postgres#1154, #1208; the guard of PR #1209, settling the queries instead of
//    dropping them so no caller waits for ever).
// 2. terminate() and closed() cancel the pending write timer without forgetting it: the connection, once
//    reconnected, never flushes a small write again, and its queries hang (LanternOps/breeze#3225).
// 3. Every new connection first asks for the array types (fetch_types) and drops that promise: a connection
//    lost or ended while it asks (PostgreSQL stopping, a failover) rejects it with no one to catch it, and an
//    unhandled rejection ends a Node process (porsager/postgres#1192, #1205, #1223). The connection fails its
//    queries and reconnects on its own, asking again; only the dropped promise is given a catch.
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
  ['        return fetchArrayTypes()\n', '        return fetchArrayTypes().catch(() => {})\n'],
];

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (version !== '3.4.9') {
  console.error(
    `patch-postgres: postgres ${version} is not 3.4.9: check which of the three it fixes, then update this script`,
  );
  process.exit(1);
}
for (const file of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const path = join(root, file);
  const before = readFileSync(path, 'utf8');
  let text = before;
  for (const [from, to, times = 1] of replacements) {
    // Applied already (an install patched by an earlier version of this script has only some of them).
    if (text.split(to).length - 1 === times) continue;
    const found = text.split(from).length - 1;
    if (found !== times) {
      console.error(`patch-postgres: ${file}: expected ${times} of ${JSON.stringify(from)}, found ${found}`);
      process.exit(1);
    }
    text = text.replaceAll(from, to);
  }
  if (text !== before) writeFileSync(path, text);
}

#!/bin/bash
# Where a login's share of what the metrics and the audit trail cost is: observability-cost.sh's paired logins,
# this checkout ("head") against variants of it with one part taken out, each built as a commit of its own (never
# a branch) in a temporary worktree:
#   no-trail   the login records no event, counts nothing and writes as before the trail: INSERT OR REPLACE, no
#              read of the session it replaces (portal/api/login.ts, and lib/store/sqlite-store.ts start())
#   no-event   the login records no event and counts nothing; the read of the session replaced is kept
#   no-insert  the audit pages are built but not inserted (lib/store/audit-store.ts insert())
# Head's cost against no-trail is all of the login's; no-trail less no-event is the read's share; no-insert is the
# page's insert and its bytes in the commit.
#   bench/login-cost-parts.sh
# env: PARTS="no-trail no-event no-insert", and observability-cost.sh's, here by default PAIRED=1 RUNS=3
#      USERS=next LOOKUPS=50000
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
PARTS=${PARTS:-no-trail no-event no-insert}
export PAIRED=${PAIRED:-1} RUNS=${RUNS:-3} USERS=${USERS:-next} LOOKUPS=${LOOKUPS:-50000}
W=$SCRATCH/login-cost-parts
cleanup() { git -C "$ROOT" worktree remove --force "$W" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 1' INT TERM

variant() { # variant PART: the commit of head with PART taken out
  cleanup; rm -rf "$W"
  git -C "$ROOT" worktree prune
  git -C "$ROOT" worktree add --detach "$W" HEAD >/dev/null 2>&1
  (cd "$W" && python3 - "$1" <<'PY'
import sys
part = sys.argv[1]

def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    if text.count(old) != 1:
        sys.exit(f"login-cost-parts: {path} no longer holds what {part} takes out; update this script")
    with open(path, "w") as f:
        f.write(text.replace(old, new))

if part in ("no-trail", "no-event"):
    edit("portal/api/login.ts",
         """      (previous) =>
        loginEvent(actor, ip, parsed.username, (replaced = replacementOf(parsed.username, previous))),
    );
    countLogin('api');
    if (replaced !== undefined) countSessionEnd(replaced.source, 'replaced');""",
         """    );
    void [actor, replaced, replacementOf, countLogin, countSessionEnd];""")
if part == "no-trail":
    edit("lib/store/sqlite-store.ts",
         "    start: (input, audit) =>\n      commit(() => {\n",
         "    start: (input, audit) =>\n      audit === undefined ? commit(() => sessions.start(input)) : commit(() => {\n")
if part == "no-insert":
    edit("lib/store/audit-store.ts",
         "this.#insert.run(page.atFirst, page.atLast, page.box, page.events);",
         "void [page, this.#insert];")
if part not in ("no-trail", "no-event", "no-insert"):
    sys.exit(f"login-cost-parts: no part {part!r} (no-trail, no-event, no-insert)")
PY
  )
  git -C "$W" -c user.name=bench -c user.email=bench@localhost commit -qam "bench: head, $1" >/dev/null
  git -C "$W" rev-parse HEAD
}

for part in $PARTS; do
  rev=$(variant "$part")
  cleanup
  echo "== head against head with $part taken out (${rev:0:7})"
  BASE=$rev bash "$BENCH/observability-cost.sh" | grep -E '^(base|  (logins|serve CPU)|  .*run by run)'
done

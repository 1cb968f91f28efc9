import type { Clock } from '../../lib/clock.ts';
import type { CheckResult } from '../../lib/seamless/doctor/check-result.ts';
import { doctorReport, type DoctorReport } from '../../lib/seamless/doctor/report.ts';
import type { StepOutcome } from '../../lib/seamless/join.ts';
import type { AdminUser, SeamlessSettings } from '../../lib/seamless/settings.ts';
import type { SeamlessState } from '../../lib/store/seamless-settings-store.ts';
import type { SeamlessControl, SeamlessStatus, SeamlessStep } from '../../portal/admin/seamless-admin.ts';

/** The steps a fake Enable reports, in order (the design's join steps, shortened). */
export const ENABLE_STEPS = [
  { id: 'preconditions', title: 'Check the prerequisites' },
  { id: 'config', title: 'Write smb.conf and krb5.conf' },
  { id: 'join', title: 'Join the domain' },
  { id: 'keytab', title: 'Add the HTTP service principal and its keys' },
  { id: 'winbind', title: 'Start winbind' },
  { id: 'trust', title: 'Verify the trust' },
] as const;

export const DISABLE_STEPS = [
  { id: 'leave', title: 'Leave the domain' },
  { id: 'winbind', title: 'Stop winbind' },
  { id: 'files', title: 'Remove the keytab and Samba state' },
] as const;

export const GREEN_CHECKS: CheckResult[] = [
  {
    id: 'dns-a',
    ok: true,
    status: 'ok',
    title: "The proxy's FQDN has an A record",
    detail: 'proxy.example.test → 10.0.0.5',
  },
  {
    id: 'clock',
    ok: true,
    status: 'ok',
    title: "The clock is within 5 minutes of the domain controller's",
    detail: 'offset 1 s',
  },
];

export const PTR_MISSING: CheckResult = {
  id: 'dns-ptr',
  ok: false,
  status: 'fail',
  title: "The proxy's address has a PTR record back to its FQDN",
  detail: '10.0.0.5 has no PTR record (NXDOMAIN)',
  fix: 'add a PTR record 5.0.0.10.in-addr.arpa → proxy.example.test in the DNS zone on the domain controller',
};

/** What a call to the fake was given; the password as text when it came (and its Buffer, to see it zeroed). */
export type FakeCall =
  | { op: 'enable'; settings: SeamlessSettings; password: string; buffer: Buffer }
  | { op: 'disable'; user: string | undefined; password: string | undefined; buffer: Buffer | undefined }
  | { op: 'status' | 'doctor' | 'resume' };

interface Pause {
  reached: Promise<void>;
  release: () => void;
}

/**
 * A SeamlessControl that joins nothing: Enable reports ENABLE_STEPS (each `running`, then `ok`), fails at
 * `failAt` if set, and stores a SeamlessState; Disable clears it. `pauseAfter(id)` holds the operation after
 * that step's result until released, so a test can look at what reached the browser meanwhile.
 */
export class FakeSeamlessControl implements SeamlessControl {
  state: SeamlessState | undefined;
  winbind: 'running' | 'stopped' = 'stopped';
  trust: 'ok' | 'fail' | undefined;
  calls: FakeCall[] = [];
  /** Enable's step to fail at (with a detail and a fix), if any. */
  failAt: string | undefined;
  /** Thrown by the next enable() instead of any step. */
  throwOnEnable: Error | undefined;
  /** What doctor() answers (and enable() brings when it fails). */
  report: DoctorReport = doctorReport([...GREEN_CHECKS, PTR_MISSING]);
  readonly #pauses = new Map<string, { resolveReached: () => void; released: Promise<void>; pause: Pause }>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  pauseAfter(stepId: string): Pause {
    let resolveReached = () => {};
    let release = () => {};
    const reached = new Promise<void>((resolve) => (resolveReached = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const pause = { reached, release };
    this.#pauses.set(stepId, { resolveReached, released, pause });
    return pause;
  }

  /** Lets every held operation go on (a test's clean-up: a server waits for the answers it streams). */
  releaseAll(): void {
    for (const { pause } of this.#pauses.values()) pause.release();
  }

  async status(): Promise<SeamlessStatus> {
    this.calls.push({ op: 'status' });
    return {
      availability: { ok: true },
      ...(this.state === undefined
        ? {}
        : {
            state: this.state,
            winbind: this.winbind,
            ...(this.trust === undefined ? {} : { trust: this.trust }),
          }),
    };
  }

  async enable(
    settings: SeamlessSettings,
    password: Buffer,
    onStep: (s: SeamlessStep) => void,
  ): Promise<{ ok: boolean; doctor?: DoctorReport }> {
    this.calls.push({ op: 'enable', settings, password: password.toString('utf8'), buffer: password });
    const thrown = this.throwOnEnable;
    this.throwOnEnable = undefined;
    if (thrown !== undefined) throw thrown;
    for (const step of ENABLE_STEPS) {
      onStep({ ...step, status: 'running' });
      await Promise.resolve();
      if (step.id === this.failAt) {
        onStep({
          ...step,
          status: 'fail',
          detail: 'net ads join: Failed to join domain: failed to lookup DC info for domain',
          fix: 'check that the proxy resolves the domain through the domain controller (resolv.conf)',
        });
        return { ok: false, doctor: this.report };
      }
      onStep({ ...step, status: 'ok', detail: `${step.id} done` });
      await this.#maybePause(step.id);
    }
    this.state = {
      serverVersion: settings.serverVersion,
      domain: settings.domain,
      realm: settings.realm,
      netbios: settings.netbiosDomain,
      adminUser: typed(settings.adminUser),
      proxyFqdn: `proxy.${settings.domain}`,
      machineName: 'PROXY',
      joinedAt: this.#clock.now(),
    };
    this.winbind = 'running';
    this.trust = 'ok';
    // As the real control: the doctor's report of the joined set-up comes with a success too.
    return { ok: true, doctor: this.report };
  }

  async disable(
    admin: { user: string; password: Buffer } | undefined,
    onStep: (s: SeamlessStep) => void,
  ): Promise<{ ok: boolean }> {
    this.calls.push({
      op: 'disable',
      user: admin?.user,
      password: admin?.password.toString('utf8'),
      buffer: admin?.password,
    });
    for (const step of DISABLE_STEPS) {
      if (step.id === 'leave' && admin === undefined) {
        onStep({ ...step, status: 'skipped', detail: 'locally: the computer account remains in the domain' });
        continue;
      }
      onStep({ ...step, status: 'running' });
      await Promise.resolve();
      onStep({ ...step, status: 'ok' });
      await this.#maybePause(step.id);
    }
    this.state = undefined;
    this.winbind = 'stopped';
    this.trust = undefined;
    return { ok: true };
  }

  async doctor(): Promise<DoctorReport> {
    this.calls.push({ op: 'doctor' });
    return this.report;
  }

  /** As the real one: skipped when not joined; winbind running afterwards otherwise. */
  async resume(): Promise<StepOutcome> {
    this.calls.push({ op: 'resume' });
    if (this.state === undefined) return { ok: true, skipped: true, detail: 'not enabled' };
    const was = this.winbind;
    this.winbind = 'running';
    return { ok: true, detail: was === 'running' ? 'winbindd is running' : 'winbindd answers (started)' };
  }

  async #maybePause(stepId: string): Promise<void> {
    const pause = this.#pauses.get(stepId);
    if (pause === undefined) return;
    pause.resolveReached();
    await pause.released;
    this.#pauses.delete(stepId);
  }
}

/** The administrator as typed: `EXAMPLE\admin`, `admin@EXAMPLE.TEST` or `admin`. */
function typed(user: AdminUser): string {
  if (user.form === 'down-level') return `${user.domain ?? ''}\\${user.account}`;
  if (user.form === 'upn') return `${user.account}@${user.domain ?? ''}`;
  return user.account;
}

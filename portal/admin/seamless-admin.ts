/*
 * What the Enable seamless screen needs: the SeamlessControl of lib/seamless/control.ts, which `doorman serve`
 * gets from its root child (lib/seamless/privileged.ts, startPrivilegedSeamless) and tests fake
 * (test/support/fake-seamless-control.ts). Re-exported here so the screen's files name one module of their own.
 */
export type { SeamlessControl, SeamlessStatus, SeamlessStep } from '../../lib/seamless/control.ts';
export type { DoctorReport } from '../../lib/seamless/doctor/report.ts';
export type { SeamlessState } from '../../lib/store/seamless-settings-store.ts';

import { PassThrough } from 'node:stream';
import type { RequestAudit } from '../audit.ts';
import type { Middleware, ParameterizedContext } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import type { DoctorReport } from '../../lib/seamless/doctor/report.ts';
import { seamlessAvailability, type SeamlessAvailability } from '../../lib/seamless/settings.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import { formBody } from '../middleware/form-body.ts';
import { paramsOf, type PortalState } from '../state.ts';
import { checkSessionCsrf, CSRF_FIELD } from './csrf.ts';
import type { DirectoryAdmin } from './directory-admin.ts';
import { html, type Html } from './html.ts';
import type { AdminPaths } from './paths.ts';
import type { SeamlessControl, SeamlessStatus, SeamlessStep } from './seamless-admin.ts';
import {
  DISABLE_FIELDS,
  domainFromBaseDn,
  EMPTY_SEAMLESS_FORM,
  readDisableForm,
  readSeamlessForm,
  SEAMLESS_FIELDS,
  stateToForm,
  type SeamlessFormValues,
} from './seamless-form.ts';
import { adminOf } from './session.ts';
import { seamlessPage, type SeamlessBusy, type SeamlessView } from './views/seamless.ts';
import { doctorPage, doctorReportHtml } from './views/seamless-doctor.ts';
import {
  disabledOutcome,
  disableFailedOutcome,
  enabledOutcome,
  enableFailedOutcome,
} from './views/seamless-outcome.ts';
import { progressPage, StepList } from './views/seamless-progress.ts';

type Ctx = ParameterizedContext<PortalState>;

export interface SeamlessScreenContext {
  paths: AdminPaths;
  clock: Clock;
  log: (line: string) => void;
  /** Loads the admin session (loadAdminSession) and refuses a visitor who is not signed in (requireAdmin). */
  signedIn: Middleware<PortalState>[];
  /** The audit trail (portal/audit.ts). */
  audit: RequestAudit;
}

export interface SeamlessScreenDeps {
  /** Whether a directory is applied, and of which kind: Enable is offered only for an applied Windows domain. */
  directory: DirectoryAdmin;
  /** Join, leave, status, doctor (serve's root child); undefined when serve has none: status only, no forms. */
  control: SeamlessControl | undefined;
}

/** The dialogue: five short fields, the password up to 1 KiB (3 KiB percent-encoded). */
const DIALOGUE_MAX_BYTES = 16 * 1024;

/**
 * The Enable seamless screen under {base}admin/seamless: availability (an applied Windows-domain directory),
 * the status when joined, the dialogue (Enable, or Enable again to repair), the doctor, and Disable. Enable and
 * Disable answer with a page that grows as each step runs (streamed HTML: the CSP allows no script), ending
 * with the outcome and, after a failed Enable, the doctor's report. One change at a time: a second Enable or
 * Disable while one runs is refused (409) rather than queued behind a join that may take seconds.
 *
 * The administrator's password goes from the form to the control as a Buffer, zeroed when the control is done;
 * it is never shown again, logged, or kept. (The form body's own copy is a JS string, which cannot be zeroed: it
 * is dropped with the request.)
 */
export function seamlessScreen(
  route: AddRoute,
  context: SeamlessScreenContext,
  deps: SeamlessScreenDeps,
): void {
  const { paths, signedIn, log, clock } = context;
  const { control, directory } = deps;
  let busy: SeamlessBusy | undefined;
  const who = (ctx: Ctx) => showValue(adminOf(ctx).session.userName);

  /** The screen as it is now, with `parts` (values as typed, an outcome) over what it would show. */
  const page = async (ctx: Ctx, status: number, parts: Partial<SeamlessView>): Promise<void> => {
    const { session } = adminOf(ctx);
    const { availability, suggestedDomain } = availabilityNow(directory);
    // Not while a change runs: the privileged child does one thing at a time, and the page would wait for it.
    const { status: seamless, statusError } = busy === undefined ? await statusNow(control, log) : {};
    const state = seamless?.state;
    let values: SeamlessFormValues = EMPTY_SEAMLESS_FORM;
    if (state !== undefined) values = stateToForm(state);
    else if (suggestedDomain !== undefined) values = { ...values, domain: suggestedDomain };
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = seamlessPage({
      paths,
      user: session.userName,
      csrf: session.csrfToken,
      availability,
      canControl: control !== undefined,
      status: seamless,
      statusError,
      busy,
      values,
      disableUser: state?.adminUser ?? '',
      ...parts,
    });
  };
  const refuse = (ctx: Ctx, message: string) => page(ctx, 409, { outcome: { kind: 'refused', message } });
  /** Why no change may start now, or undefined when one may. */
  const cannotChange = (): string | undefined => {
    if (control === undefined) {
      return 'this web app has no privileged helper (doorman serve was not started as root); run `doorman seamless` as root';
    }
    if (busy !== undefined) {
      return `${busy.what === 'enable' ? 'Enable' : 'Disable'} is already running (started by ${busy.by}); wait for it to finish`;
    }
    return undefined;
  };

  route('/admin/seamless', { GET: [...signedIn, (ctx) => page(ctx, 200, {})] });

  route('/admin/seamless/doctor', {
    GET: [
      ...signedIn,
      async function runDoctor(ctx) {
        const { session } = adminOf(ctx);
        const view = { paths, user: session.userName, csrf: session.csrfToken };
        ctx.type = 'text/html; charset=utf-8';
        if (control === undefined) {
          ctx.status = 409;
          ctx.body = doctorPage({
            ...view,
            error: 'this web app has no privileged helper: run `doorman seamless doctor` as root',
          });
          return;
        }
        try {
          ctx.body = doctorPage({ ...view, report: await control.doctor() });
        } catch (error) {
          ctx.status = 502;
          ctx.body = doctorPage({ ...view, error: failureMessage(error, 'doctor', log) });
        }
      },
    ],
  });

  route('/admin/seamless/enable', {
    POST: [
      ...signedIn,
      formBody({ maxBytes: DIALOGUE_MAX_BYTES, fields: [CSRF_FIELD, ...SEAMLESS_FIELDS] }),
      checkSessionCsrf,
      async function enable(ctx) {
        const refusal = cannotChange();
        if (refusal !== undefined || control === undefined) return refuse(ctx, refusal ?? '');
        const { availability, directoryHost } = availabilityNow(directory);
        if (!availability.ok) return refuse(ctx, `Enable seamless is unavailable: ${availability.reason}`);
        const form = readSeamlessForm(paramsOf(ctx), directoryHost === undefined ? {} : { directoryHost });
        if (!form.ok) {
          return page(ctx, 400, {
            values: form.values,
            outcome: { kind: 'problems', problems: form.problems, passwordTyped: form.passwordTyped },
          });
        }
        const { settings, password } = form;
        const by = who(ctx);
        busy = { what: 'enable', by, since: clock.now() };
        log(
          `admin: ${by} started Enable seamless for ${settings.realm} (version ${settings.serverVersion}, joining as ${showValue(form.values.adminUser)})`,
        );
        const steps = new StepList();
        const progress = streamPage(ctx, {
          title: 'Enable seamless authentication',
          intro: html`<p>
            Joining the proxy to ${settings.domain} (realm ${settings.realm}, NetBIOS name
            ${settings.netbiosDomain}) as ${form.values.adminUser}. Each step is listed as it runs: keep this
            page open.
          </p>`,
        });
        void (async () => {
          let outcome: Html;
          try {
            const result = await control.enable(settings, password, (step) => {
              logStep(log, 'Enable', step);
              progress.write(steps.step(step));
            });
            progress.write(steps.end());
            log(`admin: Enable seamless for ${settings.realm} by ${by}: ${result.ok ? 'done' : 'failed'}`);
            await context.audit.admin(ctx, 'seamless.enabled', { realm: settings.realm, ok: result.ok });
            outcome = result.ok
              ? enabledOutcome(settings.domain, result.doctor)
              : enableFailedOutcome(undefined, await doctorAfter(result.doctor));
          } catch (error) {
            progress.write(steps.end());
            outcome = enableFailedOutcome(
              failureMessage(error, 'Enable seamless', log),
              await doctorAfter(undefined),
            );
          } finally {
            password.fill(0);
            busy = undefined;
          }
          progress.end(outcome);
        })();
      },
    ],
  });

  route('/admin/seamless/disable', {
    POST: [
      ...signedIn,
      formBody({ maxBytes: DIALOGUE_MAX_BYTES, fields: [CSRF_FIELD, ...DISABLE_FIELDS] }),
      checkSessionCsrf,
      async function disable(ctx) {
        const refusal = cannotChange();
        if (refusal !== undefined || control === undefined) return refuse(ctx, refusal ?? '');
        const form = readDisableForm(paramsOf(ctx));
        if (!form.ok) {
          return page(ctx, 400, {
            disableUser: form.adminUser,
            outcome: { kind: 'disable-problems', problems: form.problems, passwordTyped: form.passwordTyped },
          });
        }
        const by = who(ctx);
        busy = { what: 'disable', by, since: clock.now() };
        // The computer account's name, for the words after a local Disable (which leaves it in the domain).
        const { status } = await statusNow(control, log);
        const account =
          status?.state === undefined
            ? 'The proxy’s computer account'
            : `The computer account ${status.state.machineName}$`;
        const leaving = form.admin !== undefined;
        log(
          `admin: ${by} started Disable seamless (${leaving ? `leaving the domain as ${showValue(form.adminUser)}` : 'locally'})`,
        );
        const steps = new StepList();
        const progress = streamPage(ctx, {
          title: 'Disable seamless authentication',
          intro: leaving
            ? html`<p>Leaving the domain as ${form.adminUser}. Each step is listed as it runs.</p>`
            : html`<p>
                Disabling locally: the domain controller is not asked. Each step is listed as it runs.
              </p>`,
        });
        void (async () => {
          let outcome: Html;
          try {
            const result = await control.disable(form.admin, (step) => {
              logStep(log, 'Disable', step);
              progress.write(steps.step(step));
            });
            progress.write(steps.end());
            log(`admin: Disable seamless by ${by}: ${result.ok ? 'done' : 'failed'}`);
            await context.audit.admin(ctx, 'seamless.disabled', { leftDomain: leaving, ok: result.ok });
            outcome = result.ok
              ? disabledOutcome(leaving ? undefined : account)
              : disableFailedOutcome(undefined);
          } catch (error) {
            progress.write(steps.end());
            outcome = disableFailedOutcome(failureMessage(error, 'Disable seamless', log));
          } finally {
            form.admin?.password.fill(0);
            busy = undefined;
          }
          progress.end(outcome);
        })();
      },
    ],
  });

  /** After a failed Enable: the report it brought, else a fresh one (itself possibly failing: then said so). */
  async function doctorAfter(report: DoctorReport | undefined): Promise<Html> {
    if (report === undefined && control !== undefined) {
      try {
        report = await control.doctor();
      } catch (error) {
        return html`<p id="doctor-report">
          The doctor could not run either: ${failureMessage(error, 'doctor', log)}
        </p>`;
      }
    }
    return report === undefined
      ? html``
      : html`<h2>Doctor</h2>
          ${doctorReportHtml(report)}`;
  }

  /**
   * Answer 200 with a body that grows: the page's head now, each write() as it comes, then the outcome and the
   * tail. A client that goes away does not stop the work (a join cut in half helps nobody); writes then go
   * nowhere.
   */
  function streamPage(ctx: Ctx, view: { title: string; intro: Html }) {
    const { session } = adminOf(ctx);
    const { head, tail } = progressPage({ paths, user: session.userName, csrf: session.csrfToken, ...view });
    const body = new PassThrough();
    const write = (chunk: string) => {
      if (chunk !== '' && !body.destroyed && !body.writableEnded) body.write(chunk);
    };
    ctx.status = 200;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = body;
    write(head);
    return {
      write,
      end(outcome: Html) {
        write(outcome.toString());
        write(tail);
        if (!body.destroyed) body.end();
      },
    };
  }
}

/** Whether Enable may be offered, and what the directory settings suggest for the dialogue. */
function availabilityNow(directory: DirectoryAdmin): {
  availability: SeamlessAvailability;
  directoryHost?: string;
  suggestedDomain?: string;
} {
  let current: ReturnType<DirectoryAdmin['current']>;
  try {
    current = directory.current();
  } catch (error) {
    if (!(error instanceof DoormanError)) throw error;
    return {
      availability: {
        ok: false,
        code: 'NO_DIRECTORY',
        reason: `the directory settings cannot be read (${error.message}): apply them again on the Directory service settings screen first`,
      },
    };
  }
  const availability = seamlessAvailability(current);
  if (current === undefined || current.settings.kind !== 'active-directory') return { availability };
  const suggestedDomain = domainFromBaseDn(current.settings.baseDn);
  return {
    availability,
    directoryHost: current.settings.host,
    ...(suggestedDomain === undefined ? {} : { suggestedDomain }),
  };
}

/** The control's status; a failure to read it is shown on the page (and logged), not a 500. */
async function statusNow(
  control: SeamlessControl | undefined,
  log: (line: string) => void,
): Promise<{ status?: SeamlessStatus; statusError?: string }> {
  if (control === undefined) return {};
  try {
    return { status: await control.status() };
  } catch (error) {
    return { statusError: failureMessage(error, 'seamless status', log) };
  }
}

/**
 * What the admin is told of a failure: a DoormanError's message (written for them, never carrying a secret);
 * anything else is ours, logged in full and shown only as a pointer to the log.
 */
function failureMessage(error: unknown, what: string, log: (line: string) => void): string {
  if (error instanceof DoormanError) {
    log(`admin: ${what}: ${error.code}: ${error.message}`);
    return error.message;
  }
  log(
    `admin: ${what}: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  return 'an internal error stopped it; the details are in the server’s log';
}

/** A step's outcome in the log: its id and status (the page has the detail). Running steps are not logged. */
function logStep(log: (line: string) => void, what: string, step: SeamlessStep): void {
  if (step.status === 'running') return;
  log(`admin: ${what} seamless: step ${step.id}: ${step.status}`);
}

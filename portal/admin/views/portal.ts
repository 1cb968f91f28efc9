import {
  MAX_TIMEOUT_MINUTES,
  PORTAL_MODES,
  type DeviceGroup,
  type PortalMode,
  type PortalSettings,
} from '../../../lib/portal/settings.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { type DeviceGroupFormValues } from '../device-group-form.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { PORTAL_FIELDS, type PortalField, type PortalFormValues } from '../portal-form.ts';
import { groupFields, GROUP_LABELS, isGroupField } from './device-group.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';

/** What the last form sent from this screen did; undefined when the page is just shown. */
export type PortalOutcome =
  | { kind: 'saved'; changes: string[] }
  | { kind: 'problems'; problems: readonly FieldProblem[] }
  | { kind: 'cleared'; ended: number }
  | { kind: 'group-problems'; problems: readonly FieldProblem[] }
  | { kind: 'group-added' | 'group-saved' | 'group-removed'; name: string; endedSessions?: number };

export interface PortalView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  values: PortalFormValues;
  /** The server's time zone (the registration clear date is a day there) and today's date in it. */
  timeZone: string;
  today: string;
  /** The shortest idle timeout the store accepts, minutes. */
  leastIdleMinutes: number;
  /** Live sessions the portal made (API sessions not counted). */
  portalSessions: number;
  groups: readonly DeviceGroup[];
  /** The add-a-group form: as typed after a refused add, else empty. */
  newGroup: DeviceGroupFormValues;
  /** Why the stored settings could not be read, if they could not (the form then shows the defaults). */
  unreadable?: string | undefined;
  outcome?: PortalOutcome;
}

export const MODE_LABELS: Readonly<Record<PortalMode, string>> = {
  off: 'Off',
  agreement: 'Usage Agreement Only',
  authentication: 'Authentication',
  registration: 'Device Registration',
};

const MODE_HINTS: Readonly<Record<PortalMode, string>> = {
  off: 'No splash page: intercepted clients browse without signing in, with no user name in the logs.',
  agreement:
    'Accepting the usage policy gives a device web access for its IP address, if it is in an active Device Group.',
  authentication:
    'A directory user name and password tie the device’s IP address to that user until a timeout. Needs a directory applied on the Directory screen.',
  registration:
    'A directory sign-in registers the device’s MAC address to that user until the clear date (same network only). Needs a directory applied on the Directory screen.',
};

/** Each field's label: on the form, and in the list of problems at the top, which names every field at fault. */
export const PORTAL_LABELS: Readonly<Record<PortalField, string>> = {
  mode: 'Mode',
  idleTimeoutMinutes: 'Idle timeout (minutes)',
  hardTimeoutMinutes: 'Hard timeout (minutes)',
  registrationClearDate: 'Registration clear date',
  policyText: 'Usage policy',
  walledHosts: 'Walled garden: host names',
  walledCidrs: 'Walled garden: networks',
};
const PORTAL_FIELD_NAMES: ReadonlySet<string> = new Set(PORTAL_FIELDS);
const isPortalField = (field: string): field is PortalField => PORTAL_FIELD_NAMES.has(field);

export function portalPage(view: PortalView): string {
  const { paths, values, outcome } = view;
  const problems = problemsByField(outcome?.kind === 'problems' ? outcome.problems : []);
  const f = fieldMaker(problems, 'f');
  const groupProblems = problemsByField(outcome?.kind === 'group-problems' ? outcome.problems : []);
  return layout(
    'Captive portal',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'portal' },
    html`<h1>Captive portal</h1>
      ${banner(view, problems.size, groupProblems.size)}
      <form method="post" action="${paths.portal}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        <fieldset ${problems.has('mode') ? html`aria-describedby="f-mode-problem"` : ''}>
          <legend id="f-mode">${PORTAL_LABELS.mode}</legend>
          ${f.problem('mode')}
          ${PORTAL_MODES.map(
            (mode) =>
              html`<div class="choice">
                <input
                  type="radio"
                  id="f-mode-${mode}"
                  name="mode"
                  value="${mode}"
                  aria-describedby="f-mode-${mode}-hint"
                  ${values.mode === mode ? html`checked` : ''}
                />
                <label for="f-mode-${mode}">${MODE_LABELS[mode]}</label>
                <p class="hint" id="f-mode-${mode}-hint">${MODE_HINTS[mode]}</p>
              </div>`,
          )}
        </fieldset>
        <fieldset>
          <legend>Timeouts (Authentication and Usage Agreement Only)</legend>
          ${f.text(
            'idleTimeoutMinutes',
            values.idleTimeoutMinutes,
            PORTAL_LABELS.idleTimeoutMinutes,
            `In minutes: a session ends after this long without web traffic. From ${view.leastIdleMinutes} to ${MAX_TIMEOUT_MINUTES}; blank for none.`,
            { inputmode: 'numeric' },
          )}
          ${f.text(
            'hardTimeoutMinutes',
            values.hardTimeoutMinutes,
            PORTAL_LABELS.hardTimeoutMinutes,
            `In minutes: a session ends this long after sign-in, however busy (480 minutes is 8 hours). From 1 to ${MAX_TIMEOUT_MINUTES}; blank for none.`,
            { inputmode: 'numeric' },
          )}
        </fieldset>
        <fieldset>
          <legend>Device Registration</legend>
          ${f.text(
            'registrationClearDate',
            values.registrationClearDate,
            PORTAL_LABELS.registrationClearDate,
            `Every registration is cleared as this day begins (00:00) in the server’s time zone, ${view.timeZone}; today there is ${view.today}. It must lie in the future. Blank: never.`,
            { type: 'date' },
          )}
        </fieldset>
        <fieldset>
          <legend>Usage policy</legend>
          ${f.area(
            'policyText',
            values.policyText,
            PORTAL_LABELS.policyText,
            'Plain text shown on the splash page. Required for Usage Agreement Only; with Authentication and Device Registration, users must tick a box accepting it when it is set.',
            8,
          )}
        </fieldset>
        <fieldset>
          <legend>Walled garden</legend>
          <p class="hint">
            Reachable by devices that have not signed in yet (help pages, the directory’s own sites).
          </p>
          ${f.area(
            'walledHosts',
            values.walledHosts,
            PORTAL_LABELS.walledHosts,
            'One a line: example.com, or *.example.com for every name below it.',
            4,
          )}
          ${f.area(
            'walledCidrs',
            values.walledCidrs,
            PORTAL_LABELS.walledCidrs,
            'One a line: an address or network, IPv4 or IPv6 (192.0.2.0/24, 2001:db8::/32).',
            4,
          )}
        </fieldset>
        <button type="submit">Save settings</button>
      </form>
      <section aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Current sessions</h2>
        <p id="portal-session-count">${sessionCount(view.portalSessions)}</p>
        ${
          outcome?.kind === 'saved'
            ? html`<p class="hint">Use the Clear current sessions button above to end them.</p>`
            : clearForm(view)
        }
      </section>
      <section aria-labelledby="groups-heading">
        <h2 id="groups-heading">Device Groups</h2>
        <p class="hint">
          Named sets of networks. In Usage Agreement Only mode a device gets web access only if its address is
          in an active group; where groups overlap, the first one listed is the device’s group.
        </p>
        ${groupTable(paths, view.groups)}
        <form method="post" action="${paths.deviceGroups}">
          <input type="hidden" name="csrf" value="${view.csrf}" />
          <fieldset>
            <legend>Add a Device Group</legend>
            ${groupFields(groupProblems, view.newGroup)}
          </fieldset>
          <button type="submit">Add group</button>
        </form>
      </section>`,
  );
}

const sessionCount = (n: number): string =>
  n === 1 ? '1 device is signed in through the portal.' : `${n} devices are signed in through the portal.`;

/** The Clear current sessions form: a POST with the session's CSRF token. */
function clearForm(view: PortalView): Html {
  return html`<form method="post" action="${view.paths.clearSessions}">
    <input type="hidden" name="csrf" value="${view.csrf}" />
    <button type="submit" id="clear-sessions">Clear current sessions</button>
    <p class="hint">
      Ends every session the portal made, so each device sees the splash page again. Sessions made through the
      login API stay.
    </p>
  </form>`;
}

function groupTable(paths: AdminPaths, groups: readonly DeviceGroup[]): Html {
  if (groups.length === 0) return html`<p>There are no Device Groups yet.</p>`;
  return html`<table class="groups">
    <caption class="visually-hidden">
      Device Groups, in the order they are matched
    </caption>
    <thead>
      <tr>
        <th scope="col">Name</th>
        <th scope="col">Networks</th>
        <th scope="col">Active</th>
      </tr>
    </thead>
    <tbody>
      ${groups.map(
        (g) =>
          html`<tr>
            <td>
              <a href="${paths.deviceGroup(g.id)}">${g.name}<span class="visually-hidden"> (edit)</span></a>
            </td>
            <td class="networks">${g.cidrs.map((c, i) => (i === 0 ? c : html`<br />${c}`))}</td>
            <td>${g.active ? 'Yes' : 'No'}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function banner(view: PortalView, fieldsAtFault: number, groupFieldsAtFault: number): Html | false {
  const { outcome } = view;
  switch (outcome?.kind) {
    case undefined:
      return (
        view.unreadable !== undefined &&
        html`<div class="banner error" role="alert">
          <p><strong>The stored settings cannot be read:</strong> ${view.unreadable}</p>
          <p>The form shows the defaults: set them again and press Save settings.</p>
        </div>`
      );
    case 'saved':
      return html`<div class="banner ok" role="status" id="portal-notice">
        <p><strong>The settings are saved and in force.</strong></p>
        ${
          outcome.changes.length === 0
            ? html`<p>Nothing changed.</p>`
            : html`<p>What changed:</p>
                <ul>
                  ${outcome.changes.map((c) => html`<li>${c}</li>`)}
                </ul>`
        }
        <p>
          ${sessionCount(view.portalSessions)} Their sessions were made under the previous settings: new
          timeouts and a new clear date apply to them at once, but a change of mode does not end them. To send
          every device to the splash page again, clear them.
        </p>
        ${clearForm(view)}
      </div>`;
    case 'problems':
      return problemSummary(
        fieldsAtFault,
        'Nothing was saved: the previous settings stay in force.',
        outcome.problems,
        // The mode's link goes to its first radio button: a link to a whole group would not move the focus.
        (field) =>
          isPortalField(field)
            ? {
                id: field === 'mode' ? `f-mode-${PORTAL_MODES[0]}` : `f-${field}`,
                label: PORTAL_LABELS[field],
              }
            : undefined,
      );
    case 'group-problems':
      return problemSummary(groupFieldsAtFault, 'The group was not added.', outcome.problems, (field) =>
        isGroupField(field) ? { id: `g-${field}`, label: GROUP_LABELS[field] } : undefined,
      );
    case 'cleared':
      return html`<div class="banner ok" role="status" id="portal-notice">
        <p>
          <strong
            >${outcome.ended === 1 ? '1 portal session ended' : `${outcome.ended} portal sessions ended`}.</strong
          >
          Those devices see the splash page on their next web request. Sessions made through the login API
          stay.
        </p>
      </div>`;
    case 'group-added':
    case 'group-saved':
    case 'group-removed': {
      const done = { 'group-added': 'added', 'group-saved': 'saved', 'group-removed': 'removed' }[
        outcome.kind
      ];
      return html`<div class="banner ok" role="status" id="portal-notice">
        <p>The Device Group <strong>${outcome.name}</strong> is ${done}.</p>
        ${
          outcome.endedSessions !== undefined &&
          html`<p>
            ${
              outcome.endedSessions === 1
                ? '1 agreement session ended'
                : `${outcome.endedSessions} agreement sessions ended`
            }
            (devices the change no longer admits).
          </p>`
        }
      </div>`;
    }
  }
}

/** "What changed" after a save, one line a field, in words the screen uses. */
export function describeChanges(
  before: PortalSettings,
  after: PortalSettings,
  changed: readonly (keyof PortalSettings)[],
): string[] {
  const minutes = (n: number | null) => (n === null ? 'none' : n === 1 ? '1 minute' : `${n} minutes`);
  const garden = (s: PortalSettings) => {
    const { hosts, cidrs } = s.walledGarden;
    return `${hosts.length} host name${hosts.length === 1 ? '' : 's'}, ${cidrs.length} network${cidrs.length === 1 ? '' : 's'}`;
  };
  return changed.map((key) => {
    switch (key) {
      case 'mode':
        return `Mode: ${MODE_LABELS[before.mode]} → ${MODE_LABELS[after.mode]}`;
      case 'idleTimeoutMinutes':
        return `Idle timeout: ${minutes(before.idleTimeoutMinutes)} → ${minutes(after.idleTimeoutMinutes)}`;
      case 'hardTimeoutMinutes':
        return `Hard timeout: ${minutes(before.hardTimeoutMinutes)} → ${minutes(after.hardTimeoutMinutes)}`;
      case 'registrationClearDate':
        return `Registration clear date: ${before.registrationClearDate ?? 'never'} → ${after.registrationClearDate ?? 'never'}`;
      case 'policyText':
        return before.policyText === ''
          ? 'Usage policy: added'
          : after.policyText === ''
            ? 'Usage policy: removed'
            : 'Usage policy: changed';
      case 'walledGarden':
        return `Walled garden: ${garden(before)} → ${garden(after)}`;
    }
    return key satisfies never;
  });
}

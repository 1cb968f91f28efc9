import { MAX_GROUP_CIDRS, MAX_GROUP_NAME_LENGTH } from '../../../lib/portal/settings.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import {
  DEVICE_GROUP_FIELDS,
  type DeviceGroupField,
  type DeviceGroupFormValues,
} from '../device-group-form.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';

export const GROUP_LABELS: Readonly<Record<DeviceGroupField, string>> = {
  name: 'Name',
  cidrs: 'Networks',
  active: 'Active',
};
const GROUP_FIELD_NAMES: ReadonlySet<string> = new Set(DEVICE_GROUP_FIELDS);
export const isGroupField = (field: string): field is DeviceGroupField => GROUP_FIELD_NAMES.has(field);

/** A Device Group's three fields (ids g-name, g-cidrs, g-active), with their problems. */
export function groupFields(
  problems: ReadonlyMap<string, readonly string[]>,
  values: DeviceGroupFormValues,
): Html {
  const g = fieldMaker(problems, 'g');
  return html`${g.text(
    'name',
    values.name,
    GROUP_LABELS.name,
    `1 to ${MAX_GROUP_NAME_LENGTH} characters, different from every other group’s (case does not count). Usage Agreement Only sessions carry it in the logs as agreement:NAME.`,
  )}
  ${g.area(
    'cidrs',
    values.cidrs,
    GROUP_LABELS.cidrs,
    `One a line: an address or network, IPv4 or IPv6 (10.20.0.0/16, 192.0.2.7, 2001:db8:5::/48); at most ${MAX_GROUP_CIDRS}.`,
    4,
  )}
  ${g.checkbox(
    'active',
    values.active,
    GROUP_LABELS.active,
    'Only an active group gives its devices web access after they accept the policy.',
  )}`;
}

export interface DeviceGroupView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  id: number;
  /** The group's name as stored (the heading and the remove button name it, whatever was typed). */
  name: string;
  values: DeviceGroupFormValues;
  problems?: readonly FieldProblem[];
}

/** A group's edit page: its form, and a separate form that removes it. */
export function deviceGroupPage(view: DeviceGroupView): string {
  const { paths, id, name } = view;
  const problems = problemsByField(view.problems ?? []);
  return layout(
    `Device Group ${name}`,
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'portal' },
    html`<h1>Device Group “${name}”</h1>
      <p><a href="${paths.portal}">Back to the captive portal</a></p>
      ${
        view.problems !== undefined &&
        view.problems.length > 0 &&
        problemSummary(problems.size, 'Nothing was changed.', view.problems, (field) =>
          isGroupField(field) ? { id: `g-${field}`, label: GROUP_LABELS[field] } : undefined,
        )
      }
      <form method="post" action="${paths.deviceGroup(id)}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        <fieldset>
          <legend>Edit the group</legend>
          ${groupFields(problems, view.values)}
        </fieldset>
        <button type="submit">Save group</button>
      </form>
      <form method="post" action="${paths.removeDeviceGroup(id)}" class="danger-zone">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        <p class="hint">To keep the group but stop it counting, untick Active and save instead.</p>
        <button type="submit" class="danger">Remove the group “${name}”</button>
      </form>`,
  );
}

import type { DeviceGroup } from '../../lib/portal/settings.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';
import { linesOf, problemsAtLines, type Lines } from './lines.ts';

/** The Device Group form: a name, the networks one a line, and whether the group is active. */
export const DEVICE_GROUP_FIELDS = ['name', 'cidrs', 'active'] as const;
export type DeviceGroupField = (typeof DEVICE_GROUP_FIELDS)[number];

export interface DeviceGroupFormValues {
  name: string;
  cidrs: string;
  active: boolean;
}

/** A new group's form: active, as `doorman device-group add` makes it. */
export const EMPTY_GROUP_FORM: DeviceGroupFormValues = { name: '', cidrs: '', active: true };

export function groupToForm(group: DeviceGroup): DeviceGroupFormValues {
  return { name: group.name, cidrs: group.cidrs.join('\n'), active: group.active };
}

export interface SubmittedGroupForm {
  values: DeviceGroupFormValues;
  /** For DeviceGroupStore.create / update, which check every field. */
  input: { name: string; cidrs: string[]; active: boolean };
  cidrs: Lines;
}

/** Read the posted form. An unticked checkbox is not sent at all: absent means inactive. */
export function readDeviceGroupForm(params: ReadonlyMap<string, string>): SubmittedGroupForm {
  const values: DeviceGroupFormValues = {
    name: (params.get('name') ?? '').trim(),
    cidrs: (params.get('cidrs') ?? '').replace(/\r\n?/g, '\n'),
    active: params.has('active'),
  };
  const cidrs = linesOf(values.cidrs);
  return { values, input: { name: values.name, cidrs: cidrs.entries, active: values.active }, cidrs };
}

/** The store's problems as the form's: a problem with entry 3 of `cidrs` names the line it is on. */
export function groupFormProblems(form: SubmittedGroupForm, stored: readonly FieldProblem[]): FieldProblem[] {
  return stored.flatMap((p) => {
    const [head, index] = p.field.split('.');
    return head === 'cidrs' ? problemsAtLines('cidrs', form.cidrs, index, p.message) : [p];
  });
}

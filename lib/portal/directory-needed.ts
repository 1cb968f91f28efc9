import type { PortalMode, PortalProblem } from './settings.ts';

/** The modes whose splash page signs users in against the directory. */
export const MODES_NEEDING_A_DIRECTORY: readonly PortalMode[] = ['authentication', 'registration'];

/**
 * A mode that signs users in needs an applied directory: without one every intercepted device would get a
 * splash page on which nobody can sign in. Refused (not warned about): the save changes nothing, the admin
 * applies a directory first. Undefined when fine.
 */
export function directoryNeededProblem(
  mode: PortalMode,
  directoryApplied: boolean,
): PortalProblem | undefined {
  if (directoryApplied || !MODES_NEEDING_A_DIRECTORY.includes(mode)) return undefined;
  return {
    field: 'mode',
    message:
      `${JSON.stringify(mode)} signs users in with a directory account, and no directory is applied: ` +
      'apply one first (the Directory screen, or doorman directory set)',
  };
}

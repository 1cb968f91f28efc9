/**
 * The directory library's public surface: what helpers, the CLI and the portal use. Everything else in
 * this folder is an implementation detail (and unit-tested on its own).
 */
export { Directory, testSettings, type DirectoryOptions, type SettingsTest } from './directory.ts';
export { DirectoryError, DirectoryErrorCodes, describeAdSubCode, type DirectoryErrorCode } from './errors.ts';
export type { DirectoryGroup } from './groups.ts';
export {
  MAX_LOGIN_NAME_LENGTH,
  normaliseUserName,
  parseLoginName,
  type LoginForm,
  type LoginName,
} from './login-name.ts';
export { PasswordRefusals, type PasswordCheck, type PasswordRefusal } from './password-check.ts';
export {
  directorySettingsSchema,
  DirectoryKinds,
  portOf,
  settingsWarnings,
  Transports,
  validateDirectorySettings,
  type DirectoryKind,
  type DirectorySettings,
  type DirectorySettingsInput,
  type SettingsProblem,
  type Transport,
} from './settings.ts';
export type { DirectoryUser } from './users.ts';

/** Where the admin screens are, as absolute paths under baseUrl's path (for links, forms and redirects). */
export interface AdminPaths {
  /** `{base}admin/`: also the cookies' Path, and the Home screen (is Doorman working?). */
  root: string;
  signIn: string;
  signOut: string;
  directory: string;
  style: string;
  /** The captive portal screen: its settings, current sessions and Device Groups. */
  portal: string;
  /** POST: end every session the portal made (API sessions stay). */
  clearSessions: string;
  /** POST: add a Device Group. */
  deviceGroups: string;
  /** GET: a Device Group's edit page; POST: save it. */
  deviceGroup(id: number): string;
  /** POST: remove a Device Group. */
  removeDeviceGroup(id: number): string;
  /** The Enable seamless screen: availability, status when joined, the dialogue. */
  seamless: string;
  /** POST: enable (or repair); the answer streams each step. */
  seamlessEnable: string;
  /** POST: disable (leave the domain, or locally). */
  seamlessDisable: string;
  /** GET: the doctor's report. */
  seamlessDoctor: string;
  /** GET: the Explain screen (?ip=&mac=: why that client is or is not identified). */
  explain: string;
  /** GET: search the live sessions (query string q, by, match, after). */
  sessions: string;
  /** POST: end one session (its key). */
  endSession: string;
  /** POST: end every session of a user name. */
  endUserSessions: string;
  /** GET: the login API's keys; POST: make one (shown once, on that answer only). */
  apiKeys: string;
  /** POST: revoke a key by name. */
  revokeApiKey: string;
  /** GET: the administrators; POST: add one. */
  admins: string;
  /** POST: set an administrator's new password. */
  adminPassword: string;
  /** POST: remove an administrator (and end their sign-ins). */
  removeAdmin: string;
  /** GET: the audit trail, filtered and paged by the query string. */
  audit: string;
}

export function adminPaths(basePath: string): AdminPaths {
  const root = `${basePath.endsWith('/') ? basePath : `${basePath}/`}admin/`;
  const portal = `${root}portal`;
  const seamless = `${root}seamless`;
  return {
    root,
    signIn: `${root}sign-in`,
    signOut: `${root}sign-out`,
    directory: `${root}directory`,
    style: `${root}style.css`,
    portal,
    clearSessions: `${portal}/clear-sessions`,
    deviceGroups: `${portal}/groups`,
    deviceGroup: (id) => `${portal}/groups/${id}`,
    removeDeviceGroup: (id) => `${portal}/groups/${id}/remove`,
    seamless,
    seamlessEnable: `${seamless}/enable`,
    seamlessDisable: `${seamless}/disable`,
    seamlessDoctor: `${seamless}/doctor`,
    explain: `${root}explain`,
    sessions: `${root}sessions`,
    endSession: `${root}sessions/end`,
    endUserSessions: `${root}sessions/end-user`,
    apiKeys: `${root}api-keys`,
    revokeApiKey: `${root}api-keys/revoke`,
    admins: `${root}admins`,
    adminPassword: `${root}admins/password`,
    removeAdmin: `${root}admins/remove`,
    audit: `${root}audit`,
  };
}

/** Where the admin screens are, as absolute paths under baseUrl's path (for links, forms and redirects). */
export interface AdminPaths {
  /** `{base}admin/`: also the cookies' Path. */
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
  };
}

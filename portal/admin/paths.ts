/** Where the admin screens are, as absolute paths under baseUrl's path (for links, forms and redirects). */
export interface AdminPaths {
  /** `{base}admin/`: also the cookies' Path. */
  root: string;
  signIn: string;
  signOut: string;
  directory: string;
  style: string;
}

export function adminPaths(basePath: string): AdminPaths {
  const root = `${basePath.endsWith('/') ? basePath : `${basePath}/`}admin/`;
  return {
    root,
    signIn: `${root}sign-in`,
    signOut: `${root}sign-out`,
    directory: `${root}directory`,
    style: `${root}style.css`,
  };
}

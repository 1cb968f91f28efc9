import { z } from 'zod';
import type { Clock } from '../clock.ts';
import { describeIssues } from '../config/load.ts';
import { DoormanError } from '../errors.ts';
import { SERVER_VERSIONS, type ServerVersion } from '../seamless/settings.ts';
import type { Db } from './database.ts';
import { SettingsRow } from './settings-row.ts';

/**
 * What Enable seamless left behind once the proxy joined the domain: one JSON row of the `settings` table
 * (name `seamless`, schema 2: no migration needed). No password, ever: the administrator's is used for the
 * join and forgotten, and the machine account's own secret stays in Samba's private directory.
 *
 * Disable writes `null` rather than deleting the row, so the row's version (`updated_at`, which only goes up)
 * keeps moving: authd and `doorman squid-conf` compare versions, and a delete would take the version back to 0,
 * where a later save could land on a number a reader has already seen.
 */
export interface SeamlessState {
  serverVersion: ServerVersion;
  /** The domain's DNS name, lower-case: `example.test`. */
  domain: string;
  /** The Kerberos realm: `EXAMPLE.TEST`. */
  realm: string;
  /** The NetBIOS domain name: `EXAMPLE`. */
  netbios: string;
  /** Who joined (the account name as typed; no password). */
  adminUser: string;
  /** This host's FQDN, lower-case: the HTTP/ service principal's host. */
  proxyFqdn: string;
  /** The computer account without `$`: `PROXY`. */
  machineName: string;
  /** When the join (or the last repair) succeeded, ms since the epoch. */
  joinedAt: number;
}

const ROW = 'seamless';

const text = (max: number) => z.string().min(1).max(max);
export const seamlessStateSchema = z
  .object({
    serverVersion: z.enum(SERVER_VERSIONS),
    domain: text(253),
    realm: text(253),
    netbios: text(15),
    adminUser: text(256),
    proxyFqdn: text(253),
    machineName: text(15),
    joinedAt: z.number().int().nonnegative(),
  })
  .strict();

export class SeamlessSettingsStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #row: SettingsRow;

  constructor(db: Db, options: { clock: Clock }) {
    this.#db = db;
    this.#clock = options.clock;
    this.#row = new SettingsRow(db, ROW);
  }

  /** The joined state; undefined when seamless authentication is disabled or was never enabled. */
  current(): SeamlessState | undefined {
    const row = this.#row.read();
    if (row === undefined) return undefined;
    const value: unknown = JSON.parse(row.value);
    if (value === null) return undefined;
    const checked = seamlessStateSchema.safeParse(value);
    if (!checked.success) {
      throw new DoormanError(
        'CONFIG_INVALID',
        `the stored seamless settings are not valid for this Doorman (${describeIssues(checked.error.issues).join('; ')}): run \`doorman seamless enable\` again`,
      );
    }
    return checked.data;
  }

  /** Changes on every save and clear (0: never saved). One indexed read: pollers call it per batch. */
  version(): number {
    return this.#row.version();
  }

  save(state: SeamlessState): void {
    const checked = seamlessStateSchema.safeParse(state);
    if (!checked.success) {
      throw new DoormanError(
        'INVALID_INPUT',
        `seamless state: ${describeIssues(checked.error.issues).join('; ')}`,
      );
    }
    this.#write(JSON.stringify(checked.data));
  }

  clear(): void {
    if (this.#row.read() === undefined) return;
    this.#write('null');
  }

  #write(value: string): void {
    this.#db.transaction(() => this.#row.write(value, this.#clock.now())).immediate();
  }
}

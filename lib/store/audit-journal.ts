import type { AuditRecord } from '../audit/event.ts';
import type { BatchTail } from './group-commit.ts';

/**
 * The audit rows of one group commit (lib/store/group-commit.ts): each audited write adds its records as it
 * runs; the batch's rows are inserted together at the end of its transaction, so an event exists exactly when
 * the change it describes committed; once committed they are shipped to the sinks in one call; a rolled-back
 * batch's records are dropped (its writes add them again when it is tried again).
 */
export class AuditJournal implements BatchTail {
  readonly #insert: (records: readonly AuditRecord[]) => void;
  readonly #ship: (records: readonly AuditRecord[]) => void;
  #records: AuditRecord[] = [];

  constructor(
    insert: (records: readonly AuditRecord[]) => void,
    ship: (records: readonly AuditRecord[]) => void,
  ) {
    this.#insert = insert;
    this.#ship = ship;
  }

  /** Records of a write that has run, in the transaction under way. */
  add(records: readonly AuditRecord[]): void {
    for (const record of records) this.#records.push(record);
  }

  flush(): void {
    if (this.#records.length > 0) this.#insert(this.#records);
  }

  committed(): void {
    const records = this.#records;
    this.#records = [];
    this.#ship(records);
  }

  discarded(): void {
    this.#records = [];
  }
}

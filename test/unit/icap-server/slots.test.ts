import { describe, expect, it } from 'vitest';
import { sharedSlots, slotCounter as seededCounter, type Slot } from '../../../icap-server/slots.ts';

/** A fixed seed: the addresses below each land in a bucket of their own, every run. */
const slotCounter = () => seededCounter(1234);

const taken = (result: ReturnType<ReturnType<typeof sharedSlots>['take']>): Slot => {
  if ('refused' in result) throw new Error(`refused: ${result.refused}`);
  return result;
};

describe('sharedSlots', () => {
  it('refuses an address over its cap while other addresses take places, up to the total', () => {
    const slots = sharedSlots(slotCounter(), 5, 2);
    taken(slots.take('10.0.0.1'));
    taken(slots.take('10.0.0.1'));
    expect(slots.take('10.0.0.1')).toEqual({ refused: 'address' });
    taken(slots.take('10.0.0.2'));
    taken(slots.take('10.0.0.2'));
    taken(slots.take('10.0.0.3'));
    expect(slots.used).toBe(5);
    expect(slots.take('10.0.0.4')).toEqual({ refused: 'total' });
    // A refusal takes nothing.
    expect(slots.used).toBe(5);
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', () => {
    const slots = sharedSlots(slotCounter(), 100, 1);
    taken(slots.take('2001:db8:1:2::1'));
    expect(slots.take('2001:db8:1:2:ffff::9')).toEqual({ refused: 'address' });
    taken(slots.take('2001:db8:1:3::1'));
    taken(slots.take('10.0.0.1'));
    expect(slots.take('::ffff:10.0.0.1')).toEqual({ refused: 'address' });
  });

  it('gives a place back once, however often give() is called', () => {
    const slots = sharedSlots(slotCounter(), 3, 2);
    const first = taken(slots.take('10.0.0.1'));
    taken(slots.take('10.0.0.1'));
    first.give();
    first.give();
    expect(slots.used).toBe(1);
    taken(slots.take('10.0.0.1'));
    expect(slots.take('10.0.0.1')).toEqual({ refused: 'address' });
  });

  it('counts a proven connection in the total only, once, and gives it back once', () => {
    const slots = sharedSlots(slotCounter(), 3, 1);
    const squid = taken(slots.take('127.0.0.1'));
    expect(slots.take('127.0.0.1')).toEqual({ refused: 'address' });
    squid.prove();
    squid.prove();
    const user = taken(slots.take('127.0.0.1'));
    expect(slots.take('127.0.0.1')).toEqual({ refused: 'address' });
    expect(slots.used).toBe(2);
    squid.give();
    squid.give();
    expect(slots.used).toBe(1);
    // The address's place is still the user's: giving the proven one back freed none of it.
    expect(slots.take('127.0.0.1')).toEqual({ refused: 'address' });
    user.give();
    taken(slots.take('127.0.0.1'));
    // Proving after giving back does nothing.
    user.prove();
    expect(slots.take('127.0.0.1')).toEqual({ refused: 'address' });
  });

  it('holds both limits for every holder of one counter (threads on one port)', () => {
    const counter = slotCounter();
    const one = sharedSlots(counter, 3, 2);
    const other = sharedSlots(counter, 3, 2);
    taken(one.take('10.0.0.1'));
    taken(other.take('10.0.0.1'));
    expect(one.take('10.0.0.1')).toEqual({ refused: 'address' });
    taken(one.take('10.0.0.2'));
    expect(other.take('10.0.0.3')).toEqual({ refused: 'total' });
    expect(other.used).toBe(3);
  });

  it('refuses a counter it did not make', () => {
    expect(() => sharedSlots(new Int32Array(1), 1, 1)).toThrow('sharedSlots: a counter from slotCounter()');
  });
});

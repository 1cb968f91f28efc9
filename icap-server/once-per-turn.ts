/**
 * `read`, called at most once per turn of the event loop: its value is kept until the loop's check phase
 * (setImmediate), when the next caller reads again. The requests answered in one turn share one reading, and
 * whatever changed is seen from the next turn on. A throw is not kept.
 */
export function oncePerTurn<T>(read: () => T): () => T {
  let kept: { value: T } | undefined;
  const forget = () => {
    kept = undefined;
  };
  return () => {
    if (kept === undefined) {
      kept = { value: read() };
      setImmediate(forget);
    }
    return kept.value;
  };
}

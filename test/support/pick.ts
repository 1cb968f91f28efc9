/**
 * The options of `from` named, those given only: for passing optional settings on under
 * exactOptionalPropertyTypes, where `{ x: undefined }` is not `{}`.
 */
export function pick<T extends object, K extends keyof T>(
  from: T,
  ...keys: K[]
): { [P in K]?: Exclude<T[P], undefined> } {
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]])) as {
    [P in K]?: Exclude<T[P], undefined>;
  };
}

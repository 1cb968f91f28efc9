/** Every `<input>`, `<select>` and `<textarea>` of a page that is not hidden has a `<label for>` naming its id. */
export function unlabelled(page: string): string[] {
  const labelled = new Set([...page.matchAll(/<label[^>]*\sfor="([^"]+)"/g)].map((m) => m[1]));
  return [...page.matchAll(/<(input|select|textarea)\b([^>]*)>/g)]
    .filter((m) => !/type="hidden"/.test(m[2] ?? ''))
    .map((m) => /\bid="([^"]+)"/.exec(m[2] ?? '')?.[1] ?? `(no id) ${m[0]}`)
    .filter((id) => !labelled.has(id));
}

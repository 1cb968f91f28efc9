import type { Directory } from '../lib/directory/directory.ts';
import { err, ok, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { askDirectory } from './directory-runtime.ts';

/**
 * Group external ACL: `[channel] user group [group ...]` in (`%un` then the acl's arguments, all
 * URL-escaped by Squid, so names with spaces and non-ASCII arrive whole); `OK` when the user is in at least
 * one of the groups (nested membership included), `ERR` when not or when there is no such user, `BH` when
 * the directory cannot be asked.
 */
export function checkGroups(directory: Directory | undefined, request: HelperRequest): Promise<HelperReply> {
  const [user, ...groups] = request.fields;
  // Squid sends "-" for an empty %un and for an acl without arguments.
  const wanted = groups.filter((g) => g !== '-');
  if (user === undefined || user === '-' || wanted.length === 0) {
    return Promise.resolve(err('expected "user group [group ...]"'));
  }
  return askDirectory(directory, async (d) => {
    for (const group of wanted) {
      if (await d.isMember(user, group)) return ok();
    }
    return err();
  });
}

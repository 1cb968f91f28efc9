/** A real client's NTLMSSP NEGOTIATE (type 1), python3-ntlm-auth's (lab REPORT.md §6.4), base64. */
export const NTLM_TYPE_1 = 'TlRMTVNTUAABAAAAMrCI4gcABwAoAAAABwAHAC8AAAAGAbEdAAAAD0VYQU1QTEVDTElFTlQx';

/** An NTLMSSP AUTHENTICATE (type 3) with empty fields, base64: well formed, but no one's credentials. */
export const NTLM_TYPE_3_EMPTY = (() => {
  const bytes = Buffer.alloc(64);
  bytes.write('NTLMSSP\0', 'latin1');
  bytes.writeUInt32LE(3, 8);
  for (let field = 12; field < 60; field += 8) bytes.writeUInt32LE(64, field + 4);
  bytes.writeUInt32LE(0x00088205, 60);
  return bytes.toString('base64');
})();

/**
 * Where a BH answer sends the admin who reads it in Squid's cache.log: the reason is in authd's own log
 * (`<stateDir>/authd.log`, or the journal under systemd), not in cache.log, which only has this line.
 */
export const SEE_AUTHD_LOG = "see authd's log";

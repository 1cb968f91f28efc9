/**
 * gss-ntlmssp, for a test's SPNEGO-NTLM *client* only (a Windows client without Kerberos wraps NTLM in SPNEGO).
 * scripts/install-system.sh unpacks it in /opt/doorman-test/gss-ntlmssp and never installs it: installed, it
 * would add a GSS mechanism to every program on the machine, Squid's and Doorman's acceptors included. A client
 * selects it with this file in GSS_MECH_CONFIG (with NTLM_USER_FILE, and no Kerberos ticket).
 */
export const GSS_NTLMSSP_MECH_CONFIG = '/opt/doorman-test/gss-ntlmssp/mech.conf';

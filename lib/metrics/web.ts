import { Counter } from 'prom-client';
import { family } from './registry.ts';

/** The login API's refusals of keys, and the splash page's sign-ins, from serve. */
export const SPLASH_OUTCOMES = [
  'signed_in',
  'registered',
  'agreed',
  'invalid',
  'refused',
  'rate_limited',
  'unavailable',
  'mac_not_found',
  'no_device_group',
] as const;
export type SplashOutcome = (typeof SPLASH_OUTCOMES)[number];

const web = family((registry) => {
  const keyFailures = new Counter({
    name: 'doorman_api_key_failures_total',
    help: 'Login API requests refused for a wrong, unknown or revoked API key (401 and 429 together).',
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'doorman_api_rate_limited_total',
    help: 'Login API requests answered 429: a wrong key from an address past api.maxKeyFailures.',
    registers: [registry],
  });
  const splash = new Counter({
    name: 'doorman_splash_sign_ins_total',
    help: 'Sign-ins submitted on the splash page, by outcome (signed_in, registered, agreed; or why not).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of SPLASH_OUTCOMES) splash.inc({ outcome }, 0);
  return { keyFailures, rateLimited, splash };
});

/** A wrong API key; `limited`: answered 429. */
export function countKeyFailure(limited: boolean): void {
  const m = web();
  m.keyFailures.inc();
  if (limited) m.rateLimited.inc();
}

export function countSplash(outcome: SplashOutcome): void {
  web().splash.inc({ outcome });
}

/** The splash outcome of a refused sign-in's HTTP status. */
export function splashRefusal(status: number): SplashOutcome {
  if (status === 400) return 'invalid';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  return 'refused';
}

export function webMetrics(): void {
  web();
}

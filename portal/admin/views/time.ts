import { html, type Html } from '../html.ts';

/**
 * A time on an admin page: UTC to the second, the one spelling every box and every admin reads alike
 * (2026-01-01 09:30:00 UTC), in a <time> element carrying the ISO form.
 */
export function timeOf(ms: number | undefined, none = 'none'): Html {
  if (ms === undefined || !Number.isFinite(ms)) return html`${none}`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`;
}

/** A span of time in words, to the largest unit: "45 s", "12 min", "3 h", "2 days". */
export function durationOf(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}

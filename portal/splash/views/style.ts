/**
 * The splash pages' one stylesheet, served as {base}portal/style.css (the CSP allows styles from 'self' only).
 * Made for a phone first (360 px and up): one column, 16 px text (no zoom on focus in iOS), large targets,
 * a visible focus ring; text and buttons at least 7:1 against their background.
 */
export const SPLASH_STYLE = `
:root { font-family: system-ui, sans-serif; font-size: 100%; line-height: 1.5; color: #1b1b1b; background: #f6f6f4; }
body { margin: 0; }
main { box-sizing: border-box; max-width: 36rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 0 0 0.5rem; }
p { margin: 0 0 0.8rem; }
.message, .notice { padding: 0.7rem 0.9rem; border-radius: 4px; border: 1px solid; background: #fff; }
.message.error { background: #fbeaea; border-color: #a0161b; }
.message.ok { background: #e7f4e8; border-color: #2d7a34; }
.notice { background: #fff4d6; border-color: #8a5a00; }
.device { font-family: ui-monospace, monospace; font-size: 1rem; }
.policy { margin: 0 0 1rem; }
.policy-text { box-sizing: border-box; max-height: 45vh; overflow-y: auto; padding: 0.7rem 0.9rem;
  background: #fff; border: 1px solid #8a8a86; border-radius: 4px; overflow-wrap: anywhere; }
.policy-text p:last-child { margin-bottom: 0; }
.field { margin: 0 0 1rem; }
.field label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[type=text], input[type=password] { box-sizing: border-box; width: 100%; min-height: 2.75rem;
  padding: 0.5rem; font: inherit; font-size: 1rem; border: 1px solid #6b6b67; border-radius: 3px; background: #fff; color: #1b1b1b; }
.agree { display: flex; gap: 0.6rem; align-items: flex-start; margin: 0 0 1rem; }
.agree input { width: 1.4rem; height: 1.4rem; margin: 0.1rem 0 0; flex: none; }
button { font: inherit; font-size: 1rem; min-height: 2.75rem; width: 100%; padding: 0.5rem 1.1rem; border-radius: 3px;
  border: 1px solid #23313f; background: #23313f; color: #fff; cursor: pointer; }
a { color: #0b4f8a; overflow-wrap: anywhere; }
:focus-visible { outline: 3px solid #0b4f8a; outline-offset: 2px; }
@media (min-width: 40rem) { main { padding: 2rem 1rem; } button { width: auto; } }
`;

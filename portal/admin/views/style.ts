/** The admin screens' one stylesheet, served as {base}admin/style.css (the CSP allows styles from 'self' only). */
export const STYLE = `
:root { font-family: system-ui, sans-serif; line-height: 1.4; color: #1b1b1b; background: #f6f6f4; }
body { margin: 0; }
header { display: flex; justify-content: space-between; align-items: center; gap: 1rem;
  padding: 0.6rem 1.5rem; background: #23313f; color: #fff; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
header .brand { margin: 0; }
header form { display: flex; gap: 0.8rem; align-items: center; margin: 0; }
main { max-width: 48rem; margin: 1.5rem auto; padding: 0 1.5rem; }
fieldset { border: 1px solid #c8c8c4; border-radius: 4px; margin: 0 0 1.2rem; padding: 0.8rem 1rem; background: #fff; }
legend { font-weight: 600; padding: 0 0.3rem; }
.field { margin: 0 0 1rem; }
.field label, .field .label { display: block; font-weight: 600; margin-bottom: 0.2rem; }
.choice { display: block; margin: 0.2rem 0; font-weight: normal; }
input[type=text], input[type=password], select, textarea { box-sizing: border-box; width: 100%;
  padding: 0.4rem; font: inherit; border: 1px solid #8a8a86; border-radius: 3px; }
textarea { font-family: ui-monospace, monospace; font-size: 0.85rem; }
.hint { margin: 0.2rem 0 0; color: #555; font-size: 0.9rem; }
.problem { margin: 0.2rem 0 0; color: #a0161b; font-weight: 600; }
.invalid input, .invalid select, .invalid textarea { border-color: #a0161b; border-width: 2px; }
.banner { padding: 0.8rem 1rem; border-radius: 4px; margin: 0 0 1.2rem; border: 1px solid; }
.banner p { margin: 0.2rem 0; }
.banner.ok { background: #e7f4e8; border-color: #2d7a34; }
.banner.error { background: #fbeaea; border-color: #a0161b; }
.warning { margin: 0.3rem 0 0; padding: 0.4rem 0.6rem; background: #fff4d6; border-left: 4px solid #c98a00; }
button { font: inherit; padding: 0.45rem 1.1rem; border-radius: 3px; border: 1px solid #23313f;
  background: #23313f; color: #fff; cursor: pointer; }
header button { background: transparent; border-color: #fff; }
header { flex-wrap: wrap; }
header nav ul { display: flex; flex-wrap: wrap; gap: 0.2rem 1rem; margin: 0; padding: 0; list-style: none; }
header nav a { font-weight: normal; }
header nav a[aria-current=page] { font-weight: 600; text-decoration: underline; text-underline-offset: 0.25em; }
:focus-visible { outline: 3px solid #c98a00; outline-offset: 2px; }
h2 { margin: 2rem 0 0.6rem; font-size: 1.25rem; }
input[type=date] { padding: 0.4rem; font: inherit; border: 1px solid #8a8a86; border-radius: 3px; }
.choice label { font-weight: 600; }
.choice .hint { margin: 0 0 0.6rem 1.7rem; }
.choice input { margin: 0 0.4rem 0 0.1rem; }
table.groups { width: 100%; border-collapse: collapse; background: #fff; margin: 0 0 1.2rem; }
table.groups th, table.groups td { text-align: left; vertical-align: top; padding: 0.4rem 0.5rem;
  border-bottom: 1px solid #c8c8c4; overflow-wrap: break-word; }
table.groups td.networks { overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: 0.85rem; }
.danger-zone { margin-top: 2rem; }
.danger-zone .hint { margin-bottom: 0.6rem; }
button.danger { background: #a0161b; border-color: #a0161b; }
.banner form { margin-top: 0.6rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }
ol.steps { background: #fff; border: 1px solid #c8c8c4; border-radius: 4px; margin: 0 0 1.2rem;
  padding: 0.6rem 1rem 0.6rem 2.4rem; }
ol.steps li { margin: 0.35rem 0; overflow-wrap: anywhere; }
ol.steps .running { color: #555; font-style: italic; }
ol.steps .running:not(:last-child) { display: none; }
.status { font-weight: 600; }
.status.ok { color: #2d7a34; }
.status.fail { color: #a0161b; }
.status.skipped { color: #555; }
ol.steps p, .check p { margin: 0.15rem 0; overflow-wrap: anywhere; }
ul.checks, ol.checks { list-style: none; padding: 0; margin: 0 0 1.2rem; }
.check { background: #fff; border: 1px solid #c8c8c4; border-left: 4px solid #8a8a86; border-radius: 3px;
  padding: 0.4rem 0.7rem; margin: 0 0 0.5rem; }
.check.ok { border-left-color: #2d7a34; }
.check.fail { border-left-color: #a0161b; }
.check.note { border-left-color: #c98a00; }
.check .mark { display: inline-block; min-width: 4.2rem; font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 1.2rem;
  padding: 0.6rem 1rem; background: #fff; border: 1px solid #c8c8c4; border-radius: 4px; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
dd.good { color: #2d7a34; }
dd.bad { color: #a0161b; }
code { font-family: ui-monospace, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
main:has(table.sessions) { max-width: 76rem; }
form.search { display: flex; flex-wrap: wrap; gap: 0 1rem; align-items: flex-end; margin: 0 0 1.2rem; }
form.search .field { flex: 1 1 12rem; }
form.search button { margin-bottom: 1rem; }
input[type=search] { box-sizing: border-box; width: 100%; padding: 0.4rem; font: inherit;
  border: 1px solid #8a8a86; border-radius: 3px; }
table.sessions, table.keys { width: 100%; border-collapse: collapse; background: #fff; margin: 0 0 0.8rem; }
table.sessions th, table.sessions td, table.keys th, table.keys td { text-align: left; vertical-align: top;
  padding: 0.4rem 0.5rem; border-bottom: 1px solid #c8c8c4; overflow-wrap: anywhere; }
table.sessions td.key { font-family: ui-monospace, monospace; font-size: 0.9rem; }
td.actions form, table.keys form { display: inline-block; margin: 0 0.3rem 0.3rem 0; }
td.actions button, table.keys button { padding: 0.25rem 0.6rem; font-size: 0.9rem; }
nav.pages { display: flex; gap: 1.5rem; margin: 0 0 1.2rem; }
ul.admins { list-style: none; padding: 0; margin: 0 0 1.2rem; }
li.admin { background: #fff; border: 1px solid #c8c8c4; border-radius: 4px; padding: 0.6rem 1rem; margin: 0 0 0.8rem; }
li.admin h3 { margin: 0.2rem 0; }
li.admin form.remove { margin-top: 0.6rem; }
.check h2 { font-size: 1.05rem; margin: 0.2rem 0; }
#new-key-value { font-family: ui-monospace, monospace; }
@media (max-width: 48rem) {
  table.sessions thead, table.keys thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
    clip-path: inset(50%); }
  table.sessions tr, table.keys tr { display: block; border-bottom: 2px solid #8a8a86; padding: 0.3rem 0; }
  table.sessions td, table.keys td { display: grid; grid-template-columns: 6.5rem 1fr; gap: 0.5rem;
    border: 0; padding: 0.15rem 0.5rem; }
  table.sessions td::before, table.keys td::before { content: attr(data-label); font-weight: 600; }
}
.actions { display: flex; flex-wrap: wrap; gap: 0.6rem; align-items: center; }
main:has(table.audit) { max-width: 72rem; }
.filters fieldset { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 0 1rem; }
.filters legend, .filters .actions { grid-column: 1 / -1; }
table.audit { width: 100%; border-collapse: collapse; background: #fff; margin: 0 0 1.2rem; font-size: 0.9rem; }
table.audit th, table.audit td { text-align: left; vertical-align: top; padding: 0.35rem 0.5rem;
  border-bottom: 1px solid #c8c8c4; overflow-wrap: anywhere; }
table.audit td.detail span { display: block; }
@media (max-width: 40rem) {
  table.audit thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.audit, table.audit tbody, table.audit tr, table.audit td { display: block; }
  table.audit tr { border-bottom: 2px solid #8a8a86; padding: 0.3rem 0; }
  table.audit td { border: 0; padding: 0.1rem 0.5rem; }
  table.audit td::before { content: attr(data-label) ": "; font-weight: 600; }
  table.audit td.detail:empty { display: none; }
}
@media (max-width: 30rem) {
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: 0.3rem; }
  header { padding: 0.6rem 1rem; }
  main { padding: 0 1rem; margin-top: 1rem; }
  fieldset { padding: 0.6rem 0.7rem; }
}
`;

/**
 * The DOM of a diagnostics report, shared by the output renderer and the Problems panel. It
 * says what text/plain says (docs/schema.md): per file a header, one line per problem
 * (severity, `path:line:col`, message, codes, sources; a problem several servers reported is
 * one line), `... and N more`, the servers whose answer is unknown, `fixed` counts, notes.
 * Every string from a server goes in as text, never as HTML.
 */

import { DETAIL_IS_CAUSE } from './schema';
import type { Cached, Diagnostic, FileReport, Report, Unknown, Severity } from './schema';

/** What a click on a location asks for. */
export interface ILocation {
  file: FileReport;
  diagnostic: Diagnostic;
}

export interface IRenderOptions {
  /** The server-relative path to open for a file, or null when it cannot be opened. */
  resolve: (file: FileReport) => string | null;
  /** Open a location (the renderer and the panel open the editor). */
  open: (path: string, location: ILocation) => void;
  /**
   * Put the cursor at a cell's location (`cell [n] line:col`): the cell of the notebook that
   * holds `from` (the renderer), or of the panel's notebook. Without it, not a link.
   */
  openCell?: (location: ILocation, from: HTMLElement) => void;
}

/**
 * `cached 3 min ago` (`, stale` when the file changed since), as text/plain says it; the age
 * counts from when the server answered, not from when the report was made.
 */
export function cachedLabel(cached: Cached, now: number = Date.now()): string {
  const written = Date.parse(cached.written_at);
  const age = Math.max(0, Number.isNaN(written) ? cached.age_s : (now - written) / 1000);
  let ago: string;
  if (age < 60) {
    ago = `${Math.floor(age)} s`;
  } else if (age < 3600) {
    ago = `${Math.floor(age / 60)} min`;
  } else if (age < 2 * 86400) {
    ago = `${Math.floor(age / 3600)} h`;
  } else {
    ago = `${Math.floor(age / 86400)} days`;
  }
  return `cached ${ago} ago${cached.stale ? ', stale' : ''}`;
}

export const LABELS = new Map<string, string>([
  ['error', 'ERROR'],
  ['warning', 'WARN'],
  ['information', 'INFO'],
  ['hint', 'HINT']
]);

const NOUNS: Record<Severity, [string, string]> = {
  error: ['error', 'errors'],
  warning: ['warning', 'warnings'],
  information: ['info message', 'info messages'],
  hint: ['hint', 'hints']
};

const ORDER: Severity[] = ['error', 'warning', 'information', 'hint'];

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Diagnostics grouped as text/plain shows them: one problem (row) per line. */
export function problemRows(diagnostics: Diagnostic[]): Diagnostic[][] {
  const rows: Diagnostic[][] = [];
  const rowOf = new Map<number, Diagnostic[]>();
  diagnostics.forEach((d, index) => {
    const first = d.same_as === undefined ? undefined : rowOf.get(d.same_as);
    if (first) {
      first.push(d);
      rowOf.set(index, first);
    } else {
      const row = [d];
      rows.push(row);
      rowOf.set(index, row);
    }
  });
  return rows;
}

/** `1 error`, `2 errors and 1 warning`, `1 error, 2 warnings and 3 hints`. */
export function countPhrase(severities: Severity[]): string {
  const parts = ORDER.flatMap(severity => {
    const n = severities.filter(s => s === severity).length;
    return n ? [`${n} ${NOUNS[severity][n === 1 ? 0 : 1]}`] : [];
  });
  if (parts.length <= 1) {
    return parts.join('');
  }
  return parts.slice(0, -1).join(', ') + ' and ' + parts[parts.length - 1];
}

/** `fixed 2 errors in shop.py`: one count per problem (`same_as` joins what two servers fixed),
 * when the JSON lists every fixed diagnostic; else the count of diagnostics it gives. */
function fixedLine(file: FileReport): string {
  const rows = problemRows(file.fixed);
  const phrase =
    file.fixed.length === file.fixed_count
      ? countPhrase(rows.map(row => row[0].severity))
      : `${file.fixed_count} ${file.fixed_count === 1 ? 'problem' : 'problems'}`;
  return `fixed ${phrase} in ${file.path}`;
}

/** `UNKNOWN [ty] timed out after 10.0 s: results for this file are incomplete; <hint>` */
export function fileUnknownLine(u: Unknown): string {
  let detail = u.detail ? ` ${u.detail}` : '';
  if (u.detail && DETAIL_IS_CAUSE.has(u.reason)) {
    detail = ` (${u.detail})`;
  }
  const line = `UNKNOWN [${u.server}] ${u.reason}${detail}: results for this file are incomplete`;
  return u.hint ? `${line}; ${u.hint}` : line;
}

/** `UNKNOWN [basedpyright] 24 of 150 files not checked within 10.0 s; <hint>` */
export function reportUnknownLine(u: Unknown): string {
  const line = `UNKNOWN [${u.server}] ${u.detail || u.reason}`;
  return u.hint ? `${line}; ${u.hint}` : line;
}

/** The distinct values, in order, comma-separated. */
export function joinUnique(values: (string | null)[]): string {
  return [...new Set(values.filter((v): v is string => !!v))].join(', ');
}

function renderRow(
  file: FileReport,
  row: Diagnostic[],
  target: string | null,
  options: IRenderOptions
): HTMLElement {
  const first = row[0];
  const node = element('div', `jp-ipylsp-row jp-ipylsp-${first.severity}`);
  node.dataset.line = String(first.line);
  node.dataset.column = String(first.column);
  const inCell = typeof file.cell === 'number';
  // a cell's problems are located as `cell [n] line:col`: the cell is in the notebook already
  const where = inCell
    ? `${file.path} ${first.line}:${first.column}`
    : `${file.path}:${first.line}:${first.column}`;
  let location: HTMLElement;
  const openCell = options.openCell;
  if (inCell && openCell) {
    const button = element('button', 'jp-ipylsp-location jp-ipylsp-cell', where);
    button.type = 'button';
    button.title = `Go to line ${first.line}, column ${first.column} of ${file.path}`;
    button.addEventListener('click', event => {
      event.preventDefault();
      event.stopPropagation();
      openCell({ file, diagnostic: first }, button);
    });
    location = button;
  } else if (inCell) {
    location = element('span', 'jp-ipylsp-location jp-ipylsp-cell', where);
    location.title = `line ${first.line}, column ${first.column} of the cell run as ${file.path}`;
  } else if (target !== null) {
    const button = element('button', 'jp-ipylsp-location', where);
    button.type = 'button';
    button.title = `Open ${target} at line ${first.line}, column ${first.column}`;
    button.addEventListener('click', event => {
      event.preventDefault();
      event.stopPropagation();
      options.open(target, { file, diagnostic: first });
    });
    location = button;
  } else {
    location = element('span', 'jp-ipylsp-location jp-mod-disabled', where);
    location.title = `${file.absolute_path} is outside the Jupyter server's root`;
  }
  const codes = joinUnique(row.map(d => d.code));
  let sources = joinUnique(row.map(d => d.source || d.server));
  if (first.cached) {
    sources = `${sources}, ${cachedLabel(first.cached)}`;
  }
  const parts: HTMLElement[] = [
    element(
      'span',
      'jp-ipylsp-severity',
      LABELS.get(first.severity) ?? first.severity.toUpperCase()
    ),
    location,
    element('span', 'jp-ipylsp-message', first.message)
  ];
  if (codes) {
    parts.push(element('span', 'jp-ipylsp-codes', `[${codes}]`));
  }
  if (sources) {
    parts.push(element('span', 'jp-ipylsp-sources', `(${sources})`));
  }
  parts.forEach((part, i) => {
    if (i) {
      node.appendChild(document.createTextNode(' '));
    }
    node.appendChild(part);
  });
  return node;
}

function renderFile(file: FileReport, options: IRenderOptions): HTMLElement | null {
  const rows = problemRows(file.diagnostics);
  if (!rows.length && !file.unknown.length && !file.omitted && !file.fixed_count) {
    return null; // clean
  }
  const node = element('div', 'jp-ipylsp-file');
  node.dataset.path = file.path;
  if (rows.length || file.unknown.length || file.omitted) {
    const header = element('div', 'jp-ipylsp-file-header');
    header.appendChild(element('span', 'jp-ipylsp-file-path', file.path));
    if (file.servers.length) {
      header.appendChild(document.createTextNode(' '));
      header.appendChild(element('span', 'jp-ipylsp-file-servers', `(${file.servers.join(', ')})`));
    }
    node.appendChild(header);
    const target = options.resolve(file);
    for (const row of rows) {
      node.appendChild(renderRow(file, row, target, options));
    }
    if (file.omitted) {
      node.appendChild(element('div', 'jp-ipylsp-more', `... and ${file.omitted} more`));
    }
    for (const u of file.unknown) {
      node.appendChild(element('div', 'jp-ipylsp-unknown', fileUnknownLine(u)));
    }
  }
  if (file.fixed_count) {
    node.appendChild(element('div', 'jp-ipylsp-fixed', fixedLine(file)));
  }
  return node;
}

/** The report as DOM; `empty` is said when it holds nothing to show. */
export function renderReport(report: Report, options: IRenderOptions, empty = ''): HTMLElement {
  const node = element('div', 'jp-ipylsp-report');
  for (const file of report.files) {
    const block = renderFile(file, options);
    if (block) {
      node.appendChild(block);
    }
  }
  for (const u of report.unknown) {
    node.appendChild(element('div', 'jp-ipylsp-unknown', reportUnknownLine(u)));
  }
  for (const note of report.notes) {
    node.appendChild(element('div', 'jp-ipylsp-note', note));
  }
  if (!node.childElementCount && empty) {
    node.appendChild(element('div', 'jp-ipylsp-empty', empty));
  }
  return node;
}
